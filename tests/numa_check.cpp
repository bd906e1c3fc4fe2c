// nugo_numa_check: placement checks that only a kernel with real NUMA nodes can prove, run by
// scripts/dev/numa-check.sh natively (on a one-node machine they check what one node can show) and
// inside a QEMU guest with 2 or 4 nodes (and one with a memory-only node). Each check prints
// "NUGO-CHECK <name> PASS|FAIL <detail>"; the exit status is 0 only when every check passed.
//
// What the kernel is asked, and how:
//   - a thread's CPUs: sched_getaffinity(0) and sched_getcpu() inside the goroutine, whose
//     thread holds a P of the node it runs on;
//   - where a page is: move_pages(2) with a null node list, after touching the page, from a
//     thread on another node's CPUs where that matters (else the kernel's default policy, local
//     allocation, would put it there without nugo's help);
//   - what nugo asked for: get_mempolicy(2) of the address (the policy and its node).
// A sample taken while the goroutine moved to another node (a preemption in between; under
// TCG slices end quickly) is not counted; a check that cannot apply here says SKIP. The stack
// and memory checks run beside a thread that maps and touches default-policy memory, as malloc
// and new threads do, which puts a bound block's pages on another node unless the block is
// bound before it can be touched (numa/src/alloc.cpp).
// Nothing here is timed: under TCG the guest's clock says nothing about speed.
#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <nugo/nugo.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

int failures = 0;

void report(const char* name, bool ok, const std::string& detail) {
  std::printf("NUGO-CHECK %s %s %s\n", name, ok ? "PASS" : "FAIL", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

void skip(const char* name, const std::string& why) {
  std::printf("NUGO-CHECK %s SKIP %s\n", name, why.c_str());
  std::fflush(stdout);
}

// The policy nugo set on the page of p, and its one node (-1 if none or several).
std::pair<int, int> policy_of(void* p) {
  int mode = -1;
  unsigned long mask[16] = {};
  if (get_mempolicy(&mode, mask, sizeof mask * 8, p, MPOL_F_ADDR) != 0) return {-1, -1};
  int node = -1;
  for (int i = 0; i < static_cast<int>(sizeof mask * 8); ++i)
    if (mask[i / 64] >> (i % 64) & 1) node = node < 0 ? i : -2;
  return {mode, node < 0 ? -1 : node};
}

// Runs f on a plain thread bound to the CPUs of a node other than `node` (the same node when
// there is no other), so that a page it touches is placed by the policy, not by locality.
template <class F>
void from_another_node(int node, F f);

nugo::topo::Topology machine;            // this machine, as hwloc sees it
std::map<int, std::set<int>> node_cpus;  // OS node -> its CPUs (nodes with CPUs only)
std::vector<int> memory_only;            // OS nodes without CPUs
long page = 4096;

std::string cpus_text(const std::set<int>& s) {
  std::string t;
  for (int c : s) t += (t.empty() ? "" : ",") + std::to_string(c);
  return t.empty() ? "none" : t;
}

std::set<int> my_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::set<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  return cpus;
}

// The node of every page of [p, p + bytes), touched first; -errno for a page the kernel could
// not say.
std::vector<int> page_nodes(void* p, std::size_t bytes) {
  auto first = reinterpret_cast<std::uintptr_t>(p) / page * page;
  auto last = (reinterpret_cast<std::uintptr_t>(p) + bytes - 1) / page * page;
  std::vector<void*> pages;
  for (std::uintptr_t a = first; a <= last; a += page) {
    auto* byte = reinterpret_cast<volatile char*>(std::max(a, reinterpret_cast<std::uintptr_t>(p)));
    *byte = *byte;  // touched: placed now
    pages.push_back(reinterpret_cast<void*>(a));
  }
  std::vector<int> status(pages.size(), -1);
  if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0)
    std::fill(status.begin(), status.end(), -errno);
  return status;
}

// "all N pages on node k", or what was found instead.
bool all_on(const std::vector<int>& nodes, int k, std::string* detail) {
  std::map<int, int> count;
  for (int n : nodes) ++count[n];
  if (count.size() == 1 && count.begin()->first == k) return true;
  *detail = "pages by node:";
  for (auto [n, c] : count) *detail += " " + std::to_string(n) + "=" + std::to_string(c);
  return false;
}

