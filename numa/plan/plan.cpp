#include "plan.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace nugo::numa {
namespace {

int cpu_nodes(const topo::Topology& t) {
  return static_cast<int>(std::count_if(t.nodes.begin(), t.nodes.end(),
                                        [](const topo::Node& n) { return !n.pus.empty(); }));
}

// Tables by real CPU number (-1: none): the CPUs of `pus` get `value`, unless an earlier call
// claimed them (folded emulated CPUs go to the first claimant).
void claim_cpus(const topo::Topology& t, const std::vector<int>& pus, int value,
                std::vector<int>* table) {
  for (int pu : pus) {
    int cpu = t.real_cpu(pu);
    if (cpu < 0) continue;
    if (static_cast<int>(table->size()) <= cpu) table->resize(cpu + 1, -1);
    if ((*table)[cpu] < 0) (*table)[cpu] = value;
  }
}

// The domains and their Ps; the order in which each domain's thieves visit the others.
void plan_domains(const topo::Topology& t, NumaPolicy::Steal steal, Plan* plan) {
  const std::vector<topo::PAssignment> placed = t.assign_ps(plan->gomaxprocs);
  if (plan->mode == Mode::flat) {
    DomainPlan all;
    for (const topo::PAssignment& a : placed) {
      all.ps.push_back(a.p);
      all.pus.push_back(a.pu);
    }
    plan->victims.push_back(all.ps);
    plan->domains.push_back(std::move(all));
    plan->remote.emplace_back();
    plan->steal_groups.emplace_back();
    return;
  }
  // assign_ps orders Ps by p with the Ps of one node contiguous: a domain per node seen.
  std::vector<int> domain_of_node(t.nodes.size(), -1);
  for (const topo::PAssignment& a : placed) {
    int& d = domain_of_node[a.node];
    if (d < 0) {
      d = static_cast<int>(plan->domains.size());
      // Stacks of a real node's domain are bound there; an emulated node has no memory.
      std::optional<int> mem = t.memory_node(a.node);
      plan->domains.push_back({a.node, t.nodes[a.node].os_index, {}, {}, mem.value_or(-1)});
    }
    plan->domains[d].ps.push_back(a.p);
    plan->domains[d].pus.push_back(a.pu);
  }
  for (const DomainPlan& self : plan->domains) {
    std::map<int, std::vector<int>> by_distance;
    for (int other = 0; other < static_cast<int>(plan->domains.size()); ++other) {
      const DomainPlan& o = plan->domains[other];
      if (o.node != self.node) by_distance[t.distance[self.node][o.node]].push_back(other);
    }
    std::vector<std::vector<int>> tiers, all;
    for (auto& [distance, group] : by_distance) {
      if (all.empty()) all.emplace_back();
      all.front().insert(all.front().end(), group.begin(), group.end());
      tiers.push_back(std::move(group));
    }
    if (!all.empty()) std::sort(all.front().begin(), all.front().end());
    plan->steal_groups.push_back(steal == NumaPolicy::Steal::node ? std::move(all) : tiers);
    plan->remote.push_back(std::move(tiers));
  }
  std::vector<int> every_p;
  for (const DomainPlan& d : plan->domains) every_p.insert(every_p.end(), d.ps.begin(), d.ps.end());
  std::sort(every_p.begin(), every_p.end());
  for (const DomainPlan& d : plan->domains)
    plan->victims.push_back(steal == NumaPolicy::Steal::flat ? every_p : d.ps);
}

// Where each P's M binds (Config::bind). Nowhere in virtual time: there every member thread
// runs on one real CPU (vtime/README.md, "The cost model"), so that no cache line crosses a
// real CPU and the model's charges are the only ones.
void plan_binding(const topo::Topology& t, Bind asked, bool virtual_time, Plan* plan) {
  plan->bind = virtual_time ? Bind::none
               : asked != Bind::automatic ? asked
               : plan->mode == Mode::numa ? Bind::node : Bind::none;
  plan->bind_cpus.resize(plan->gomaxprocs);
  plan->bind_key.assign(plan->gomaxprocs, -1);
  if (plan->bind == Bind::none) return;
  for (std::size_t i = 0; i < plan->domains.size(); ++i) {
    const DomainPlan& dp = plan->domains[i];
    std::vector<int> node_cpus;
    if (plan->bind == Bind::node) {
      // Flat mode has no node: bind to the CPUs of the Ps' PUs (fewer than the machine's when
      // there are fewer Ps than PUs).
      const std::vector<int>& pus = dp.node >= 0 ? t.nodes[dp.node].pus : dp.pus;
      for (int pu : pus) node_cpus.push_back(t.real_cpu(pu));
      std::sort(node_cpus.begin(), node_cpus.end());
      node_cpus.erase(std::unique(node_cpus.begin(), node_cpus.end()), node_cpus.end());
    }
    for (std::size_t k = 0; k < dp.ps.size(); ++k) {
      int p = dp.ps[k];
      if (plan->bind == Bind::node) {
        plan->bind_cpus[p] = node_cpus;
        plan->bind_key[p] = static_cast<int>(i);
      } else {
        plan->bind_cpus[p] = {t.real_cpu(dp.pus[k])};
        plan->bind_key[p] = p;
      }
    }
  }
}

// Which domain and node each node and CPU belongs to. The CPU tables only where the CPU a
// thread runs on says where it is: on an emulated topology the real CPU is an accident of
// folding, and in virtual time of the host's scheduling, so there a thread without a P has the
// fixed home below (plan.hpp).
void plan_homes(const topo::Topology& t, bool cpu_homes, Plan* plan) {
  plan->domain_of_node.assign(t.nodes.size(), -1);
  for (std::size_t i = 0; i < plan->domains.size(); ++i) {
    const DomainPlan& dp = plan->domains[i];
    for (int pu : dp.pus)
      plan->domain_of_node[t.pus[pu].node] = plan->mode == Mode::numa ? static_cast<int>(i) : 0;
    // A thread without a P on a CPU of this node queues in this domain; in flat mode every
    // CPU that runs a P does.
    if (cpu_homes)
      claim_cpus(t, dp.node >= 0 ? t.nodes[dp.node].pus : dp.pus, static_cast<int>(i),
                 &plan->domain_of_cpu);
  }
  if (cpu_homes)
    for (std::size_t n = 0; n < t.nodes.size(); ++n)
      claim_cpus(t, t.nodes[n].pus, static_cast<int>(n), &plan->node_of_cpu);
}

// The distance classes the statistics count moved goroutines in.
void plan_distance_classes(const topo::Topology& t, Plan* plan) {
  std::vector<int>& distances = plan->distances;
  for (const auto& row : t.distance) distances.insert(distances.end(), row.begin(), row.end());
  std::sort(distances.begin(), distances.end());
  distances.erase(std::unique(distances.begin(), distances.end()), distances.end());
  if (distances.empty()) distances.push_back(10);
  plan->distance_class.assign(t.nodes.size(), std::vector<int>(t.nodes.size(), 0));
  for (std::size_t a = 0; a < t.nodes.size(); ++a)
    for (std::size_t b = 0; b < t.nodes.size(); ++b)
      if (a < t.distance.size() && b < t.distance[a].size())
        plan->distance_class[a][b] = static_cast<int>(
            std::lower_bound(distances.begin(), distances.end(), t.distance[a][b]) -
            distances.begin());
}

}  // namespace

