// NUMA mode (its statistics and policies are numa_policy_test.cpp's): the domain plan on every
// reference topology and on synthetic ones, the runtime built from it, stealing across domains,
// deadlock detection across domains, and bad input. The whole scheduler suite also runs in NUMA
// mode on emulated 2- and 4-node machines (tests/CMakeLists.txt).
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nugo/nugo.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "costs.hpp"  // virtual time's cost model
#include "plan.hpp"
#include "preempt.hpp"
#include "sched.hpp"

namespace fs = std::filesystem;
using nugo::Mode;
using nugo::numa::Plan;
using nugo::topo::Topology;

namespace {

std::vector<std::string> topology_specs() {
  std::vector<std::string> specs = {
      "synthetic:pack:2 numa:1 core:4 pu:1",   // 2 nodes x 4
      "synthetic:pack:4 numa:1 core:2 pu:1",   // 4 nodes x 2
      "synthetic:pack:8 numa:1 core:2 pu:2",   // 8 nodes
      "synthetic:pack:1 core:8 pu:2",          // one node
  };
  const fs::path dir = NUGO_MACHINES_DIR;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".xml") specs.push_back("xml:" + e.path().string());
  std::sort(specs.begin(), specs.end());
  return specs;
}

int cpu_nodes(const Topology& t) {
  return static_cast<int>(std::count_if(t.nodes.begin(), t.nodes.end(),
                                        [](const auto& n) { return !n.pus.empty(); }));
}

// Checks what every plan must satisfy and returns it.
Plan checked_plan(const Topology& t, int procs, Mode mode,
                  nugo::NumaPolicy::Steal steal = nugo::NumaPolicy::Steal::nearest) {
  nugo::Config cfg;
  cfg.procs = procs;
  cfg.mode = mode;
  cfg.numa.steal = steal;
  Plan plan = nugo::numa::make_plan(t, cfg);
  REQUIRE(plan.gomaxprocs == procs);
  REQUIRE(plan.mode != Mode::automatic);
  REQUIRE(plan.remote.size() == plan.domains.size());
  REQUIRE(plan.steal_groups.size() == plan.domains.size());
  REQUIRE(plan.victims.size() == plan.domains.size());
  // A thief's first rounds: its own domain's Ps, or with steal=flat in NUMA mode every P.
  for (std::size_t i = 0; i < plan.domains.size(); ++i) {
    std::vector<int> want = plan.domains[i].ps;
    if (steal == nugo::NumaPolicy::Steal::flat && plan.mode == Mode::numa) {
      want.resize(static_cast<std::size_t>(procs));
      for (int p = 0; p < procs; ++p) want[static_cast<std::size_t>(p)] = p;
    }
    REQUIRE(plan.victims[i] == want);
  }
  std::vector<int> all;
  for (std::size_t i = 0; i < plan.domains.size(); ++i) {
    const auto& d = plan.domains[i];
    REQUIRE_FALSE(d.ps.empty());  // no domain without a P
    REQUIRE(d.pus.size() == d.ps.size());
    all.insert(all.end(), d.ps.begin(), d.ps.end());
    if (plan.mode == Mode::flat) continue;
    REQUIRE(t.nodes[d.node].os_index == d.os_node);
    REQUIRE_FALSE(t.nodes[d.node].pus.empty());  // memory-only nodes get no Ps
    for (int pu : d.pus) REQUIRE(t.pus[pu].node == d.node);
    // Every other domain once, in groups of equal distance, nearer groups first, whatever
    // the policy (wake-ups go nearest first).
    std::set<int> seen;
    int last = -1;
    for (const auto& group : plan.remote[i]) {
      REQUIRE_FALSE(group.empty());
      int dist = t.distance[d.node][plan.domains[group.front()].node];
      REQUIRE(dist > last);
      last = dist;
      for (int o : group) {
        REQUIRE(o != static_cast<int>(i));
        REQUIRE(t.distance[d.node][plan.domains[o].node] == dist);
        REQUIRE(seen.insert(o).second);
      }
    }
    REQUIRE(seen.size() == plan.domains.size() - 1);
    // A thief's order: the same groups, or with steal=node one group of every other domain.
    if (steal != nugo::NumaPolicy::Steal::node) {
      REQUIRE(plan.steal_groups[i] == plan.remote[i]);
    } else if (plan.domains.size() == 1) {
      REQUIRE(plan.steal_groups[i].empty());
    } else {
      REQUIRE(plan.steal_groups[i].size() == 1);
      REQUIRE(std::set<int>(plan.steal_groups[i][0].begin(), plan.steal_groups[i][0].end()) == seen);
      REQUIRE(plan.steal_groups[i][0].size() == seen.size());
    }
  }
  std::sort(all.begin(), all.end());
  for (int p = 0; p < procs; ++p) REQUIRE(all[p] == p);  // every P in exactly one domain
  REQUIRE(static_cast<int>(all.size()) == procs);
  return plan;
}

}  // namespace