// A plain thread on the CPUs of `node` that maps 1 MiB of anonymous memory of the default
// policy, touches its first byte and unmaps it, again and again until stop().
class NeighbourStorm {
 public:
  explicit NeighbourStorm(int node) : thread_([this, cpus = node_cpus.at(node)] {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("NeighbourStorm: sched_setaffinity");
    constexpr std::size_t kBytes = 1 << 20;
    while (!stop_.load(std::memory_order_relaxed)) {
      void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) continue;
      *static_cast<volatile char*>(p) = 1;
      munmap(p, kBytes);
      mapped_.fetch_add(1, std::memory_order_relaxed);
    }
  }) {}
  ~NeighbourStorm() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long mapped() const { return mapped_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> mapped_{0};
  std::thread thread_;
};

nugo::Config numa_config() {
  nugo::Config cfg;
  cfg.mode = nugo::Mode::numa;  // one domain per node (a single one on a one-node machine)
  return cfg;
}

// For the checks of where a goroutine starts or resumes: go_on and ready=home promise the
// node it starts or resumes on, and nothing after that. A preemption between that moment and
// the check's look can move it to another node legitimately (into its domain's global queue,
// which another node's thief may rob), and under TCG it does: a vCPU thread the host
// deschedules for 10 ms outlives the slice in a few instructions ("node 0: started on node 1",
// and "node 0: affinity 3" under NUGO_BIND=pu, each once in CI in the guest with a memory-only
// node). With the longest slice, sysmon preempts nothing while the check looks.
nugo::Config unpreempted_numa_config() {
  nugo::Config cfg = numa_config();
  cfg.timeslice = nugo::Config::kMaxTimeslice;
  return cfg;
}

// Runs body on each node with CPUs many times over, from goroutines placed there with go_on.
// Returns the failures body reported: the first few, then how many there were in all.
template <class Body>
std::vector<std::string> on_every_node(const nugo::Config& cfg, int rounds, Body body) {
  std::vector<std::string> bad;
  int failed = 0;
  std::mutex mu;
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int r = 0; r < rounds; ++r)
      for (const auto& [node, cpus] : node_cpus) {
        wg.add(1);
        nugo::go_on(node, [&, node = node] {
          std::string why = body(node);
          if (!why.empty()) {
            std::lock_guard lock(mu);
            if (++failed <= 3) bad.push_back("node " + std::to_string(node) + ": " + why);
          }
          wg.done();
        });
      }
    wg.wait();
  }, cfg);
  if (failed > 3)
    bad.push_back(std::to_string(failed) + " of " + std::to_string(rounds * node_cpus.size()) +
                  " failed in all");
  return bad;
}

std::string joined(const std::vector<std::string>& v) {
  std::string t;
  for (const auto& s : v) t += (t.empty() ? "" : "; ") + s;
  return t;
}

void check_binding() {
  // node (NUMA mode's default): the thread of a goroutine go_on placed on node k runs on
  // exactly node k's CPUs, and on one of them.
  auto bad = on_every_node(unpreempted_numa_config(), 50, [](int node) -> std::string {
    int start = nugo::this_g::node();  // go_on's promise: where it starts
    std::set<int> aff = my_affinity();
    int cpu = sched_getcpu();
    if (start != node) return "started on node " + std::to_string(start);
    if (nugo::this_g::node() != start) return "";  // moved while we looked: not a sample
    if (aff != node_cpus[node]) return "affinity " + cpus_text(aff) + ", node has " + cpus_text(node_cpus[node]);
    if (!node_cpus[node].count(cpu)) return "on CPU " + std::to_string(cpu);
    return "";
  });
  report("bind-node-and-go_on", bad.empty(),
         bad.empty() ? std::to_string(50 * node_cpus.size()) +
                           " goroutines placed with go_on ran on their node's CPUs, bound to "
                           "exactly that node's CPU set"
                     : joined(bad));

  nugo::Config pu = unpreempted_numa_config();  // the M's binding is looked at right after the start
  pu.bind = nugo::Bind::pu;
  bad = on_every_node(pu, 20, [](int node) -> std::string {
    std::set<int> aff = my_affinity();
    if (aff.size() != 1 || !node_cpus[node].count(*aff.begin()))
      return "affinity " + cpus_text(aff) + ", expected one CPU of " + cpus_text(node_cpus[node]);
    return "";
  });
  report("bind-pu", bad.empty(),
         bad.empty() ? "NUGO_BIND=pu: the M of every goroutine placed on node k was bound to a single CPU of node k"
                     : joined(bad));

  std::set<int> all = my_affinity();
  nugo::Config flat;
  flat.mode = nugo::Mode::flat;
  std::vector<std::string> flat_bad;
  nugo::run([&] {
    nugo::WaitGroup wg;
    std::mutex mu;
    for (int i = 0; i < 40; ++i) {
      wg.add(1);
      nugo::go([&] {
        if (std::set<int> aff = my_affinity(); aff != all) {
          std::lock_guard lock(mu);
          if (flat_bad.size() < 3) flat_bad.push_back("affinity " + cpus_text(aff));
        }
        nugo::yield();
        wg.done();
      });
    }
    wg.wait();
  }, flat);
  report("bind-none-flat", flat_bad.empty(),
         flat_bad.empty() ? "flat mode binds nothing: every M may run on " + cpus_text(all) : joined(flat_bad));
}