NumaPolicy setting(const Policy& policy) {
  NumaPolicy out;
  out.ready = policy.ready_home ? NumaPolicy::Ready::home : NumaPolicy::Ready::waker;
  out.adopt = policy.adopt;
  out.remote_delay = std::chrono::nanoseconds(policy.remote_delay_ns);
  out.remote_take = policy.remote_take;
  out.steal = policy.steal;
  out.go_on = policy.go_on_queued ? NumaPolicy::GoOn::queued : NumaPolicy::GoOn::pinned;
  return out;
}

Plan make_plan(const topo::Topology& t, const Config& cfg) {
  Plan plan;
  // One P per PU of the topology unless told otherwise, at most Config::kMaxProcs (Go caps
  // GOMAXPROCS at _MaxGomaxprocs the same way; an emulated topology may have more PUs).
  plan.gomaxprocs = cfg.procs > 0 ? cfg.procs : std::min(t.pu_count(), Config::kMaxProcs);
  plan.mode = cfg.mode != Mode::automatic ? cfg.mode : cpu_nodes(t) > 1 ? Mode::numa : Mode::flat;
  plan_domains(t, cfg.numa.steal, &plan);
  plan_binding(t, cfg.bind, cfg.virtual_time.on, &plan);
  plan_homes(t, !t.emulated && !cfg.virtual_time.on, &plan);
  plan_distance_classes(t, &plan);
  if (plan.mode == Mode::numa) {  // flat mode is Go's scheduler, whatever the settings say
    plan.policy.ready_home = cfg.numa.ready == NumaPolicy::Ready::home;
    plan.policy.adopt = cfg.numa.adopt;
    plan.policy.remote_delay_ns = cfg.numa.remote_delay.count();
    plan.policy.remote_take = cfg.numa.remote_take;
    plan.policy.steal = cfg.numa.steal;
    plan.policy.go_on_queued = cfg.numa.go_on == NumaPolicy::GoOn::queued;
  }
  return plan;
}

}  // namespace nugo::numa
