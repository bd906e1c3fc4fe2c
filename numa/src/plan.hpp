// NUMA policy, the part of it that is decided once per runtime: which domains there are,
// which Ps each holds, and in what order a domain's thieves visit the other domains. core/
// builds its Domains from a Plan and never asks the topology these questions itself.
// See numa/README.md.
#pragma once

#include <vector>

#include "nugo/config.hpp"
#include "nugo/topology.hpp"

namespace nugo::numa {

struct DomainPlan {
  int node = -1;     // index into Topology::nodes; -1 in flat mode (the whole machine)
  int os_node = -1;  // the OS's node number, as numactl prints it; -1 in flat mode
  std::vector<int> ps;   // P ids, ascending, contiguous
  std::vector<int> pus;  // the PU (index into Topology::pus) of each P in ps
};

struct Plan {
  Mode mode = Mode::flat;  // never Mode::automatic: resolved against the topology
  std::vector<DomainPlan> domains;
  // remote[i]: the other domains, grouped by their distance from domain i, nearest group
  // first. A thief visits the groups in this order and the domains of one group in a random
  // order, so that no node is always robbed first. Empty in flat mode.
  std::vector<std::vector<std::vector<int>>> remote;
  // victims[i]: the Ps (ids, ascending) that domain i's thieves try in their first rounds,
  // before any remote domain's queues: the domain's own Ps (NumaPolicy::Steal::nearest, and
  // flat mode's one domain), or every P (Steal::flat: Go's stealing over per-node domains).
  std::vector<std::vector<int>> victims;
};

// Mode::automatic means numa when the topology has more than one node with CPUs. In NUMA
// mode Ps are placed by Topology::assign_ps (balanced over the nodes with CPUs, distinct
// cores first) and every node that got a P is a domain; flat mode is one domain with every
// P. procs >= 1. steal: which Ps a domain's thieves try first (NUMA mode only).
Plan make_plan(const topo::Topology& topology, int procs, Mode mode,
               NumaPolicy::Steal steal = NumaPolicy::Steal::nearest);

}  // namespace nugo::numa