// A goroutine placed on node k blocks on a channel and is woken by a goroutine of another
// node; with ready=home it resumes on node k.
void check_woken_home() {
  if (node_cpus.size() < 2) {
    skip("go_on-woken-from-another-node", "one node: no other node to wake from");
    return;
  }
  nugo::Config cfg = unpreempted_numa_config();
  cfg.numa.ready = nugo::NumaPolicy::Ready::home;
  std::vector<std::string> bad;
  int checked = 0, moved = 0;
  nugo::run([&] {
    std::vector<int> nodes;
    for (const auto& [node, cpus] : node_cpus) nodes.push_back(node);
    for (int r = 0; r < 20; ++r)
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        int home = nodes[i], waker = nodes[(i + 1) % nodes.size()];
        nugo::Chan<int> c;
        nugo::WaitGroup wg;
        wg.add(2);
        nugo::go_on(home, [&, c, home]() mutable {
          c.recv();
          int n1 = nugo::this_g::node();
          int cpu = sched_getcpu();
          int n2 = nugo::this_g::node();
          if (n1 != n2)
            ++moved;  // preempted between the looks: not a sample
          else if ((n1 != home || node_cpus[home].count(cpu) == 0) && bad.size() < 3)
            bad.push_back("woken goroutine of node " + std::to_string(home) + " on node " +
                          std::to_string(n1) + ", CPU " + std::to_string(cpu));
          wg.done();
        });
        nugo::go_on(waker, [&, c]() mutable {
          // Only a receiver already blocked takes a try_send on an unbuffered channel: the
          // goroutine of `home` is woken by this one, not the other way round.
          while (!c.try_send(1)) nugo::yield();
          wg.done();
        });
        wg.wait();
        ++checked;
      }
  }, cfg);
  report("go_on-woken-from-another-node", bad.empty() && checked > moved,
         bad.empty() ? std::to_string(checked - moved) +
                           " goroutines woken by a goroutine of another node resumed on their "
                           "own node (ready=home)"
                     : joined(bad));
}

void check_stacks() {
  NeighbourStorm storm(node_cpus.begin()->first);  // as in check_memory
  bool one_node = node_cpus.size() + memory_only.size() == 1;
  auto bad = on_every_node(numa_config(), 10, [one_node](int node) -> std::string {
    char buf[64 * 1024];
    std::memset(buf, 1, sizeof buf);
    asm volatile("" : : "r"(buf) : "memory");
    std::string detail;
    if (!all_on(page_nodes(buf, sizeof buf), node, &detail)) return "stack " + detail;
    // And nugo asked for it: the slab is preferred on the node (on a one-node machine the
    // stack pool binds too: its only node).
    auto [mode, pnode] = policy_of(buf);
    if (mode != MPOL_PREFERRED || pnode != node)
      return "stack policy " + std::to_string(mode) + " on node " + std::to_string(pnode) +
             ", expected MPOL_PREFERRED on " + std::to_string(node) + (one_node ? "" : "");
    return "";
  });
  report("stack-pages", bad.empty(),
         bad.empty() ? "64 KiB of every placed goroutine's stack lies on its node (move_pages), "
                       "under nugo's MPOL_PREFERRED for that node (get_mempolicy)"
                     : joined(bad));
}