TEST_CASE("domain plans on every reference and synthetic topology", "[numa]") {
  for (const std::string& spec : topology_specs()) {
    INFO(spec);
    Topology t = Topology::load(spec);
    for (int procs : {1, 2, 3, 4, 8, t.pu_count()}) {
      INFO("procs " << procs);
      Plan flat = checked_plan(t, procs, Mode::flat);
      CHECK(flat.domains.size() == 1);
      Plan numa = checked_plan(t, procs, Mode::numa);
      CHECK(static_cast<int>(numa.domains.size()) == std::min(procs, cpu_nodes(t)));
      Plan numa_flat_steal = checked_plan(t, procs, Mode::numa, nugo::NumaPolicy::Steal::flat);
      CHECK(numa_flat_steal.remote == numa.remote);  // the same domains; only the victims differ
      // steal=node: the same victims and wake-up order as the hierarchy; its thieves' order
      // is one group (checked_plan).
      Plan numa_node_steal = checked_plan(t, procs, Mode::numa, nugo::NumaPolicy::Steal::node);
      CHECK(numa_node_steal.victims == numa.victims);
      CHECK(numa_node_steal.remote == numa.remote);
      checked_plan(t, procs, Mode::flat, nugo::NumaPolicy::Steal::flat);  // flat mode: no effect
      // Ps are balanced over the nodes: sizes differ by at most one.
      std::size_t lo = procs, hi = 0;
      for (const auto& d : numa.domains) {
        lo = std::min(lo, d.ps.size());
        hi = std::max(hi, d.ps.size());
      }
      CHECK(hi - lo <= 1);
      Plan automatic = checked_plan(t, procs, Mode::automatic);
      CHECK(automatic.mode == (cpu_nodes(t) > 1 ? Mode::numa : Mode::flat));
    }
  }
}

TEST_CASE("steal orders on the Cluster-on-Die machine: two remote tiers, or one group", "[numa]") {
  // Four nodes, 7 PUs each; from node 0 the die beside it is at 21, the other socket's two
  // dies at 31 (topology/machines/README.md).
  Topology t = Topology::load("xml:" + (fs::path(NUGO_MACHINES_DIR) / "xeon-2socket-cod-4node-28pu.xml").string());
  REQUIRE(cpu_nodes(t) == 4);
  Plan nearest = checked_plan(t, 28, Mode::numa);
  Plan node = checked_plan(t, 28, Mode::numa, nugo::NumaPolicy::Steal::node);
  for (std::size_t i = 0; i < nearest.domains.size(); ++i) {
    REQUIRE(nearest.domains[i].ps.size() == 7);
    REQUIRE(nearest.steal_groups[i].size() == 2);
    CHECK(nearest.steal_groups[i][0].size() == 1);
    CHECK(nearest.steal_groups[i][1].size() == 2);
    REQUIRE(node.steal_groups[i].size() == 1);
    CHECK(node.steal_groups[i][0].size() == 3);
    CHECK(node.remote[i] == nearest.remote[i]);  // wake-ups still go nearest first
  }
}

