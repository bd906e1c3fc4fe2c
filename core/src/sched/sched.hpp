// Global scheduler state. What Go keeps in `sched` is split in two:
//   Domain (domain.hpp): a group of Ps with its own lock, global run queue, idle P list, idle
//           M list and spinning count. Flat mode has one domain; NUMA mode (numa/) one per
//           node, with the same code.
//   Sched:  what exists once per runtime instance: all Ps, Ms and Gs, the goid generator,
//           the global free lists, the stack pool.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "domain.hpp"
#include "futex.hpp"
#include "g.hpp"
#include "link.hpp"
#include "m.hpp"
#include "nugo/config.hpp"
#include "nugo/topology.hpp"
#include "p.hpp"
#include "plan.hpp"
#include "stack.hpp"

namespace nugo::detail {

struct Sched {
  explicit Sched(const Config& cfg, topo::Topology topology);
  ~Sched();

  // Decided at start, never changed while the instance runs: the configuration, the machine
  // (or the emulated one), and the plan made of them (numa/plan/plan.hpp: the Ps and their
  // domains, the binding, the homes of threads without a P, the distance classes, the NUMA
  // policy as it runs).
  const Config cfg;
  const topo::Topology topology;
  const numa::Plan plan;

  // What runs.
  std::vector<std::unique_ptr<Domain>> domains;  // by id: plan.domains's order
  std::vector<std::unique_ptr<P>> allp;          // by id
  std::FILE* stats_file = nullptr;  // Config::stats_path, opened at start

  Lock mlock;  // allm, freem
  std::vector<M*> allm;   // every M ever made; an M that exited stays here (and on freem)
  std::vector<M*> freem;  // Ms whose thread exited, for newm to reuse
  std::atomic<int> mcount{0};  // Ms with a live thread, readable without mlock
  static constexpr int kMaxMCount = 10000;  // Go's sched.maxmcount

  Lock glock;  // gchunks, the global free-G list, and the foreign threads' chunk
  std::vector<G*> gchunks;  // every G ever allocated, kGChunk per entry (Go's allgs)
  // The memory of the chunks: slabs of kGSlabChunks chunks, each taken by one domain and
  // bound to its node in NUMA mode (base/nodes.hpp), left to the kernel in flat mode.
  struct GSlab { void* mem; std::size_t bytes; };
  std::vector<GSlab> gslabs;
  static constexpr int kGSlabChunks = 64;  // 2 MiB of Gs
  G* gchunk_next = nullptr;
  G* gchunk_end = nullptr;
  std::vector<G*> gfree;        // dead Gs beyond what the Ps cache
  std::atomic<int> ngfree{0};  // gfree.size(), readable without glock

  std::atomic<std::int64_t> goidgen{0};
  std::size_t stack_size = 0;  // usable bytes of every goroutine stack (Domain::stacks)

  // The network poller (netpoll.hpp; Go's sched.lastpoll and sched.pollUntil). lastpoll is
  // when the network was last polled, 0 while an M blocks in netpoll: that M is also the
  // timer sleeper, blocking until poll_until (0: no timer), the earliest timer it knew of.
  // addtimer breaks its wait for an earlier timer (wake_netpoller in timer.cpp).
  std::atomic<std::int64_t> lastpoll{1};
  std::atomic<std::int64_t> poll_until{0};

  // Deadlock detection (checkdead in idle.cpp) stands down once a thread that is not an M has
  // called into the runtime: such a thread may wake a goroutine later. The caller of run()
  // creating the main goroutine does not count (starting_runtime).
  std::atomic<bool> foreign_seen{false};

  std::atomic<bool> stopping{false};
  Note main_done;  // the caller of run() sleeps here
  // Set by the main goroutine as it returns, before it wakes run(): from then on nothing is
  // a deadlock, though every M may go idle before run()'s thread (on a busy machine, after
  // the grace period) gets to set stopping. The fuzzer found that window.
  std::atomic<bool> main_returned{false};
  // When it returned (0: not yet): the end of the run for idle_ns and the virtual clock's
  // elapsed_ns. In virtual time the shutdown's timed waits would otherwise run the clock ahead
  // while run()'s thread, outside virtual time, ends the Ms in real time.
  std::atomic<std::int64_t> main_return_ns{0};
  // In virtual time, the engine's counts at main's return (written before main_return_ns is
  // published, read only after it is seen): the statistics' clock, without the teardown.
  vtime::Report clock_at_return;
  // nanotime(), but never past main's return.
  std::int64_t run_time_now() const {
    const std::int64_t now = nanotime(), end = main_return_ns.load(std::memory_order_relaxed);
    return end != 0 && now > end ? end : now;
  }

