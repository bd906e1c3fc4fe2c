// G: a goroutine. See core/README.md for the state machine.
#pragma once

#include <atomic>
#include <cstdint>

#include "fiber.hpp"
#include "nugo/runtime.hpp"
#include "stack.hpp"
#include "vtime.hpp"

namespace nugo::detail {

struct M;
struct sudog;

// Go's _Gidle ... _Gdead (a preempted G is simply runnable: nugo has no _Gpreempted, which Go
// needs only to suspend a G for its garbage collector). Transitions happen on the scheduler
// side (g0) except waiting -> runnable, which the waker performs from anywhere (goready).
enum class GStatus : std::uint8_t { idle, runnable, running, syscall, waiting, dead };

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

const char* to_string(GStatus s);
const char* to_string(WaitReason r);

// Two cache lines: spawning and switching touch little else. Run queues and free lists hold
// pointers to Gs rather than linking through them, so queueing a G does not touch it.
struct alignas(64) G : Closure {
  fcontext_t ctx = nullptr;  // saved context while switched out
  Stack stack;               // bound at first run (see core/README.md: lazy stacks)
  std::atomic<GStatus> status{GStatus::idle};
  WaitReason waitreason = WaitReason::none;
  // Nonzero while the goroutine runs runtime code on its own stack (NoPreempt, nopreempt.hpp):
  // the preemption signal must not stop it there. Per G, not per M, because a runtime call
  // may park and finish on another M. Written by the G itself, and by the signal handler on
  // the same thread, which may set the top bit (kPreemptAtExit, nopreempt.hpp): yield when the
  // count returns to zero.
  std::uint16_t locks = 0;
  // Locks of the thread (std::mutex, a static's initializer) it held when it last switched
  // out; carried to the thread that resumes it (threadlocks.hpp). Zero while running.
  std::int16_t thread_locks = 0;
  // Home node (an index into the topology's nodes): the node of the P that created it, or
  // go_on's. Runs there count as runs_home (stats.hpp); ready=home and adopt=1 read and
  // write it (numa/README.md). Written by whoever owns the G at the time.
  std::int16_t home = 0;
  std::int64_t goid = 0;
  // One word, two uses. waitlink: wait queues of blocking primitives (WaitGroup), null
  // again before the G is readied. waiting: from the moment a channel operation queues the G
  // until it has left every queue (after its select's third pass), its sudogs, linked by
  // waitnext (Go's gp.waiting), for the teardown to unlink if the G is abandoned, parked or
  // readied but never run again. Tagged with the low bit (a G* is 64-byte aligned).
  union {
    G* waitlink = nullptr;
    std::uintptr_t waiting;
  };
  M* lockedm = nullptr;    // lock_os_thread: the only M that may run this G
  [[no_unique_address]] SanitizerStack san;  // ASan's view of this stack
#if NUGO_VIRTUAL_TIME
  // The virtual time it became runnable at (stamp_runnable): whoever runs it goes on from
  // there at the earliest (execute, vtime::advance_to).
  std::int64_t vready = 0;
  // The P it last ran on, or was made on (-1: none, a foreign thread made it): a run on
  // another P moves its state there, which the cost model charges (execute, charge_moved).
  std::int32_t vp = -1;
#endif
};
#if !NUGO_ASAN && !NUGO_TSAN && !NUGO_VIRTUAL_TIME
static_assert(sizeof(G) == 128, "G should stay two cache lines");
#endif

// In virtual time, stamps gp with the time it becomes runnable (base/README.md, "Virtual time":
// a goroutine readied by a thread whose clock is ahead must not run earlier on another).
inline void stamp_runnable([[maybe_unused]] G* gp) {
#if NUGO_VIRTUAL_TIME
  if (vtime::on()) gp->vready = vtime::stamp();
#endif
}
// ... and whoever runs it goes on from there at the earliest (execute).
inline void run_not_before_ready([[maybe_unused]] G* gp) {
#if NUGO_VIRTUAL_TIME
  if (vtime::on()) vtime::advance_to(gp->vready);
#endif
}

inline void set_waiting(G* gp, sudog* first) {
  gp->waiting = reinterpret_cast<std::uintptr_t>(first) | 1;
}
inline void clear_waiting(G* gp) { gp->waiting = 0; }
// The sudogs of a G between a channel operation's queueing and its end, else null.
inline sudog* waiting_sudogs(const G* gp) {
  std::uintptr_t w = gp->waiting;
  return (w & 1) ? reinterpret_cast<sudog*>(w & ~std::uintptr_t{1}) : nullptr;
}

// Gs are allocated in chunks, never one by one, and never freed while the runtime runs:
// dead ones are recycled through the free lists (gfput/gfget).
inline constexpr int kGChunk = 256;

}  // namespace nugo::detail
