// Scheduler statistics: where goroutines ran and what moved between nodes.
//
// Counted on paths the scheduler takes anyway, in plain per-P counters (no atomic
// read-modify-write, no shared cache line) that a snapshot sums. The JSON form is a contract:
// the tests, the tracer's cross-checks, the experiment scripts and the paper read its keys,
// so they stay stable. numa/README.md ("Statistics") defines every counter exactly.
//
//   nugo::Config cfg;  cfg.stats_path = "stats.json";   // or NUGO_STATS=stats.json
//   nugo::run([] { ... }, cfg);
//   nugo::Stats s = nugo::stats();  // the finished run's final counts
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nugo/config.hpp"

namespace nugo {

struct Counters {
  std::uint64_t created = 0;             // goroutines created by goroutines running here
  std::uint64_t runs = 0;                // goroutines switched to (each run counted once)
  std::uint64_t runs_home = 0;           // ... on a P of the goroutine's home node
  std::uint64_t runs_away = 0;           // ... on a P of another node
  std::uint64_t steals_same_node = 0;    // successful run-queue steals from a P of this node
  std::uint64_t steals_remote = 0;       // ... from a P of another node
  std::uint64_t moved_same_node = 0;     // goroutines those steals moved
  std::uint64_t moved_remote = 0;        // goroutines moved across nodes: remote steals and
                                         // takes from another node's global queue
  std::uint64_t globrunq_own = 0;        // takes from the own domain's global queue
  std::uint64_t globrunq_remote = 0;     // takes from another node's global queue
  std::uint64_t wakeups_cross_node = 0;  // this P was woken for work queued on another node
  std::uint64_t preemptions = 0;         // slices ended by sysmon that took effect
  std::uint64_t placed = 0;              // of `created`, go_on's that NUMA mode queued on
                                         // their node (pinned or global queue; 0 in flat mode)
  std::uint64_t placed_remote = 0;       // of `placed`, those placed on another node than
                                         // this P's. With go_on=pinned (the default) each is
                                         // one of moved_remote once its node takes it (a
                                         // placement, not a migration)
  std::int64_t idle_ns = 0;              // time on the idle P list
  // moved_remote and steals_remote split by the distance (distance-matrix value) between
  // the two nodes.
  std::map<int, std::uint64_t> moved_remote_by_distance;
  std::map<int, std::uint64_t> steals_remote_by_distance;

  Counters& operator+=(const Counters& o);
};

struct PStats : Counters {
  int p = 0;
  int node = 0;  // the OS's node number of the P's PU
};

struct NodeStats : Counters {
  int node = 0;             // the OS's node number
  std::vector<int> ps;      // the Ps on this node
  // Goroutines created by threads without a P (the main goroutine, plain threads, Ms inside
  // nugo::syscall) that were queued on this node. Not in `created`, which is per P.
  std::uint64_t created_foreign = 0;
};

// The clock a run's times are on (idle_ns, the trace, nugo::Clock): "real", or "virtual"
// (NUGO_VIRTUAL in a virtual-time build, core/src/vtime/README.md), with that run's parameters
// and what its turns did.
struct ClockStats {
  bool virtual_time = false;
  std::int64_t quantum_ns = 0;   // how far a thread runs ahead while others are due
  std::int64_t wake_ns = 0;      // a futex wake-up's latency, charged to each woken thread
  std::int64_t elapsed_ns = 0;   // virtual time from run()'s start to main's return (or,
                                 // while it runs, the latest turn)
  std::uint64_t turns = 0;       // the turn passed from one thread to another
  std::uint64_t quanta = 0;      // a thread gave up its turn because its quantum was used
  std::uint64_t paused = 0;      // of those, the quantum's signal paused it where it ran
  std::uint64_t timed_out = 0;   // waits that ended at their virtual deadline
  int threads = 0;               // the most threads in virtual time at once (Ms and sysmon)
  int first_turn_threads = 0;    // the threads there were when the first was given a turn
  // Hashes over every turn granted (its thread and clock; the threads alone): equal in two
  // runs exactly when they granted the same turns at the same virtual clocks (the same order).
  std::uint64_t fingerprint = 0, order_fingerprint = 0;
  // The cost model (core/src/vtime/README.md, "The cost model"): a cache line within a node
  // and at the nearest remote distance, and the virtual ns charged, summed over the threads:
  // steal, queue, migrate, wake (the runtime's transfers) and program (charge_virtual_time).
  std::int64_t line_ns = 0, remote_line_ns = 0;
  std::int64_t charged_steal_ns = 0, charged_queue_ns = 0, charged_migrate_ns = 0,
               charged_wake_ns = 0, charged_program_ns = 0;
};

struct Stats {
  bool valid = false;      // false before the first run()
  Mode mode = Mode::flat;  // resolved: flat or numa
  Bind bind = Bind::none;  // resolved: node, pu or none (NUGO_BIND)
  // NUMA mode's policy in force, every key as NUGO_NUMA spells it ("remote_delay=0,
  // remote_take=half,ready=waker,adopt=0,steal=nearest,go_on=pinned"); "" in flat mode.
  std::string numa_policy;
  int procs = 0;
  std::uint64_t seed = 0;  // Config::seed (NUGO_SEED): every random choice derives from it
  std::string topology_source;
  bool emulated = false;
  int topology_nodes = 0;  // every node of the topology, memory-only ones included
  Counters totals;         // the sum over ps (and over nodes), key by key
  std::uint64_t created_foreign = 0;
  std::vector<NodeStats> nodes;  // nodes with Ps, by node number
  std::vector<PStats> ps;        // by P id
  ClockStats clock;
};

// A snapshot of the running runtime (approximate while goroutines run: each counter is read
// once, not all at one instant), or the final counts of the last run() if none runs now.
Stats stats();
// The same, as the JSON that NUGO_STATS writes.
std::string stats_json();
std::string to_json(const Stats& s);

}  // namespace nugo
