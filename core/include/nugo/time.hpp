// Time: sleeping goroutines and Go's time.After, time.Timer and time.Ticker.
//
// All of it rides on the runtime's per-P timer heaps (core/src/timer.hpp): a sleeping goroutine
// holds no thread, and a program whose goroutines all sleep uses no CPU until the next timer.
// Clock: std::chrono::steady_clock (CLOCK_MONOTONIC).
#pragma once

#include <chrono>

#include "nugo/chan.hpp"

namespace nugo {

using Clock = std::chrono::steady_clock;

namespace detail {
void sleep_until_ns(std::int64_t when);
std::int64_t to_ns(Clock::time_point t);
struct ChanTimer;
ChanTimer* new_chan_timer(const Chan<Clock::time_point>& c, std::int64_t when, std::int64_t period);
bool stop_chan_timer(ChanTimer* t);
bool reset_chan_timer(ChanTimer* t, std::int64_t when, std::int64_t period);
void release_chan_timer(ChanTimer* t);
}  // namespace detail

// Parks the calling goroutine until t (Go's time.Sleep). Outside a goroutine, sleeps the thread.
inline void sleep_until(Clock::time_point t) { detail::sleep_until_ns(detail::to_ns(t)); }
template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
}

// Go's time.Timer: its channel c receives the time once, when the timer fires.
class Timer {
 public:
  template <class Rep, class Period>
  explicit Timer(std::chrono::duration<Rep, Period> d)
      : c(1), t_(detail::new_chan_timer(c, detail::to_ns(Clock::now() + d), 0)) {}
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
    return detail::reset_chan_timer(t_, detail::to_ns(Clock::now() + d), 0);
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
        t_(detail::new_chan_timer(c, detail::to_ns(Clock::now() + period), period_)) {}
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
    detail::reset_chan_timer(t_, detail::to_ns(Clock::now() + period), period_);
  }

  Chan<Clock::time_point> c;

 private:
  template <class Rep, class Period>
  static std::int64_t checked(std::chrono::duration<Rep, Period> period) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(period).count();
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
      detail::new_chan_timer(c, detail::to_ns(Clock::now() + d), 0));  // the heap keeps it
  return c;
}

}  // namespace nugo
