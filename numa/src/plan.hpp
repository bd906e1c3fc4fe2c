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
};

// Mode::automatic means numa when the topology has more than one node with CPUs. In NUMA
// mode Ps are placed by Topology::assign_ps (balanced over the nodes with CPUs, distinct
// cores first) and every node that got a P is a domain; flat mode is one domain with every
// P. procs >= 1.
Plan make_plan(const topo::Topology& topology, int procs, Mode mode);

}  // namespace nugo::numa
