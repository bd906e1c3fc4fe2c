// G: a goroutine. See core/README.md for the state machine.
#pragma once

#include <atomic>
#include <cstdint>

#include <cstddef>
#include <type_traits>

#include "fiber.hpp"
#include "link.hpp"  // GHead, WaitReason
#include "nugo/runtime.hpp"
#include "stack.hpp"
#include "vtime.hpp"

namespace nugo::detail {

struct M;

// Go's _Gidle ... _Gdead (a preempted G is simply runnable: nugo has no _Gpreempted, which Go
// needs only to suspend a G for its garbage collector). Transitions happen on the scheduler
// side (g0) except waiting -> runnable, which the waker performs from anywhere (goready).
enum class GStatus : std::uint8_t { idle, runnable, running, syscall, waiting, dead };

const char* to_string(GStatus s);

// Two cache lines: spawning and switching touch little else. Run queues and free lists hold
// pointers to Gs rather than linking through them, so queueing a G does not touch it.
// The closure first (the public runtime.hpp hands a G out as one), then what library code
// owns (GHead, link.hpp: the no-preemption count and the link word), then the scheduler's
// fields, the smallest first so that they fill GHead's tail.
struct alignas(64) G : Closure, GHead {
  std::atomic<GStatus> status{GStatus::idle};
  WaitReason waitreason = WaitReason::none;
  // Locks of the thread (std::mutex, a static's initializer) it held when it last switched
  // out; carried to the thread that resumes it (threadlocks.hpp). Zero while running.
  std::int16_t thread_locks = 0;
  // Home node (an index into the topology's nodes): the node of the P that created it, or
  // go_on's. Runs there count as runs_home (stats.hpp); ready=home and adopt=1 read and
  // write it (numa/README.md). Written by whoever owns the G at the time.
  std::int16_t home = 0;
  fcontext_t ctx = nullptr;  // saved context while switched out
  Stack stack;               // bound at first run (see core/README.md: lazy stacks)
  std::int64_t goid = 0;
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
// head() (link.hpp) finds GHead sizeof(Closure) bytes into a G. The Itanium C++ ABI lays out
// non-virtual bases in order, each after the previous one's data; Closure's data ends at its
// size (its buffer is last and no padding follows), so GHead starts there. Sched::new_gchunk
// checks it on the first G of every chunk it makes.
static_assert(std::is_standard_layout_v<Closure> &&
                  offsetof(Closure, buf) + sizeof(Closure::buf) == sizeof(Closure),
              "Closure must have no tail padding: GHead starts right after it");
static_assert(!std::is_polymorphic_v<G>, "a vtable pointer would move Closure and GHead");
static_assert(sizeof(Closure) % alignof(GHead) == 0, "GHead must follow the Closure directly");

// In virtual time, stamps gp with the time it becomes runnable (vtime/README.md:
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

// Gs are allocated in chunks, never one by one, and never freed while the runtime runs:
// dead ones are recycled through the free lists (gfput/gfget).
inline constexpr int kGChunk = 256;

}  // namespace nugo::detail
