// Locks of the thread held by goroutine code, counted so that preemption never stops a
// goroutine that holds one (threadlocks.cpp).
//
// The hazard: a goroutine preempted while it holds a std::mutex (or runs a function-local
// static's initializer) leaves the lock held by its M's thread; the next goroutine on that
// thread that takes the same lock blocks the thread in the kernel, and the owner can never run
// again to release it. Go's runtime never has this problem because its compiler knows where
// locks are held (m.locks); C++ code is not compiled for us, so nugo interposes the lock entry
// points of POSIX threads and of the C++ ABI (static-initializer guards) and counts, per
// thread, the locks held. The preemption signal declines while the count is not zero and
// leaves a note; the unlock that brings the count back to zero then yields at once
// (preempt_point), so a goroutine that holds a lock nearly all the time is still preempted
// within a slice.
//
// The count belongs to the code that took the locks: when a goroutine switches out (mcall),
// its count travels with it and the thread's count is zero for the next goroutine. (Holding a
// std::mutex across a blocking point is still wrong, see core/README.md; a static initializer
// that blocks is fine, and stays unpreemptible on whichever thread it resumes.)
#pragma once

#include <cstdint>

// Functions that must never be interrupted by the preemption signal: the context switch, the
// lock interposers, and thread-local reads where they are out of line (nugo/runtime.hpp). The handler refuses any PC inside this section (preempt.cpp).
// NUGO_NOIPA: the caller may assume nothing about the function from its body (GCC's noipa;
// clang has none, and skips optnone functions when it infers attributes).
#if defined(__clang__)
#define NUGO_NOIPA noinline, optnone
#else
#define NUGO_NOIPA noinline, noipa
#endif
#define NUGO_NOPREEMPT __attribute__((section("nugo_nopreempt_text"), NUGO_NOIPA))

namespace nugo::detail {

struct ThreadLocks {
  std::int32_t held = 0;          // locks this thread holds, as counted by the interposers
  bool preempt_deferred = false;  // the preemption signal declined because of them
};

// initial-exec: read from the preemption signal handler, which may not call __tls_get_addr.
extern thread_local ThreadLocks thread_locks __attribute__((tls_model("initial-exec")));

// The current thread's ThreadLocks, computed afresh (never a cached thread-local address:
// the caller may have moved to another thread).
ThreadLocks& current_thread_locks();

// Text of the no-preemption section.
bool in_nopreempt_section(std::uintptr_t pc);

}  // namespace nugo::detail
