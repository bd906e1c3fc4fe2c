// Runtime timers (Go 1.14+'s design): each P keeps its timers in a 4-ary min-heap ordered by
// `when`. A P runs its own due timers each time it schedules (checktimers); a thief runs
// other Ps' due timers in its last steal round, so timers of idle Ps fire too; and when every
// M would otherwise sleep, one of them, the timer sleeper, sleeps only until the earliest
// timer of any P of the runtime: one M polls for the whole runtime, every domain included
// (earliest_timer and idle_until_p in idle.cpp).
//
// A timer's callback runs on g0 of whichever M runs it, without any lock held, and must not
// block: it readies a goroutine or does a non-blocking channel send. Once the callback has
// been called, the runtime does not touch the Timer again, so the callback may free it (or
// ready the goroutine whose stack holds it).
#pragma once

#include <atomic>
#include <cstdint>

namespace nugo::detail {

struct P;

struct Timer {
  std::int64_t when = 0;  // CLOCK_MONOTONIC nanoseconds
  void (*f)(void* arg, std::int64_t now) = nullptr;
  void* arg = nullptr;
  // Called instead of f for a timer still pending when the runtime stops; may be nullptr.
  void (*discard)(void* arg) = nullptr;
  std::atomic<P*> pp{nullptr};  // the P whose heap holds it, or nullptr
  int index = -1;               // its position there (guarded by that P's timerslock)
  // Set when the timer is popped to run; a callback that wants stop() to wait for it (Go's
  // timerRunning) clears it when done. Others ignore it.
  std::atomic<bool> running{false};
};

// A heap entry: the timer's `when` is kept beside the pointer (see timer.cpp).
struct TimerEntry {
  std::int64_t when;
  Timer* t;
};

std::int64_t nanotime();

// Adds t (t->when, f and arg set, not in any heap) to the current P's heap, or P0's from a
// foreign thread, and makes sure some M will wake up for it.
void addtimer(Timer* t);
// Removes t from its heap; false if it was not in one (already fired, or never added).
bool deltimer(Timer* t);
// Runs pp's timers that are due at `now`. Returns how many ran.
int checktimers(P* pp, std::int64_t now);
// The earliest `when` among pp's timers, or 0 if none.
std::int64_t nexttimer(const P* pp);

}  // namespace nugo::detail
