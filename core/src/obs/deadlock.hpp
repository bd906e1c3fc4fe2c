// Go's report of a deadlock ("all goroutines are asleep"): the goroutines and where they wait.
#pragma once

namespace nugo::detail {

struct M;

// Every waiting goroutine with where it waits, as Go's traceback shows it, but folded: the
// goroutines waiting for the same reason at the same place are one entry with their count
// (a thousand workers blocked on one channel are one entry, not a thousand), on stderr.
// For checkdead (sched/idle.cpp), from M m's g0 with the G allocator's lock held, just
// before the process ends: each goroutine's stack is captured where it is parked, which
// leaves it unable to run again.
void report_waiting_goroutines(M* m);

}  // namespace nugo::detail