// The rest of the plan, decided at start without a runtime: the binding, the homes of
// threads without a P, the distance classes, the policy as it runs, the P count.
TEST_CASE("plans bind, home and classify as the configuration asks, on every topology", "[numa]") {
  using nugo::Bind;
  std::vector<std::string> specs = topology_specs();
  specs.push_back("");  // this machine: real, so its domains' memory is bound
  for (const std::string& spec : specs) {
    INFO(spec);
    Topology t = Topology::load(spec);
    for (Mode mode : {Mode::flat, Mode::numa, Mode::automatic})
      for (Bind bind : {Bind::automatic, Bind::none, Bind::node, Bind::pu})
        for (int procs : {1, 3, t.pu_count()}) {
          INFO("mode " << static_cast<int>(mode) << " bind " << static_cast<int>(bind) << " procs " << procs);
          nugo::Config cfg;
          cfg.procs = procs;
          cfg.mode = mode;
          cfg.bind = bind;
          cfg.numa.ready = nugo::NumaPolicy::Ready::home;
          cfg.numa.adopt = true;
          cfg.numa.remote_delay = std::chrono::microseconds(50);
          cfg.numa.go_on = nugo::NumaPolicy::GoOn::queued;
          cfg.numa.remote_take = nugo::NumaPolicy::Take::one;
          cfg.numa.steal = nugo::NumaPolicy::Steal::flat;
          const Plan plan = nugo::numa::make_plan(t, cfg);
          const bool numa = plan.mode == Mode::numa;
          // Binding: automatic is node in NUMA mode and none in flat mode.
          const Bind want = bind != Bind::automatic ? bind : numa ? Bind::node : Bind::none;
          REQUIRE(plan.bind == want);
          REQUIRE(static_cast<int>(plan.bind_cpus.size()) == procs);
          REQUIRE(static_cast<int>(plan.bind_key.size()) == procs);
          std::set<int> nodes_with_p;
          for (std::size_t i = 0; i < plan.domains.size(); ++i) {
            const auto& d = plan.domains[i];
            // The stacks' memory: the node's own on a real machine, none when emulated or flat.
            REQUIRE(d.memory_node == (d.node >= 0 ? t.memory_node(d.node).value_or(-1) : -1));
            std::set<int> domain_cpus;  // the CPUs of the domain's node (flat: of its Ps' PUs)
            for (int pu : d.node >= 0 ? t.nodes[d.node].pus : d.pus) domain_cpus.insert(t.real_cpu(pu));
            for (std::size_t k = 0; k < d.ps.size(); ++k) {
              const int p = d.ps[k];
              const auto& cpus = plan.bind_cpus[p];
              if (want == Bind::none) {
                REQUIRE(cpus.empty());
                REQUIRE(plan.bind_key[p] == -1);
              } else if (want == Bind::pu) {
                REQUIRE(cpus == std::vector<int>{t.real_cpu(d.pus[k])});
                REQUIRE(plan.bind_key[p] == p);
              } else {
                REQUIRE(std::set<int>(cpus.begin(), cpus.end()) == domain_cpus);
                REQUIRE(std::is_sorted(cpus.begin(), cpus.end()));
                REQUIRE(plan.bind_key[p] == static_cast<int>(i));
              }
              // Homes: the node of every P's PU belongs to the P's domain (flat: the one).
              REQUIRE(plan.domain_of_node[t.pus[d.pus[k]].node] == (numa ? static_cast<int>(i) : 0));
              // On a real machine a thread without a P on that CPU is of that CPU's node and
              // domain. On an emulated one the real CPU is an accident of folding: no table,
              // so such a thread has the fixed home (the first domain, the first P's node).
              const int cpu = t.real_cpu(d.pus[k]);
              const int node = t.pus[d.pus[k]].node;
              nodes_with_p.insert(node);
              if (t.emulated) {
                REQUIRE(plan.node_of_cpu.empty());
                REQUIRE(plan.domain_of_cpu.empty());
              } else {
                REQUIRE(plan.node_of_cpu.at(cpu) == node);
                REQUIRE(plan.domain_of_cpu.at(cpu) == static_cast<int>(i));
              }
            }
          }
          // A node is some domain's exactly when one of its PUs got a P.
          for (std::size_t n = 0; n < t.nodes.size(); ++n)
            REQUIRE((plan.domain_of_node[n] >= 0) == (nodes_with_p.count(static_cast<int>(n)) > 0));
          // Distance classes: ascending distinct distances, each pair's class its distance.
          REQUIRE_FALSE(plan.distances.empty());
          REQUIRE(std::adjacent_find(plan.distances.begin(), plan.distances.end(),
                                     std::greater_equal<int>()) == plan.distances.end());
          for (std::size_t a = 0; a < t.distance.size(); ++a)
            for (std::size_t b = 0; b < t.distance[a].size(); ++b)
              REQUIRE(plan.distances.at(plan.distance_class[a][b]) == t.distance[a][b]);
          // The policy runs only in NUMA mode: flat mode is Go's scheduler.
          REQUIRE(plan.policy.ready_home == numa);
          REQUIRE(plan.policy.adopt == numa);
          REQUIRE(plan.policy.remote_delay_ns == (numa ? 50'000 : 0));
          REQUIRE(plan.policy.go_on_queued == numa);
          REQUIRE((plan.policy.steal == nugo::NumaPolicy::Steal::flat) == numa);
          // ... and the statistics' words for it are the setting's (numa::setting).
          REQUIRE(to_string(nugo::numa::setting(plan.policy)) ==
                  (numa ? to_string(cfg.numa) : to_string(nugo::NumaPolicy{})));
          REQUIRE(plan.policy.remote_take ==
                  (numa ? nugo::NumaPolicy::Take::one : nugo::NumaPolicy::Take::half));
        }
    nugo::Config every_pu;  // procs 0: one P per PU, at most Config::kMaxProcs
    REQUIRE(nugo::numa::make_plan(t, every_pu).gomaxprocs == std::min(t.pu_count(), nugo::Config::kMaxProcs));
  }
}

TEST_CASE("virtual time's cost model prices a cache line by node distance, on every topology",
          "[numa]") {
  for (const std::string& spec : topology_specs()) {
    INFO(spec);
    Topology t = Topology::load(spec);
    const auto cost = nugo::detail::vtime::line_costs(t, 48, 122);
    REQUIRE(cost.size() == t.nodes.size());
    int nearest = 0;
    for (const auto& row : t.distance)
      for (int d : row)
        if (d > 10 && (nearest == 0 || d < nearest)) nearest = d;
    for (std::size_t a = 0; a < t.nodes.size(); ++a)
      for (std::size_t b = 0; b < t.nodes.size(); ++b) {
        const int d = t.distance[a][b];
        INFO(a << " -> " << b << " at distance " << d);
        if (d <= 10) CHECK(cost[a][b] == 48);         // within a node (or a distance of 10)
        else if (d == nearest) CHECK(cost[a][b] == 122);  // the nearest remote distance
        else CHECK(cost[a][b] == 48 + 74 * (d - 10) / (nearest - 10));  // farther: in proportion
      }
    // Costs off: nothing is charged anywhere.
    for (const auto& row : nugo::detail::vtime::line_costs(t, 0, 0))
      for (std::int64_t c : row) CHECK(c == 0);
  }
}

TEST_CASE("the runtime builds one domain per node in NUMA mode, one in flat mode", "[numa]") {
  nugo::Config cfg;
  cfg.topology = "synthetic:pack:4 numa:1 core:2 pu:1";
  cfg.procs = 8;
  struct Seen { Mode mode; std::size_t domains; std::vector<int> p_domain; };
  auto look = [&](Mode mode) {
    cfg.mode = mode;
    Seen seen{};
    nugo::run([&] {
      auto* s = nugo::detail::sched;
      seen.mode = s->plan.mode;
      seen.domains = s->domains.size();
      for (const auto& pp : s->allp) seen.p_domain.push_back(pp->domain->id);
    }, cfg);
    return seen;
  };
  Seen numa = look(Mode::numa);
  CHECK(numa.mode == Mode::numa);
  CHECK(numa.domains == 4);
  CHECK(numa.p_domain == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(look(Mode::automatic).mode == Mode::numa);
  Seen flat = look(Mode::flat);
  CHECK(flat.mode == Mode::flat);
  CHECK(flat.domains == 1);
  cfg.topology = "synthetic:pack:1 core:4 pu:1";
  CHECK(look(Mode::automatic).mode == Mode::flat);
}

TEST_CASE("goroutines queued on one node are stolen by the idle Ps of another", "[numa]") {
  nugo::Config cfg;
  cfg.topology = "synthetic:pack:2 numa:1 core:2 pu:1";
  cfg.procs = 2;  // one P per node
  cfg.mode = Mode::numa;
  std::atomic<int> ran_on[2] = {0, 0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    constexpr int kG = 200;
    wg.add(kG);
    for (int i = 0; i < kG; ++i)
      nugo::go([&] {
        {
          nugo::detail::NoPreempt np;  // the M, and so its P, stays ours while we look
          ran_on[nugo::detail::getm()->p->domain->id].fetch_add(1);
        }
        auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < end) {
        }
        wg.done();
      });
    wg.wait();
  }, cfg);
  CHECK(ran_on[0].load() + ran_on[1].load() == 200);
  CHECK(ran_on[0].load() > 0);
  CHECK(ran_on[1].load() > 0);  // only by stealing across domains: all were queued on node 0's P
}

// A remote thief never takes a runnext, so a spinner must not count a busy remote P's runnext
// as work to re-check, or it retakes its P and spins for as long as that P computes.
TEST_CASE("no spinner burns a CPU while a busy P on another node holds only a runnext", "[numa]") {
  // CPU used while one goroutine computes for 300 ms on one of 2 Ps with a runnext waiting,
  // in each mode. sysmon's own cost is the same in both (it retries the preemption, which is
  // off here, every tick); NUMA mode must not add a spinning thread on top.
  auto cpu_while_computing = [](Mode mode, bool go_on) {
    nugo::Config cfg;
    cfg.topology = "synthetic:pack:2 numa:1 core:2 pu:1";
    cfg.procs = 2;
    cfg.mode = mode;
    cfg.async_preempt = false;  // the computing goroutine keeps its P for the whole loop
    double cpu = 0;
    nugo::run([&] {
      std::atomic<bool> ran{false};
      if (go_on)
        nugo::go_on(nugo::this_g::node(), [&] { ran = true; });  // this node's pinned queue
      else
        nugo::go([&] { ran = true; });  // into this P's runnext
      auto cpu_seconds = [] {
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
      };
      double cpu0 = cpu_seconds();
      auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300)) {
      }
      cpu = cpu_seconds() - cpu0;
      while (!ran) nugo::yield();
    }, cfg);
    return cpu;
  };
  double flat = cpu_while_computing(Mode::flat, false);
  double numa = cpu_while_computing(Mode::numa, false);
  INFO("cpu over 0.3 s: flat " << flat << " s, numa " << numa << " s");
  CHECK(numa < flat + 0.15);  // a spinning thread would add ~0.3 s
  // The same for a go_on goroutine waiting for the busy P of its node, which no other node may
  // take (were thieves to take it and send it back, their re-check would spin on it).
  double pinned = cpu_while_computing(Mode::numa, true);
  INFO("numa, go_on to the busy node: " << pinned << " s");
  CHECK(pinned < flat + 0.15);
}

