// Sleeping and channel timers (Timer, Ticker, after) over the runtime timers of timer.hpp.
#include <sched.h>

#include <thread>

#include "nugo/time.hpp"
#include "../sched/link.hpp"
#include "vtime.hpp"

namespace nugo::detail {
namespace {

Clock::time_point to_time_point(std::int64_t ns) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

}  // namespace

#if NUGO_VIRTUAL_TIME
}  // namespace nugo::detail
namespace nugo {
Clock::time_point Clock::now() noexcept {
  if (detail::vtime::on()) return time_point(duration(detail::vtime::now()));
  return time_point(std::chrono::duration_cast<duration>(
      std::chrono::steady_clock::now().time_since_epoch()));
}

bool charge_virtual_time(std::chrono::nanoseconds d) noexcept {
  // Not preempted between finding the thread's member and charging it: resumed on another M,
  // the goroutine would charge the clock of the one it left.
  detail::NoPreempt np;
  if (!detail::vtime::on() || !detail::vtime::member()) return false;
  detail::vtime::charge(d.count(), detail::vtime::Cost::program);
  return true;
}
}  // namespace nugo
namespace nugo::detail {
#endif

std::int64_t to_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The timer lives on the sleeping goroutine's stack; it is added only after the goroutine has
// switched away (in gopark's unlock function), so its firing cannot ready a goroutine that is
// still running.
void sleep_until_ns(std::int64_t when) {
  forbid_in_syscall_body("nugo::sleep_for/sleep_until");
  NoPreempt np;
  if (!getg()) {
    std::this_thread::sleep_until(to_time_point(when));
    return;
  }
  if (when <= nanotime()) return;
  Timer t;
  t.when = when;
  t.f = [](void* g, std::int64_t) { goready(static_cast<G*>(g)); };
  t.arg = getg();
  gopark([](G*, void* timer) {
    addtimer(static_cast<Timer*>(timer));
    return true;
  }, &t, WaitReason::sleep);
}

// A timer that sends the time on a channel. References: one for the handle (Timer, Ticker;
// after() drops it at once) and one for as long as the runtime timer is in a heap, handed to
// fire() when it pops. `mu` orders stop and reset against fire's re-arming of a ticker.
struct ChanTimer {
  explicit ChanTimer(const Chan<Clock::time_point>& ch) : c(ch) {}
  detail::Timer t;
  Chan<Clock::time_point> c;
  std::int64_t period = 0;
  bool stopped = false;
  Lock mu;
  std::atomic<long> refs{2};
};

namespace {

void fire(void* arg, std::int64_t now) {
  auto* ct = static_cast<ChanTimer*>(arg);  // we now hold the heap's reference
  ct->mu.lock();
  try {
    ct->c.try_send(to_time_point(now));  // a slow reader misses ticks, as in Go
  } catch (const Panic&) {
    // The user closed the timer's channel: nothing to deliver to.
  }
  // This firing is over before a re-armed ticker can be popped again: once addtimer has
  // published it, another P may pop it and set `running` for the next firing at once, which
  // a later store of ours would hide from stop() (lock_and_dequeue).
  ct->t.running.store(false, std::memory_order_release);
  if (ct->period > 0 && !ct->stopped && !ct->t.pp.load()) {
    std::int64_t next = ct->period >= kForever - ct->t.when ? kForever : ct->t.when + ct->period;
    if (next <= now) next = now + ct->period - (now - ct->t.when) % ct->period;  // behind: skip
    ct->t.when = next;
    ct->refs.fetch_add(1, std::memory_order_relaxed);
    addtimer(&ct->t);
  }
  ct->mu.unlock();
  release_chan_timer(ct);
}

// Takes the timer out of its heap with ct->mu held, and says whether it was there. A firing
// under way is waited for (Go's deltimer spins while the timer is timerRunning): after stop()
// or reset() returns, a firing that had begun has delivered its value, and none is still to
// come (so "if (!t.stop()) drain" works, and a stopped, drained Ticker stays quiet).
//
// The race this closes: another P pops the timer (checktimers: running = true, then pp =
// nullptr, under its timerslock) and calls fire(), which waits for ct->mu that we hold. A
// check of "still queued?" before deltimer could see it queued, deltimer then finds it gone,
// and fire() delivered after stop() had returned. So deltimer decides, and its acquire load
// of pp orders the load of `running` after checktimers' store.
// Returns with ct->mu held, which the caller releases.
bool lock_and_dequeue(ChanTimer* ct) NUGO_ACQUIRE(ct->mu) {
  for (;;) {
    ct->mu.lock();
    if (deltimer(&ct->t)) return true;
    if (!ct->t.running.load(std::memory_order_acquire)) return false;
    // fire() needs mu to finish; it must not re-arm a ticker meanwhile, or a short period
    // could keep us here (reset() sets stopped again after us).
    ct->stopped = true;
    ct->mu.unlock();
    if (getg()) nugo::yield(); else sched_yield();
  }
}

}  // namespace

ChanTimer* new_chan_timer(const Chan<Clock::time_point>& c, std::int64_t when, std::int64_t period) {
  forbid_in_syscall_body(period ? "nugo::Ticker" : "nugo::after or nugo::Timer");
  NoPreempt np;
  auto* ct = new ChanTimer(c);
  ct->period = period;
  ct->t.when = when;
  ct->t.f = fire;
  ct->t.discard = [](void* arg) { release_chan_timer(static_cast<ChanTimer*>(arg)); };
  ct->t.arg = ct;
  addtimer(&ct->t);
  return ct;
}

bool stop_chan_timer(ChanTimer* ct) {
  forbid_in_syscall_body("stopping or destroying a nugo::Timer or nugo::Ticker");
  NoPreempt np;
  bool was_pending = lock_and_dequeue(ct);
  ct->stopped = true;
  if (was_pending) ct->refs.fetch_sub(1, std::memory_order_relaxed);  // the heap's; not the last
  ct->mu.unlock();
  return was_pending;
}

bool reset_chan_timer(ChanTimer* ct, std::int64_t when, std::int64_t period) {
  forbid_in_syscall_body("nugo::Timer::reset or nugo::Ticker::reset");
  NoPreempt np;
  bool was_pending = lock_and_dequeue(ct);
  if (!was_pending) ct->refs.fetch_add(1, std::memory_order_relaxed);  // a new heap reference
  ct->stopped = false;
  ct->period = period;
  ct->t.when = when;
  addtimer(&ct->t);
  ct->mu.unlock();
  return was_pending;
}

void release_chan_timer(ChanTimer* ct) {
  NoPreempt np;
  if (ct->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete ct;
}

}  // namespace nugo::detail