void check_memory() {
  // Throughout, a plain thread maps and touches memory of the default policy, as malloc and
  // pthread stacks do: with transparent huge pages on (Debian's kernel: always), such a
  // mapping merges with a neighbouring one not yet bound, and its first touch can fault in a
  // huge page that covers the neighbour, on the toucher's node (with blocks bound only after
  // mmap, 4 of 400 calls of alloc_local in the 2-node guest had 1 MiB of pages on node 0
  // under a binding to node 1).
  NeighbourStorm storm(node_cpus.begin()->first);
  std::vector<std::string> bad;
  std::string detail;
  for (const auto& [node, cpus] : node_cpus) {
    // Allocated and first touched by a thread on another node's CPUs: only the binding puts
    // the pages on `node`.
    from_another_node(node, [&, node = node] {
      std::size_t big = 4 << 20;
      void* p = nugo::numa::alloc_on(node, big);
      if (!all_on(page_nodes(p, big), node, &detail)) bad.push_back("alloc_on(" + std::to_string(node) + ", 4 MiB) " + detail);
      nugo::numa::free(p, big);
      std::vector<void*> small;
      for (int i = 0; i < 2000; ++i) small.push_back(nugo::numa::alloc_on(node, 256));
      std::vector<int> nodes;
      for (void* s : small) {
        std::vector<int> n = page_nodes(s, 256);
        nodes.insert(nodes.end(), n.begin(), n.end());
      }
      if (!all_on(nodes, node, &detail)) bad.push_back("alloc_on(" + std::to_string(node) + ", 256) x2000 " + detail);
      for (void* s : small) nugo::numa::free(s, 256);
      std::vector<int, nugo::numa::Allocator<int>> v{nugo::numa::Allocator<int>(node)};
      v.resize(1 << 20, 7);
      if (!all_on(page_nodes(v.data(), v.size() * sizeof(int)), node, &detail))
        bad.push_back("std::vector with Allocator<int>(" + std::to_string(node) + ") " + detail);
    });
  }
  report("alloc_on-and-Allocator", bad.empty(),
         bad.empty() ? std::string("alloc_on (4 MiB, and 2000 x 256 B) and a std::vector with "
                                   "nugo::numa::Allocator land on the node asked for, every node") +
                           (node_cpus.size() > 1 ? ", touched first from another node's CPUs"
                                                 : " (one node: locality alone would put them there too)")
                     : joined(bad));

  // alloc_local from a goroutine on node k: on k, bound there. "The caller's node" is where it
  // runs at the call: the node is read before and after, and a call that straddled a move (a
  // preemption and a steal; the slice is the longest there is, so there should be none) is
  // not a sample. Every block of 200 calls per node is checked, of four sizes (a 1 MiB and a
  // one-page mapping, a 2 KiB and a 256 B arena block), each for its policy (what nugo asked
  // for) and its pages (what the kernel did), both reported when either is wrong.
  std::atomic<int> counted{0}, straddled{0};
  nugo::Config unpreempted = unpreempted_numa_config();
  constexpr int kLocalCalls = 200;
  std::map<int, std::atomic<unsigned>> calls;  // per node, so that every node gets every size
  for (const auto& [node, cpus] : node_cpus) calls[node];
  auto local_bad = on_every_node(unpreempted, kLocalCalls, [&](int node) -> std::string {
    static constexpr std::size_t kSizes[] = {1 << 20, 4096, 2048, 256};
    const std::size_t n = kSizes[calls.at(node).fetch_add(1) % 4];
    const int before = nugo::this_g::node();
    void* p = nugo::numa::alloc_local(n);
    const int after = nugo::this_g::node();
    auto [mode, pnode] = policy_of(p);
    std::string pages;
    const bool pages_ok = all_on(page_nodes(p, n), before, &pages);
    nugo::numa::free(p, n);
    if (before != after) {
      straddled.fetch_add(1);
      return "";
    }
    counted.fetch_add(1);
    if (pages_ok && mode == MPOL_BIND && pnode == before) return "";
    return "alloc_local(" + std::to_string(n) + ") on node " + std::to_string(before) +
           ": policy " + std::to_string(mode) + " on node " + std::to_string(pnode) +
           (pages_ok ? ", pages on node " + std::to_string(before) : ", " + pages);
  });
  storm.stop();
  if (local_bad.empty() && counted.load() == 0) local_bad.push_back("every call straddled a move");
  report("alloc_local", local_bad.empty(),
         local_bad.empty() ? std::to_string(counted.load()) +
                                 " calls of alloc_local (1 MiB, 4 KiB, 2 KiB, 256 B) from "
                                 "goroutines on every node landed on the caller's node, bound "
                                 "there (MPOL_BIND), beside " + std::to_string(storm.mapped()) +
                                 " default-policy mappings touched meanwhile; " +
                                 std::to_string(straddled.load()) +
                                 " straddled a move and were not counted"
                           : joined(local_bad));

  // alloc_interleaved spreads pages over every node with memory: each holds 1/N +- 10 points.
  std::size_t bytes = 1024 * static_cast<std::size_t>(page);
  void* p = nugo::numa::alloc_interleaved(bytes);
  std::vector<int> nodes = page_nodes(p, bytes);
  nugo::numa::free(p, bytes);
  std::map<int, int> count;
  for (int n : nodes) ++count[n];
  std::size_t with_memory = node_cpus.size() + memory_only.size();
  std::string shares;
  bool ok = count.size() == with_memory;
  for (auto [n, c] : count) {
    double share = 100.0 * c / nodes.size(), want = 100.0 / with_memory;
    ok = ok && n >= 0 && share >= want - 10 && share <= want + 10;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%d: %.1f%%", shares.empty() ? "" : ", ", n, share);
    shares += buf;
  }
  report("alloc_interleaved", ok,
         "1024 pages over " + std::to_string(with_memory) + " node(s): " + shares +
             " (each within 10 points of " + std::to_string(100 / static_cast<int>(with_memory)) + "%)");
}