namespace {

std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

TEST_CASE("NUGO_BIND: an M runs on its P's node's CPUs, its PU's CPU, or anywhere", "[numa]") {
  const std::string spec = "synthetic:pack:2 numa:1 core:2 pu:1";
  const Topology t = Topology::load(spec);
  const auto placed = t.assign_ps(4);
  const std::vector<int> process_cpus = thread_cpus();
  auto expected = [&](nugo::Bind bind, int p) {
    if (bind == nugo::Bind::none) return process_cpus;
    std::vector<int> cpus;
    if (bind == nugo::Bind::pu) return std::vector<int>{t.real_cpu(placed[p].pu)};
    for (int pu : t.nodes[placed[p].node].pus) cpus.push_back(t.real_cpu(pu));
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
  };
  for (auto [mode, bind, resolved] :
       {std::tuple{Mode::numa, nugo::Bind::automatic, nugo::Bind::node},
        std::tuple{Mode::numa, nugo::Bind::pu, nugo::Bind::pu},
        std::tuple{Mode::numa, nugo::Bind::none, nugo::Bind::none},
        std::tuple{Mode::flat, nugo::Bind::automatic, nugo::Bind::none}}) {
    INFO("mode " << static_cast<int>(mode) << ", bind " << static_cast<int>(bind));
    nugo::Config cfg;
    cfg.topology = spec;
    cfg.procs = 4;
    cfg.mode = mode;
    cfg.bind = bind;
    std::vector<std::pair<int, std::vector<int>>> seen;  // (P, thread's CPUs)
    nugo::Mutex mu;
    nugo::run([&] {
      nugo::WaitGroup wg;
      wg.add(32);
      for (int i = 0; i < 32; ++i)
        nugo::go([&] {
          for (int r = 0; r < 20; ++r) {
            std::pair<int, std::vector<int>> look;
            {
              nugo::detail::NoPreempt np;  // same M and P for both reads
              look = {nugo::detail::getm()->p->id, thread_cpus()};
            }
            mu.lock();
            seen.push_back(std::move(look));
            mu.unlock();
            nugo::yield();
          }
          wg.done();
        });
      wg.wait();
    }, cfg);
    REQUIRE(seen.size() == 32 * 20);
    for (const auto& [p, cpus] : seen) {
      INFO("P " << p);
      CHECK(cpus == expected(resolved, p));
    }
  }
}

TEST_CASE("a deadlock across 4 domains is reported as on one, and bad NUGO_MODE is named",
          "[numa]") {
  const std::string topo = "NUGO_TOPOLOGY=synthetic:pack:4\\ numa:1\\ core:2\\ pu:1 NUGO_PROCS=8 ";
  ChildResult r = run_child_process(topo + "NUGO_MODE=numa", NUGO_TEST_CHILD " deadlock");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("all goroutines are asleep - deadlock!") != std::string::npos);
  r = run_child_process(topo + "NUGO_MODE=numa", NUGO_TEST_CHILD " timer-not-deadlock");
  CHECK(r.exit_code == 0);
  r = run_child_process("NUGO_MODE=hierarchical", NUGO_TEST_CHILD " run");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("NUGO_MODE=\"hierarchical\": expected flat or numa") != std::string::npos);
  r = run_child_process("NUGO_BIND=socket", NUGO_TEST_CHILD " run");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("NUGO_BIND=\"socket\": expected node, pu or none") != std::string::npos);
  nugo::Config cfg;
  cfg.mode = static_cast<Mode>(7);
  CHECK_THROWS_AS(cfg.validate(), nugo::ConfigError);
  cfg.mode = Mode::numa;
  cfg.bind = static_cast<nugo::Bind>(9);
  CHECK_THROWS_AS(cfg.validate(), nugo::ConfigError);
}