  // sysmon (sysmon.cpp): its thread, and its deep sleep while every P is idle. acquirep
  // wakes it when sysmonwait is set.
  std::thread sysmon;
  vtime::Member* sysmon_vmember = nullptr;  // in virtual time, sysmon's record
  std::atomic<bool> sysmon_exit{false};  // set once every M has been joined
  std::atomic<bool> sysmonwait{false};
  Note sysmon_note;
  std::int64_t timeslice_ns = 0;  // cfg.timeslice
  std::int64_t start_ns = 0;      // when the instance was made (schedtrace's clock)
  std::atomic<std::uint64_t> async_preemptions{0};  // goroutines stopped by the signal
  // Goroutines that the signal found in runtime code and that yielded on leaving it
  // (kPreemptAtExit, link.hpp)
  std::atomic<std::uint64_t> exit_preemptions{0};

  G* new_gchunk(Domain* d);  // a chunk of d's node; glock held
};

// proc.cpp
// The running instance (nullptr when no runtime runs). Set by run_main before any M starts;
// Ms use it freely, as run_main joins them all before deleting it. Foreign threads reach it
// through foreign_sched and the foreign_calls count instead (ForeignCall, link.hpp).
extern Sched* sched;
extern std::atomic<Sched*> foreign_sched;
extern std::atomic<int> foreign_calls;
// Set on the thread in run_main while it creates and enqueues the main goroutine. That call
// takes the foreign path but must not set foreign_seen: the first M may already be looking
// for deadlock by the time run_main could clear the flag again.
extern thread_local bool starting_runtime;

// runtime.cpp
// Set in a child of fork() when a runtime instance was running in the parent. The child has
// only the thread that forked: every other M, sysmon and the poller are gone, and any lock
// they held stays held. It may exec or _exit; scheduling anything there is a fatal error
// (forked_child_fatal), checked before any runtime lock is taken: in newg, in mcall (every
// goroutine-to-g0 switch) and where a thread without an M enters the runtime.
extern bool forked_child;
[[noreturn]] void forked_child_fatal(const char* what);

// Inline: the domain a G's home node belongs to, or nullptr (a node without Ps).
inline Domain* home_domain(const G* gp) {
  int d = sched->plan.domain_of_node[gp->home];
  return d >= 0 ? sched->domains[d].get() : nullptr;
}


// Go's forEachG over a list of chunks held still: Sched::gchunks with glock held, a copy taken
// under it, or any list once no M runs. for_each_g (link.hpp) is the locked walk for library
// code.
template <class Fn>
void for_each_g_in(const std::vector<G*>& chunks, Fn&& fn) {
  for (G* chunk : chunks)
    for (G* gp = chunk; gp != chunk + kGChunk; ++gp) fn(gp);
}

// sysmon.cpp
void sysmon_main();

// What the scheduler hands observing (obs/views.hpp; inspect.cpp), taken under its own
// locks: schedtrace's counts (under every domain's lock) and lines, a view of s for the
// statistics, the tracer's setup and its walk over the Ms' slots (under the M list's lock),
// the stacks of the goroutines parked for good into a deadlock report, and the fatal error
// hook that prints the running goroutine's traceback.
struct RunView;
struct SchedCounts;
struct SchedDetail;
struct TraceSetup;
struct TraceSlot;
class WaitingReport;
SchedCounts inspect_counts();
SchedDetail inspect_detail();
RunView run_view(const Sched& s);
TraceSetup inspect_trace_setup();
void for_each_trace_slot(void (*visit)(TraceSlot& slot, void* arg), void* arg);
void capture_waiting_goroutines(M* m, WaitingReport& report);
void print_goroutine_traceback(std::FILE* out) noexcept;

}  // namespace nugo::detail
