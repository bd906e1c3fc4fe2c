// Time: sleeping goroutines and Go's time.After, time.Timer and time.Ticker.
//
// All of it rides on the runtime's per-P timer heaps (core/src/sched/timer.hpp): a sleeping goroutine
// holds no thread, and a program whose goroutines all sleep uses no CPU until the next timer.
// Clock: std::chrono::steady_clock (CLOCK_MONOTONIC); in the virtual-time build a clock of its
// own, which is the virtual clock while a run is in virtual time (NUGO_VIRTUAL).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

#include "nugo/chan.hpp"

namespace nugo {

#if NUGO_VIRTUAL_TIME
// The runtime's clock in the virtual-time build (core/src/vtime/README.md):
// during a run with NUGO_VIRTUAL, the virtual clock of the calling thread (in a goroutine, of
// the virtual CPU it runs on); otherwise CLOCK_MONOTONIC, as steady_clock.
struct Clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};
#else
using Clock = std::chrono::steady_clock;
#endif

// A modelled cost in virtual time: during a run with NUGO_VIRTUAL, called from a goroutine,
// adds d to the virtual clock of the CPU it runs on (as the workloads' memory-latency model
// charges a block of remote memory; the statistics count it as "program") and returns true.
// Anywhere else it does nothing and returns false: the caller spends the time itself.
#if NUGO_VIRTUAL_TIME
bool charge_virtual_time(std::chrono::nanoseconds d) noexcept;
#else
inline bool charge_virtual_time(std::chrono::nanoseconds) noexcept { return false; }
#endif

namespace detail {
void sleep_until_ns(std::int64_t when);
std::int64_t to_ns(Clock::time_point t);

// "Never": a deadline this far out is kept but never reached (Go's maxWhen).
inline constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();

// Nanoseconds in d, saturated to [0, kForever]: durations of any representation, up to
// hours::max() and beyond, never overflow (a NaN counts as forever).
template <class Rep, class Period>
std::int64_t saturating_ns(std::chrono::duration<Rep, Period> d) {
  if (d <= d.zero()) return 0;
  // In long double (a 64-bit mantissa: every integer count of nanoseconds below the limit
  // is exact), never through duration_cast, whose intermediate products can overflow for
  // periods like ratio<1, 3> or round a float up to 2^63. At or above the limit: forever.
  const long double ns = std::chrono::duration<long double, std::nano>(d).count();
  if (!(ns < static_cast<long double>(kForever))) return kForever;
  return static_cast<std::int64_t>(ns);
}

// now + d, saturated to kForever (Go's when(d)).
template <class Rep, class Period>
std::int64_t deadline_after(std::chrono::duration<Rep, Period> d) {
  std::int64_t now = to_ns(Clock::now());
  std::int64_t ns = saturating_ns(d);
  return ns >= kForever - now ? kForever : now + ns;
}
struct ChanTimer;
ChanTimer* new_chan_timer(const Chan<Clock::time_point>& c, std::int64_t when, std::int64_t period);
bool stop_chan_timer(ChanTimer* t);
bool reset_chan_timer(ChanTimer* t, std::int64_t when, std::int64_t period);
void release_chan_timer(ChanTimer* t);
}  // namespace detail

// Parks the calling goroutine until t (Go's time.Sleep). Outside a goroutine, sleeps the thread.
inline void sleep_until(Clock::time_point t) { detail::sleep_until_ns(detail::to_ns(t)); }
// Parks it for d (zero or negative: returns at once; beyond ~292 years: forever).
template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  detail::sleep_until_ns(detail::deadline_after(d));
}

// Go's time.Timer: its channel c receives the time once, when the timer fires.
class Timer {
 public:
  template <class Rep, class Period>
  explicit Timer(std::chrono::duration<Rep, Period> d)
      : c(1), t_(detail::new_chan_timer(c, detail::deadline_after(d), 0)) {}
  ~Timer() {
    detail::stop_chan_timer(t_);
    detail::release_chan_timer(t_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Prevents the timer from firing; false if it had already fired or been stopped.
  bool stop() { return detail::stop_chan_timer(t_); }
  // Re-arms it to fire after d; false if it had already fired or been stopped. As in Go, a
  // value from an earlier firing may still be in c.
  template <class Rep, class Period>
  bool reset(std::chrono::duration<Rep, Period> d) {
    return detail::reset_chan_timer(t_, detail::deadline_after(d), 0);
  }

  Chan<Clock::time_point> c;

 private:
  detail::ChanTimer* t_;
};

// Go's time.Ticker: its channel c receives the time every period; ticks a slow reader misses
// are dropped.
class Ticker {
 public:
  template <class Rep, class Period>
  explicit Ticker(std::chrono::duration<Rep, Period> period)
      : c(1), period_(checked(period)),
        t_(detail::new_chan_timer(c, detail::deadline_after(period), period_)) {}
  ~Ticker() {
    detail::stop_chan_timer(t_);
    detail::release_chan_timer(t_);
  }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void stop() { detail::stop_chan_timer(t_); }
  template <class Rep, class Period>
  void reset(std::chrono::duration<Rep, Period> period) {
    period_ = checked(period);
    detail::reset_chan_timer(t_, detail::deadline_after(period), period_);
  }

  Chan<Clock::time_point> c;

 private:
  template <class Rep, class Period>
  static std::int64_t checked(std::chrono::duration<Rep, Period> period) {
    std::int64_t ns = detail::saturating_ns(period);
    if (ns <= 0) throw std::invalid_argument("nugo::Ticker: the period must be positive");
    return ns;
  }
  std::int64_t period_;
  detail::ChanTimer* t_;
};

// Go's time.After: a channel that receives the time once, after d.
template <class Rep, class Period>
Chan<Clock::time_point> after(std::chrono::duration<Rep, Period> d) {
  Chan<Clock::time_point> c(1);
  detail::release_chan_timer(
      detail::new_chan_timer(c, detail::deadline_after(d), 0));  // the heap keeps it
  return c;
}

}  // namespace nugo