void check_memory_only() {
  if (memory_only.empty()) {
    skip("memory-only-node", "this machine has no memory-only node (numa-check.sh --vm 2 --memory-node boots one)");
    return;
  }
  int m = memory_only.front();
  std::vector<std::string> bad;
  nugo::run([&] {
    nugo::Stats s = nugo::stats();
    for (const auto& n : s.nodes)
      if (n.node == m) bad.push_back("node " + std::to_string(m) + " got Ps");
    try {
      nugo::go_on(m, [] {});
      bad.push_back("go_on(" + std::to_string(m) + ") was accepted");
    } catch (const std::invalid_argument& e) {
      if (!std::strstr(e.what(), "no CPUs")) bad.push_back(std::string("go_on refused without naming why: ") + e.what());
    }
    std::size_t n = 1 << 20;
    void* p = nugo::numa::alloc_on(m, n);
    std::string d;
    if (!all_on(page_nodes(p, n), m, &d)) bad.push_back("alloc_on(" + std::to_string(m) + ") " + d);
    nugo::numa::free(p, n);
  }, numa_config());
  report("memory-only-node", bad.empty(),
         bad.empty() ? "node " + std::to_string(m) +
                           " (no CPUs): no P, go_on refused naming it, alloc_on lands there"
                     : joined(bad));
}

template <class F>
void from_another_node(int node, F f) {
  std::set<int> cpus;
  for (const auto& [n, c] : node_cpus)
    if (n != node) cpus.insert(c.begin(), c.end());
  if (cpus.empty()) cpus = my_affinity();
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    sched_setaffinity(0, sizeof set, &set);
    f();
  });
  t.join();
}

}  // namespace

int main() {
  page = sysconf(_SC_PAGESIZE);
  try {
    machine = nugo::topo::Topology::load("");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nugo_numa_check: cannot read this machine's topology: %s\n", e.what());
    return 2;
  }
  for (const auto& n : machine.nodes) {
    if (n.pus.empty()) {
      memory_only.push_back(n.os_index);
      continue;
    }
    for (int pu : n.pus) node_cpus[n.os_index].insert(machine.pus[pu].os_index);
  }
  std::printf("nugo_numa_check: %zu node(s) with CPUs, %zu memory-only; %s\n", node_cpus.size(),
              memory_only.size(), machine.source.c_str());
  try {
    check_binding();
    check_woken_home();
    check_stacks();
    check_memory();
    check_memory_only();
  } catch (const std::exception& e) {
    report("exception", false, e.what());
  }
  std::printf("nugo_numa_check: %d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
