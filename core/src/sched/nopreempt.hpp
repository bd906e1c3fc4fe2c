// What keeps asynchronous preemption out of runtime code: G::locks, raised by NoPreempt around
// runtime code that runs on a goroutine's stack. Library code (lib/) and the scheduler both
// open these scopes; the signal machinery that honours them is preempt.hpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "g.hpp"
#include "nugo/runtime.hpp"  // NUGO_TLS_IE, NUGO_INLINE_TLS

namespace nugo::detail {

// The goroutine the calling thread runs: set by execute() (proc.cpp) with M::curg, null on
// g0 between goroutines and on threads that are not Ms. A goroutine that moves to another
// thread finds itself there too, so a value read before a switch is still right after it;
// only a stale *address* of the slot would be wrong, and NUGO_TLS_IE (nugo/runtime.hpp) keeps
// the compiler from reusing one. One load, so the preemption signal cannot split it.
inline thread_local G* tls_g NUGO_TLS_IE = nullptr;

#if NUGO_INLINE_TLS
inline G* getg() { return tls_g; }
#else
G* getg();  // proc.cpp, in the no-preemption section
#endif

// G::locks's top bit: the preemption signal found this G inside runtime code (locks != 0)
// and declined; the G yields when it leaves the runtime, at the release that brings the
// count to zero (preempt_at_runtime_exit, preempt.cpp), as a Go goroutine does at the next
// function prologue. Set by the signal handler on the G's own thread; a handler that lands
// between the load and the store of a ++/-- loses the bit, never the count (sysmon retries).
inline constexpr std::uint16_t kPreemptAtExit = 0x8000;

// Yields if the slice is still over and nothing forbids it here (gp->locks is the bit alone).
void preempt_at_runtime_exit(G* gp);

inline void acquire_locks(G* gp) {
  ++gp->locks;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // raised before what it protects
}

inline void release_locks(G* gp) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (--gp->locks == kPreemptAtExit) [[unlikely]]
    preempt_at_runtime_exit(gp);
}

// Runtime code on a goroutine's stack holds locks, caches its M and P, and edits run queues:
// stopped there and resumed on another M, it would corrupt them. Every runtime entry point
// that goroutines call opens a NoPreempt scope; the signal handler then leaves the G alone
// and sysmon tries again a tick later. (Go gets the same from its compiler: the runtime has
// no async safe points.) The count lives in the G, so a scope that parks and resumes on
// another M still closes correctly. On threads that are not running a goroutine it does
// nothing.
class NoPreempt {
 public:
  NoPreempt() : gp_(getg()) {
    if (gp_) acquire_locks(gp_);
  }
  ~NoPreempt() {
    if (gp_) release_locks(gp_);
  }
  NoPreempt(const NoPreempt&) = delete;
  NoPreempt& operator=(const NoPreempt&) = delete;
  G* g() const { return gp_; }  // the goroutine it pins; null on other threads

 private:
  G* gp_;
};

}  // namespace nugo::detail
