// Runtime timers (Go 1.14+'s design): each P keeps its timers in a 4-ary min-heap ordered by
// `when`. A P runs its own due timers each time it schedules (checktimers); a thief runs
// other Ps' due timers in its last steal round, so timers of idle Ps fire too; and when every
// M would otherwise sleep, one of them, the timer sleeper, sleeps only until the earliest
// timer of any P of the runtime: one M polls for the whole runtime, every domain included
// (earliest_timer and idle_until_p in idle.cpp).
//
// The Timer record and addtimer/deltimer are library code's (link.hpp); this header is the
// scheduler's side: the heap entries and running the due ones.
#pragma once

#include <cstdint>

#include "link.hpp"  // Timer, addtimer, deltimer, nanotime

namespace nugo::detail {

// A heap entry: the timer's `when` is kept beside the pointer (see timer.cpp).
struct TimerEntry {
  std::int64_t when;
  Timer* t;
};

// Runs pp's timers that are due at `now`. Returns how many ran.
int checktimers(P* pp, std::int64_t now);
// The earliest `when` among pp's timers, or 0 if none.
std::int64_t nexttimer(const P* pp);

}  // namespace nugo::detail