TEST_CASE("a thread without a P has a fixed home on an emulated topology and in virtual time, "
          "not the real CPU it runs on", "[numa]") {
  // On an emulated topology the real CPUs are folded: CPU 1 of this machine stands for node 1's
  // PUs. The main goroutine, queued by run()'s caller, must start on the first node wherever
  // that caller runs.
  nugo::Config cfg;
  cfg.topology = "synthetic:pack:2 numa:1 core:2 pu:1";
  cfg.procs = 4;
  cfg.mode = Mode::numa;
  const Topology t = Topology::load(cfg.topology);
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  std::set<int> homes;
  for (const auto& node : t.nodes)
    for (int pu : node.pus) {
      const int cpu = t.real_cpu(pu);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
      int home = -2;
      nugo::run([&] { home = nugo::this_g::node(); }, cfg);
      homes.insert(home);
    }
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK(homes == std::set<int>{t.nodes[0].os_index});
  // The plan says so: no table by real CPU where the real CPU means nothing.
  nugo::Config virt;
  virt.virtual_time.on = true;
  const Plan real_virtual = nugo::numa::make_plan(Topology::load(""), virt);
  CHECK(real_virtual.domain_of_cpu.empty());
  CHECK(real_virtual.node_of_cpu.empty());
  // Nor is any M bound there: virtual time runs every member on one real CPU.
  virt.mode = Mode::numa;
  virt.bind = nugo::Bind::node;
  const Plan numa_virtual = nugo::numa::make_plan(t, virt);
  CHECK(numa_virtual.bind == nugo::Bind::none);
  CHECK(std::all_of(numa_virtual.bind_key.begin(), numa_virtual.bind_key.end(),
                    [](int k) { return k == -1; }));
}
