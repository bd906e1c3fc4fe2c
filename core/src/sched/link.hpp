// The scheduler's seam: everything library code (lib/, and nugo::numa's allocator) may ask of
// the scheduler, in one header. It is what Go's runtime gives its packages by linkname
// (sync/runtime.go, internal/poll/fd_poll_runtime.go, time/sleep.go): park and ready a
// goroutine, keep the signal out of a runtime section, arm a timer, wait on a descriptor, hold
// the instance from a thread without an M, and walk every goroutine at teardown.
//
// lib/ sees no other scheduler header: its include path has base/ and lib/ only, it reaches
// this one by its relative path, and this one includes nothing of the scheduler's
// (tests/walls_test.sh checks the closure). A goroutine is an opaque G here, of which library
// code owns one part, GHead: the count that keeps the signal out and one link word. Ms, Ps,
// domains, the G's layout, stacks, the poller's descriptors and the timer heaps stay behind
// the wall. Where each function lives is said beside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>

#include "futex.hpp"          // spin locks
#include "nugo/runtime.hpp"   // Closure; NUGO_TLS_IE, NUGO_INLINE_TLS

namespace nugo::detail {

struct G;  // a goroutine (sched/g.hpp)
struct P;  // a processor (sched/p.hpp): here only as the owner of a timer

// ---- the goroutine as library code sees it ----

// What library code owns of a goroutine: G's second base (sched/g.hpp), right after its
// Closure, so that head() finds it in a G whose layout the library does not see. The
// scheduler never reads the link word.
struct GHead {
  // One word, two uses. waitlink: wait queues of blocking primitives (WaitGroup), null
  // again before the G is readied. waiting: from the moment a channel operation queues the G
  // until it has left every queue (after its select's third pass), its sudogs, linked by
  // waitnext (Go's gp.waiting), for the teardown to unlink if the G is abandoned, parked or
  // readied but never run again. Tagged with the low bit (a G* is 64-byte aligned).
  union {
    G* waitlink = nullptr;
    std::uintptr_t waiting;
  };
  // Nonzero while the goroutine runs runtime code on its own stack (NoPreempt, below): the
  // preemption signal must not stop it there. Per G, not per M, because a runtime call may
  // park and finish on another M. Written by the G itself, and by the signal handler on the
  // same thread, which may set the top bit (kPreemptAtExit): yield when the count returns to
  // zero.
  std::uint16_t locks = 0;
};

// A G's GHead: sizeof(Closure) bytes into it (sched/g.hpp asserts the layout).
inline GHead* head(G* gp) {
  return std::launder(reinterpret_cast<GHead*>(reinterpret_cast<char*>(gp) + sizeof(Closure)));
}

// Why a goroutine is waiting (Go's waitReason): schedtrace, tracebacks and the deadlock
// report print it.
enum class WaitReason : std::uint8_t {
  none,
  waitgroup,
  chan_send,
  chan_recv,
  chan_send_nil,
  chan_recv_nil,
  select,
  select_no_cases,
  sleep,
  mutex,
  rwmutex_read,
  rwmutex_write,
  cond,
  io_wait,
};
const char* to_string(WaitReason r);

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

// ---- keeping the signal out (NoPreempt; preempt.cpp) ----

// GHead::locks's top bit: the preemption signal found this G inside runtime code (locks != 0)
// and declined; the G yields when it leaves the runtime, at the release that brings the
// count to zero (preempt_at_runtime_exit, preempt.cpp), as a Go goroutine does at the next
// function prologue. Set by the signal handler on the G's own thread; a handler that lands
// between the load and the store of a ++/-- loses the bit, never the count (sysmon retries).
inline constexpr std::uint16_t kPreemptAtExit = 0x8000;

// Yields if the slice is still over and nothing forbids it here (gp's locks is the bit alone).
void preempt_at_runtime_exit(G* gp);

inline void acquire_locks(G* gp) {
  ++head(gp)->locks;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // raised before what it protects
}

inline void release_locks(G* gp) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (--head(gp)->locks == kPreemptAtExit) [[unlikely]]
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

// ---- runtime timers (timer.cpp; core/README.md, "Timers") ----

// A timer's callback runs on g0 of whichever M runs it, without any lock held, and must not
// block: it readies a goroutine or does a non-blocking channel send. Once the callback has
// been called, the runtime does not touch the Timer again, so the callback may free it (or
// ready the goroutine whose stack holds it).
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

std::int64_t nanotime();
// Adds t (t->when, f and arg set, not in any heap) to the current P's heap, or P0's from a
// foreign thread, and makes sure some M will wake up for it.
void addtimer(Timer* t);
// Removes t from its heap; false if it was not in one (already fired, or never added).
bool deltimer(Timer* t);

// ---- waiting on a descriptor (netpoll.cpp; core/README.md, "The network poller") ----

struct PollDesc;  // one per registered descriptor; type-stable (netpoll.hpp)
enum class PollResult { ready, closing, timeout, busy };

// Registers fd (non-blocking) with the poller, creating the poller at the first call.
// nullptr and *err = errno on failure.
PollDesc* poll_open(int fd, int* err);
// Deregisters and recycles pd. Call poll_unblock first; nobody may wait on it any more.
void poll_close(PollDesc* pd);
// Parks the calling goroutine until pd is ready for mode ('r' or 'w'), its deadline passes,
// or it is closing. `busy` when another goroutine already waits for the same direction.
PollResult poll_wait(PollDesc* pd, int mode);
// Before an I/O call (Go's pollDesc.prepare): closing, or the deadline for mode passed
// (timeout), or ready to try. A call with a past deadline fails without touching the socket.
PollResult poll_prepare(PollDesc* pd, int mode);
// Sets the deadline for mode ('r', 'w' or 'r' + 'w'): 0 none, else an absolute nanotime().
// A deadline in the past wakes the waiter at once with PollResult::timeout.
void poll_set_deadline(PollDesc* pd, std::int64_t deadline, int mode);
// The deadline for mode ('r' or 'w') as poll_set_deadline left it: 0 none, -1 passed.
std::int64_t poll_deadline(const PollDesc* pd, int mode);
// Marks pd closing, wakes both waiters (PollResult::closing) and deregisters the descriptor
// (still open: the caller closes it afterwards); later waits fail at once.
void poll_unblock(PollDesc* pd);
// A PollDesc for a descriptor the user owns, not registered until a wait arms it; the poller
// is created at the first call.
PollDesc* poll_open_user(int fd);
// Before a wait on a user descriptor: (re-)registers it for the directions waited for,
// edge-triggered, so that a descriptor ready now is reported now. Returns 0 or an errno
// (EBUSY: another goroutine already waits for mode; ECANCELED: it is closing).
int poll_arm_user(PollDesc* pd, int mode);
// After that wait.
void poll_disarm_user(PollDesc* pd, int mode);

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

// Go's forEachG: fn(gp) for every G ever allocated, those idle or dead included, under the G
// allocator's lock. fn must not create goroutines or block. Only while an instance exists: on
// an M, under a ForeignCall, or in an `abandoned` stop hook.
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
