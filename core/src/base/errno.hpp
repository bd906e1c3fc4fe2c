// The calling thread's errno, for code that runs on goroutines.
//
// A goroutine may resume on another thread after any call that can park, and each thread has
// its own errno. __errno_location is declared const, so the compiler may reuse its result
// across such a call and read the old thread's errno. These two are calls it cannot see into
// (noipa), placed in the no-preemption text (threadlocks.hpp), so that the preemption signal
// never moves a goroutine between computing the address and the access.
#pragma once

namespace nugo::detail {

int thread_errno();
void set_thread_errno(int e);

}  // namespace nugo::detail
