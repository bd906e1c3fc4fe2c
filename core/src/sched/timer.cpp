// Per-P timer heaps. See timer.hpp.
#include "timer.hpp"

#include <time.h>

#include "fatal.hpp"
#include "netpoll.hpp"
#include "proc.hpp"
#include "trace.hpp"

namespace nugo::detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;

// 4-ary heap over pp->timers; the caller holds pp->timerslock. Entries carry `when`, so
// sifting compares within the array and touches a timer only to record its new index:
// timers live on goroutine stacks all over memory, and reading them is a cache miss each.
void place(std::vector<TimerEntry>& h, int i, TimerEntry e) {
  h[i] = e;
  e.t->index = i;
}

void sift_up(std::vector<TimerEntry>& h, int i) {
  TimerEntry e = h[i];
  while (i > 0) {
    int parent = (i - 1) / 4;
    if (h[parent].when <= e.when) break;
    place(h, i, h[parent]);
    i = parent;
  }
  place(h, i, e);
}

void sift_down(std::vector<TimerEntry>& h, int i) {
  int n = static_cast<int>(h.size());
  TimerEntry e = h[i];
  for (;;) {
    int first = 4 * i + 1;
    if (first >= n) break;
    int least = first;
    for (int c = first + 1; c < first + 4 && c < n; ++c)
      if (h[c].when < h[least].when) least = c;
    if (e.when <= h[least].when) break;
    place(h, i, h[least]);
    i = least;
  }
  place(h, i, e);
}

void remove_at(P* pp, int i) {
  std::vector<TimerEntry>& h = pp->timers;
  TimerEntry last = h.back();
  h.pop_back();
  if (i < static_cast<int>(h.size())) {
    place(h, i, last);
    sift_down(h, i);
    sift_up(h, last.t->index);
  }
}

void update_timer0(P* pp) {
  pp->timer0when.store(pp->timers.empty() ? 0 : pp->timers.front().when, sc);
}

// A new timer may be earlier than what the M blocked in netpoll waits for: break its wait.
// With nobody blocked there, start an M of the timer's domain that will become the poller if
// nothing else needs it (Go's wakeNetPoller).
void wake_netpoller(Domain* d, std::int64_t when) {
  if (sched->lastpoll.load(sc) == 0) {
    std::int64_t until = sched->poll_until.load(sc);
    if (until == 0 || until > when) netpoll_break();
  } else {
    wakep_nearest_idle(d);  // its node's Ps may all be busy while another node idles
  }
}

}  // namespace

std::int64_t nanotime() {
  if (vtime::on()) return vtime::now();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000ll + ts.tv_nsec;
}

void addtimer(Timer* t) {
  const std::int64_t when = t->when;  // once published, t may fire and be freed at any time
  M* m = getm();
  if (m) m->trace.lent = 0;  // the timers' lock, and maybe a wake-up (trace_end_loan)
  // A thread without a P adds to the first P of the domain it would queue goroutines in.
  P* pp = m && m->p ? m->p : foreign_domain()->ps.front();
  pp->timerslock.lock();
  if (t->pp.load(rlx)) fatal("addtimer: timer already added");
  pp->timers.push_back({when, t});
  sift_up(pp->timers, static_cast<int>(pp->timers.size()) - 1);
  t->pp.store(pp, rlx);
  update_timer0(pp);
  pp->timerslock.unlock();
  wake_netpoller(pp->domain, when);
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

// Due timers are taken off the heap in batches under one lock acquisition, then run without
// it: a burst of 100,000 wake-ups costs a lock per batch, not per timer.
int checktimers(P* pp, std::int64_t now) {
  std::int64_t first = pp->timer0when.load(sc);
  if (first == 0 || first > now) return 0;
  trace_end_loan();  // the timers' lock, and the timers' functions
  constexpr int kBatch = 64;
  struct Due { void (*f)(void*, std::int64_t); void* arg; } due[kBatch];
  int ran = 0;
  for (;;) {
    int n = 0;
    pp->timerslock.lock();
    while (n < kBatch && !pp->timers.empty() && pp->timers.front().when <= now) {
      Timer* t = pp->timers.front().t;
      remove_at(pp, 0);
      due[n++] = {t->f, t->arg};
      t->index = -1;
      t->running.store(true, std::memory_order_relaxed);
      t->pp.store(nullptr, std::memory_order_release);  // from here on t may be freed
    }
    update_timer0(pp);
    pp->timerslock.unlock();
    if (n > 0) traceev(Ev::timer_fire, pp->id, 0, 0, static_cast<std::uint32_t>(n));
    for (int i = 0; i < n; ++i) due[i].f(due[i].arg, now);
    ran += n;
    if (n < kBatch) return ran;
  }
}

std::int64_t nexttimer(const P* pp) { return pp->timer0when.load(sc); }

}  // namespace nugo::detail
