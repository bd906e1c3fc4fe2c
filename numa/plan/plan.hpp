// Everything a runtime instance decides once, at start, from its configuration and its
// topology: how many Ps, which domains there are and which Ps each holds, in what order a
// domain's thieves visit the others, where each P's M binds, which domain and node a thread
// without a P belongs to, the distance classes the statistics count in, and the NUMA policy
// as it will run. The scheduler (core/src/sched) builds its Domains and Ps from a Plan and
// never asks the topology or the configuration these questions itself; a Plan needs no
// running runtime, so the tests check it on every reference topology. See numa/README.md.
#pragma once

#include <cstdint>
#include <vector>

#include "nugo/config.hpp"
#include "nugo/topology.hpp"

namespace nugo::numa {

struct DomainPlan {
  int node = -1;     // index into Topology::nodes; -1 in flat mode (the whole machine)
  int os_node = -1;  // the OS's node number, as numactl prints it; -1 in flat mode
  std::vector<int> ps;   // P ids, ascending, contiguous
  std::vector<int> pus;  // the PU (index into Topology::pus) of each P in ps
  // The OS node the domain's memory (its goroutine stacks) is bound to; -1 for none (flat
  // mode, or an emulated node, which has no memory of its own).
  int memory_node = -1;
};

// NumaPolicy (NUGO_NUMA) as the instance runs it: all off in flat mode, which is Go's
// scheduler whatever the settings say.
struct Policy {
  bool ready_home = false;  // NumaPolicy::ready == home
  bool adopt = false;
  std::int64_t remote_delay_ns = 0;
  NumaPolicy::Take remote_take = NumaPolicy::Take::half;
  NumaPolicy::Steal steal = NumaPolicy::Steal::nearest;  // flat: victims is every P
  bool go_on_queued = false;  // NumaPolicy::go_on == queued: go_on queues on the node's global queue
};

struct Plan {
  int gomaxprocs = 0;      // Config::procs, or one P per PU up to Config::kMaxProcs
  Mode mode = Mode::flat;  // never Mode::automatic: resolved against the topology
  std::vector<DomainPlan> domains;
  // remote[i]: the other domains, grouped by their distance from domain i, nearest group
  // first, whatever the policy: where a wake-up for domain i's work and an M looking for an
  // idle P go when i has none. Empty in flat mode.
  std::vector<std::vector<std::vector<int>>> remote;
  // steal_groups[i]: the groups in which domain i's thieves visit the other domains, the
  // domains of one group in a random order (so that no node is always robbed first):
  // remote[i], or with NumaPolicy::Steal::node one group of them all, distances ignored.
  std::vector<std::vector<std::vector<int>>> steal_groups;
  // victims[i]: the Ps (ids, ascending) that domain i's thieves try in their first rounds,
  // before any remote domain's queues: the domain's own Ps (NumaPolicy::Steal::nearest and
  // node, and flat mode's one domain), or every P (Steal::flat: Go's stealing over per-node
  // domains).
  std::vector<std::vector<int>> victims;

  // Thread binding (Config::bind resolved: node in NUMA mode, none in flat mode unless asked
  // for, none in virtual time, whose members share one real CPU; never automatic). By P id: the real CPUs an M holding that P binds to, and a key
  // naming that set (the domain for node binding, the P for pu binding, -1 for none); an M
  // rebinds only when the key changes.
  Bind bind = Bind::none;
  std::vector<std::vector<int>> bind_cpus;
  std::vector<int> bind_key;

  // By topology node index: its domain, or -1 (flat mode: the one domain for every node with
  // a P; NUMA mode: -1 for nodes without Ps). Where ready=home and go_on send a G.
  std::vector<int> domain_of_node;
  // By real CPU number (-1: none): the domain a thread without a P on that CPU queues in, and
  // its node (the home of a G it creates). Empty on an emulated topology and in virtual time,
  // where the real CPU a thread happens to run on says nothing about the machine being run:
  // there, and on a CPU of no node, a thread without a P belongs to the first domain and to
  // the node of the first P (sched/domain.hpp: foreign_domain, thread_node).
  std::vector<int> domain_of_cpu;
  std::vector<int> node_of_cpu;

  // Statistics: the distinct distances of the topology's matrix, ascending, and for each pair
  // of node indexes the position of theirs in that list (moved_remote_by_distance and
  // steals_remote_by_distance).
  std::vector<int> distances;
  std::vector<std::vector<int>> distance_class;


  Policy policy;
};

// The plan of an instance of cfg (procs, mode, bind, numa; cfg.procs >= 0) on topology.
// Mode::automatic means numa when the topology has more than one node with CPUs. In NUMA
// mode Ps are placed by Topology::assign_ps (balanced over the nodes with CPUs, distinct
// cores first) and every node that got a P is a domain; flat mode is one domain with every P.
Plan make_plan(const topo::Topology& topology, const Config& cfg);

// The policy a plan runs, in the setting's words (for the statistics: what ran, not what was
// asked; flat mode's plan runs the defaults, which it never consults).
NumaPolicy setting(const Policy& policy);


}  // namespace nugo::numa
