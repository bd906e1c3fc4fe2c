// The scheduler's seam: everything library code (lib/, and nugo::numa's allocator) may ask of
// the scheduler, in one header. It is what Go's runtime gives its packages by linkname
// (sync/runtime.go, internal/poll/fd_poll_runtime.go): park and ready a goroutine, keep the
// signal out of a runtime section, arm a timer, wait on a descriptor, hold the instance from a
// thread without an M, and walk every goroutine at teardown.
//
// lib/ sees no other scheduler header: its include path has base/ and lib/ only, and it
// reaches this one by its relative path. Ms, Ps, domains and Sched stay behind the wall.
// Where each function lives is said beside it.
#pragma once

#include <cstdint>
#include <vector>

#include "futex.hpp"      // spin locks
#include "g.hpp"          // G, its states, WaitReason, the sudogs a G waits on
#include "netpoll.hpp"    // poll descriptors: the network poller's calls
#include "nopreempt.hpp"  // NoPreempt, getg
#include "timer.hpp"      // runtime timers, nanotime

namespace nugo::detail {

// ---- parking and readying (proc.cpp) ----

// Parks the running goroutine: on g0, unlockf(gp, lock) runs once the goroutine is off its
// stack; if it returns false the goroutine resumes at once. Go's gopark.
void gopark(bool (*unlockf)(G*, void*), void* lock, WaitReason reason);
// gopark's unlock function for a spin lock (futex.hpp) guarding a wait list.
inline bool park_unlock_spin(G*, void* lock) {
  spin_unlock(*static_cast<std::atomic<std::uint32_t>*>(lock));
  return true;
}
// Makes a waiting goroutine runnable: on a P onto its run queue (runnext), from a thread
// without a P onto the global queue (with ready=home, onto its home node's pinned queue when
// that is another domain). Go's goready.
void goready(G* gp);
// The running goroutine yields its P to the next runnable one. Go's Gosched.
void gosched();
// Go's goyield: like gosched, but to the tail of the local run queue (a semaphore's handoff).
void goyield();
// A cheap per-M pseudo-random number (Go's cheaprand); from a thread without an M, a
// thread-local generator's.
std::uint32_t fastrand();

// Go's sync_runtime_canSpin: whether a goroutine spinning for a lock at iteration iter may
// expect the holder to release it soon (it runs on another P, and this P has nothing else
// to run). Cheap; only a hint.
bool can_spin(int iter);

// ---- threads without an M (proc.cpp) ----

// A plain thread's hold on the running instance for the time of one call. On an M the
// instance is there for as long as the M runs, and the guard does nothing. On a thread
// without an M it counts itself in, so that run() does not free the instance under the call
// (run_main waits for the count to drain), if an instance runs at all: running() says.
//   Purpose::wake: the thread may wake a goroutine through the instance now or later, so
//                  deadlock detection stands down (Sched::foreign_seen).
//   Purpose::read: it only reads (statistics, a timer that wakes nobody by itself).
class ForeignCall {
 public:
  enum class Purpose { wake, read };
  explicit ForeignCall(Purpose why);
  ~ForeignCall();
  ForeignCall(const ForeignCall&) = delete;
  ForeignCall& operator=(const ForeignCall&) = delete;

  bool running() const { return on_m_ || counted_; }
  // Throws std::logic_error naming what needs a running runtime, unless one runs.
  void require(const char* what) const;

 private:
  bool on_m_;
  bool counted_;
};

// A plain thread that touches nugo objects may wake goroutines later: deadlock detection
// stands down once one has (checkdead). One thread-local load on a goroutine.
void note_foreign_thread_slow();  // proc.cpp: on g0, on an M it does nothing
inline void note_foreign_thread() {
  if (!getg()) note_foreign_thread_slow();
}

// ---- every goroutine (proc.cpp) ----

// Go's forEachG: fn(gp) for every G ever allocated, those idle or dead included (check
// gp->status), under the G allocator's lock. fn must not create goroutines or block. Only
// while an instance exists: on an M, under a ForeignCall, or in an `abandoned` stop hook.
void for_each_g(void (*fn)(G* gp, void* arg), void* arg);

// ---- teardown (runtime.cpp; tearing_down: proc.cpp) ----

// When a stop hook runs, as run() returns (every M joined, every goroutine left abandoned):
//   abandoned: before the instance is freed: the abandoned goroutines' stacks, closures and
//              sudogs still exist (for_each_g may walk them);
//   freed:     after the instance is freed: what their calls held may be released.
enum class StopPhase { abandoned, freed };
// Set on the thread in run_main while it deletes the instance, which destroys the closures of
// abandoned goroutines: sockets they own are closed although their calls never return.
extern thread_local bool tearing_down;
inline constexpr int kMaxStopHooks = 8;
// Registers a hook for every later stop of an instance (at program start, or at the first use
// of what needs it). The scheduler never calls the layers above it by name; they register
// here. At most kMaxStopHooks in all; safe from any thread.
void add_stop_hook(StopPhase when, void (*hook)());

}  // namespace nugo::detail
