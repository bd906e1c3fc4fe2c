// Asynchronous preemption (preempt.cpp, preempt_amd64.S): the signal, its handler and the
// trampoline. What keeps it out of the runtime, NoPreempt, is in link.hpp.
#pragma once

#include "link.hpp"  // NoPreempt
#include "nugo/config.hpp"

namespace nugo::detail {

struct M;

// Yields a goroutine whose slice is over, carrying errno to the thread that resumes it.
void yield_preempted();

namespace preempt {

// Per run(): finds the text ranges where a goroutine may be stopped (the program's own code),
// sizes the XSAVE area, and installs the handler for cfg.preempt_signal (chaining any earlier
// handler), unless the run preempts without the signal or its build cannot be made safe.
void init(const Config& cfg);
// When run() is over: the handler leaves later signals alone, and async_on() is false.
void stop();
// Whether this run() preempts by signal (false with asyncpreemptoff, in TSan builds, and when
// init refused it for the program's build, see init).
bool async_on();
// Sends the preemption signal to the thread of m (at most one pending). sysmon only.
void signal_m(M* m);
// Virtual time's pause filter (vtime::start): whether a member interrupted by the quantum's
// signal may wait for its next turn where it is.
bool (*vtime_pause_filter())(const void*);

}  // namespace preempt

}  // namespace nugo::detail
