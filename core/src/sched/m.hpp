// M: an OS thread. It runs the scheduler on its own thread stack (g0) and switches to
// goroutines from there; every switch goes G -> g0 -> G, as in Go.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "fiber.hpp"
#include "nugo/runtime.hpp"  // NUGO_TLS_IE, NUGO_INLINE_TLS
#include "futex.hpp"
#include "vtime.hpp"
#include "../obs/trace.hpp"  // TraceSlot

namespace nugo::detail {

struct G;
struct P;
struct Domain;

// Cache-line aligned: each M is written by its own thread all the time (fastrand, curg), and
// neighbours allocated back to back would otherwise share lines.
struct alignas(64) M {
  int id = 0;
  std::thread thread;
  Domain* domain = nullptr;
  P* p = nullptr;       // attached P while running Go code
  // The P handed over by startm (or startlockedm) before the wake-up: stored with release
  // after `spinning`, loaded with acquire, so that an M that sees its P also sees how it is to
  // run it, even when it looks after a timed-out sleep (no wake-up to order the two).
  std::atomic<P*> nextp{nullptr};
  G* curg = nullptr;    // the goroutine running on this M
  bool spinning = false;
  Note park;            // sleeps here while idle (stopm)
  // In virtual time: the record newm made for this M's next thread (vtime::prepare_member).
  vtime::Member* vmember = nullptr;
  M* schedlink = nullptr;  // idle M list

  fcontext_t g0ctx = nullptr;  // the scheduler's context while a goroutine runs
  [[no_unique_address]] SanitizerStack g0san;  // ASan's view of the thread stack

  // gopark's arguments, handed to park_m on g0.
  bool (*waitunlockf)(G*, void*) = nullptr;
  void* waitlock = nullptr;

  std::uint64_t fastrand = 0;
  void* altstack = nullptr;  // alternate signal stack (stack overflow, preemption)

  int tid = 0;                   // gettid(), the target of preemption signals
  std::atomic<bool> signal_pending{false};  // a preemption signal is on its way (preemptM)
  P* oldp = nullptr;             // the P this M left in a system call (entersyscall)
  G* lockedg = nullptr;          // lock_os_thread: the G this M runs exclusively
  std::uint32_t lockedcount = 0;  // its nesting depth (Go's lockedExt)
  bool exiting = false;          // the M leaves after this G (a locked G exited)
  int bound_key = -1;            // Sched::plan.bind_key of the CPU set the thread is bound to
  // The execution tracer's state for this M (obs/trace.hpp), bound to its thread by mstart.
  TraceSlot trace;

  std::uint32_t rand() {  // wyrand
    fastrand += 0xa0761d6478bd642full;
    __uint128_t r = static_cast<__uint128_t>(fastrand) * (fastrand ^ 0xe7037ed1a0b428dbull);
    return static_cast<std::uint32_t>((r >> 64) ^ r);
  }
};

// The first state of random stream `stream` (an M's id; a thread without an M's place in the
// order such threads first drew) of the run seeded with `seed` (Config::seed): splitmix64 of
// both, so that neighbouring streams and seeds start far apart. Never an address: a schedule
// that depended on where the allocator put an M would differ between identical runs.
constexpr std::uint64_t rand_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The M of the calling thread, or nullptr on threads the runtime did not start. Set by
// mstart. Inline where NUGO_INLINE_TLS (nugo/runtime.hpp) says each read goes to the current
// thread's slot. A goroutine that may be preempted can move to another M right after reading
// it: code that uses the M pins the goroutine first (NoPreempt).
inline thread_local M* tls_m NUGO_TLS_IE = nullptr;

#if NUGO_INLINE_TLS
inline M* getm() { return tls_m; }
#else
M* getm();  // proc.cpp, in the no-preemption section
#endif

// The calling M is about to do what can wait or enter the kernel (wake or create an M,
// interrupt the poller, take a lock that others hold for long) before its next go_start: the
// time a go_stop lent that start (Stamp, trace.hpp) would be stale by then.
inline void trace_end_loan() {
  if (M* m = getm()) m->trace.lent = 0;
}

}  // namespace nugo::detail
