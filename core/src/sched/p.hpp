// P: a logical processor. Holds what a running M needs without taking a lock: the local run
// queue, runnext, the goid cache, and caches of free Gs and stacks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "g.hpp"
#include "nugo/config.hpp"
#include "futex.hpp"
#include "../obs/stats.hpp"
#include "stack.hpp"
#include "timer.hpp"

namespace nugo::detail {

struct M;
struct Domain;

enum class PStatus : std::uint8_t { idle, running, syscall };

inline constexpr std::uint32_t kRunqSize = 256;
inline constexpr int kGoidCacheBatch = 16;   // Go's _GoidCacheBatch
inline constexpr int kGFreeMax = 64;         // gfput: above this, move half to the global list
inline constexpr int kGFreeRefill = 32;      // gfget: refill this many from the global list
inline constexpr int kStackCacheMax = 64;     // stackfree: above this, half go to the pool
inline constexpr int kStackCacheRefill = 32;  // stackalloc: take this many from the pool

// Cache-line aligned for the same reason as M.
struct alignas(64) P {
  int id = 0;
  std::atomic<PStatus> status{PStatus::idle};
  Domain* domain = nullptr;
  // The node of this P's PU (an index into the topology's nodes), in every mode: flat mode
  // has no domain per node, but its Ps still sit on nodes, and the statistics say where.
  std::int16_t node = 0;
  std::int16_t stack_pool = 0;  // its domain's id, whose StackPool its stack cache holds
  // The M it is attached to, if running. Written by that M (acquirep, releasep,
  // entersyscall) through atomic_ref, and read so by sysmon and schedtrace.
  M* m = nullptr;
  P* link = nullptr;      // idle P list
  // Schedules that did not inherit a time slice, and system calls: written by the owner
  // only (no read-modify-write), read by sysmon to see that a slice or a syscall goes on.
  std::atomic<std::uint32_t> schedtick{0};
  std::atomic<std::uint32_t> syscalltick{0};
  // Set by sysmon when the current slice is over: the running G is to be preempted, and a G
  // taken from runnext does not inherit the slice. Cleared when a new slice starts.
  std::atomic<bool> preempt{false};
  // Scheduler statistics (stats.hpp): written by the owner only, read by snapshots. Here,
  // beside schedtick, so that counting a run dirties no cache line execute does not already.
  PCounters stats;
  // NUMA mode: since when this P has found no work, in its own node or anywhere (0: it ran a
  // goroutine since it last looked). A thief robs another node only once this is older than
  // NumaPolicy::remote_delay (steal.cpp). Owner only. Beside the counters: execute reads it.
  std::int64_t nowork_since = 0;
  // What sysmon saw last (sysmon.cpp; only sysmon touches it).
  struct SysmonTick {
    std::uint32_t schedtick = 0;
    std::int64_t schedwhen = 0;
    std::uint32_t syscalltick = 0;
    std::int64_t syscallwhen = 0;
    bool preempt_pending = false;  // preempted at this schedtick already (sysmon.cpp)
    std::int64_t retry_at = 0;     // while pending: when sysmon signals again
  } sysmontick;

  // The local run queue: a 256-slot ring with one producer (the owner) and CAS consumers
  // (the owner and thieves), plus runnext. See runq.cpp.
  std::atomic<std::uint32_t> runqhead{0};
  std::atomic<std::uint32_t> runqtail{0};
  std::array<std::atomic<G*>, kRunqSize> runq{};
  std::atomic<G*> runnext{nullptr};

  std::int64_t goidcache = 0;
  std::int64_t goidcacheend = 0;

  // Dead Gs (without stacks), as pointers: recycling them touches no G (core/README.md).
  std::array<G*, kGFreeMax> gfree{};
  int ngfree = 0;
  G* gchunk_next = nullptr;         // never-used Gs of this P's current chunk
  G* gchunk_end = nullptr;
  FreeStack* stackcache = nullptr;  // free stacks (Go keeps these in mcache)
  int nstackcache = 0;

  // Timers (timer.hpp): a 4-ary heap under timerslock; timer0when is the earliest `when`
  // (0: none), readable without the lock.
  Lock timerslock;
  std::vector<TimerEntry> timers;
  std::atomic<std::int64_t> timer0when{0};
};

// Run queue operations, named as in Go's proc.go.
void runqput(P* pp, G* gp, bool next);
struct RunqResult { G* gp; bool inherit_time; };
RunqResult runqget(P* pp);
bool runqempty(const P* pp);
// Whether pp's ring (not runnext) holds a G: what a thief from another domain may take.
bool runq_ring_nonempty(const P* pp);
std::uint32_t runqlen(const P* pp);
// Takes part of victim's ring into pp's: half (Go's), or what NumaPolicy::remote_take says
// for a victim on another node. adopt_node >= 0: the moved Gs get that home (NumaPolicy::adopt).
G* runqsteal(P* pp, P* victim, bool steal_runnext, NumaPolicy::Take take = NumaPolicy::Take::half,
             int adopt_node = -1);

}  // namespace nugo::detail
