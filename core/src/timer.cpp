// Per-P timer heaps. See timer.hpp.
#include "timer.hpp"

#include <time.h>

#include "fatal.hpp"
#include "sched.hpp"

namespace nugo::detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;

// 4-ary heap over pp->timers; the caller holds pp->timerslock.
void sift_up(std::vector<Timer*>& h, int i) {
  Timer* t = h[i];
  while (i > 0) {
    int parent = (i - 1) / 4;
    if (h[parent]->when <= t->when) break;
    h[i] = h[parent];
    h[i]->index = i;
    i = parent;
  }
  h[i] = t;
  t->index = i;
}

void sift_down(std::vector<Timer*>& h, int i) {
  int n = static_cast<int>(h.size());
  Timer* t = h[i];
  for (;;) {
    int first = 4 * i + 1;
    if (first >= n) break;
    int least = first;
    for (int c = first + 1; c < first + 4 && c < n; ++c)
      if (h[c]->when < h[least]->when) least = c;
    if (t->when <= h[least]->when) break;
    h[i] = h[least];
    h[i]->index = i;
    i = least;
  }
  h[i] = t;
  t->index = i;
}

void remove_at(P* pp, int i) {
  std::vector<Timer*>& h = pp->timers;
  Timer* last = h.back();
  h.pop_back();
  if (i < static_cast<int>(h.size())) {
    h[i] = last;
    last->index = i;
    sift_down(h, i);
    sift_up(h, last->index);
  }
}

void update_timer0(P* pp) {
  pp->timer0when.store(pp->timers.empty() ? 0 : pp->timers.front()->when, sc);
}

// A new timer may be earlier than anything an idle M is waiting for: wake the timer sleeper,
// or, if there is none, start an M that will become one (Go's wakeNetPoller).
void wake_for_timer(std::int64_t when) {
  if (when >= sched->timer_sleep_until.load(sc)) return;
  if (M* sleeper = sched->timer_sleeper.load(sc))
    sleeper->park.wakeup();
  else
    wakep();
}

}  // namespace

std::int64_t nanotime() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000ll + ts.tv_nsec;
}

void addtimer(Timer* t) {
  M* m = getm();
  P* pp = m && m->p ? m->p : sched->allp.front().get();
  pp->timerslock.lock();
  if (t->pp.load(rlx)) fatal("addtimer: timer already added");
  pp->timers.push_back(t);
  sift_up(pp->timers, static_cast<int>(pp->timers.size()) - 1);
  t->pp.store(pp, rlx);
  update_timer0(pp);
  pp->timerslock.unlock();
  wake_for_timer(t->when);
}

bool deltimer(Timer* t) {
  for (;;) {
    P* pp = t->pp.load(std::memory_order_acquire);
    if (!pp) return false;
    pp->timerslock.lock();
    if (t->pp.load(rlx) == pp) {
      remove_at(pp, t->index);
      t->pp.store(nullptr, rlx);
      t->index = -1;
      update_timer0(pp);
      pp->timerslock.unlock();
      return true;
    }
    pp->timerslock.unlock();  // it fired or moved meanwhile; look again
  }
}

int checktimers(P* pp, std::int64_t now) {
  std::int64_t first = pp->timer0when.load(sc);
  if (first == 0 || first > now) return 0;
  int ran = 0;
  pp->timerslock.lock();
  while (!pp->timers.empty() && pp->timers.front()->when <= now) {
    Timer* t = pp->timers.front();
    remove_at(pp, 0);
    auto f = t->f;
    void* arg = t->arg;
    t->index = -1;
    t->pp.store(nullptr, std::memory_order_release);  // from here on t may be freed
    update_timer0(pp);
    pp->timerslock.unlock();
    f(arg, now);
    ++ran;
    pp->timerslock.lock();
  }
  update_timer0(pp);
  pp->timerslock.unlock();
  return ran;
}

std::int64_t nexttimer(const P* pp) { return pp->timer0when.load(sc); }

}  // namespace nugo::detail
