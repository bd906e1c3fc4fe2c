#include "plan.hpp"

#include <algorithm>
#include <map>

namespace nugo::numa {
namespace {

int cpu_nodes(const topo::Topology& t) {
  return static_cast<int>(std::count_if(t.nodes.begin(), t.nodes.end(),
                                        [](const topo::Node& n) { return !n.pus.empty(); }));
}

}  // namespace

Plan make_plan(const topo::Topology& t, int procs, Mode mode, NumaPolicy::Steal steal) {
  Plan plan;
  if (mode == Mode::automatic) mode = cpu_nodes(t) > 1 ? Mode::numa : Mode::flat;
  plan.mode = mode;
  const std::vector<topo::PAssignment> placed = t.assign_ps(procs);
  if (mode == Mode::flat) {
    DomainPlan all;
    for (const topo::PAssignment& a : placed) {
      all.ps.push_back(a.p);
      all.pus.push_back(a.pu);
    }
    plan.victims.push_back(all.ps);
    plan.domains.push_back(std::move(all));
    plan.remote.emplace_back();
    return plan;
  }
  // assign_ps orders Ps by p with the Ps of one node contiguous: a domain per node seen.
  std::vector<int> domain_of_node(t.nodes.size(), -1);
  for (const topo::PAssignment& a : placed) {
    int& d = domain_of_node[a.node];
    if (d < 0) {
      d = static_cast<int>(plan.domains.size());
      plan.domains.push_back({a.node, t.nodes[a.node].os_index, {}, {}});
    }
    plan.domains[d].ps.push_back(a.p);
    plan.domains[d].pus.push_back(a.pu);
  }
  for (const DomainPlan& self : plan.domains) {
    std::map<int, std::vector<int>> by_distance;
    for (int other = 0; other < static_cast<int>(plan.domains.size()); ++other) {
      const DomainPlan& o = plan.domains[other];
      if (o.node != self.node) by_distance[t.distance[self.node][o.node]].push_back(other);
    }
    std::vector<std::vector<int>> tiers;
    for (auto& [distance, group] : by_distance) tiers.push_back(std::move(group));
    plan.remote.push_back(std::move(tiers));
  }
  std::vector<int> every_p;
  for (const DomainPlan& d : plan.domains) every_p.insert(every_p.end(), d.ps.begin(), d.ps.end());
  std::sort(every_p.begin(), every_p.end());
  for (const DomainPlan& d : plan.domains)
    plan.victims.push_back(steal == NumaPolicy::Steal::flat ? every_p : d.ps);
  return plan;
}

}  // namespace nugo::numa
