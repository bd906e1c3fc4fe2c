// Per-node memory (<nugo/numa.hpp>, numa/src/alloc.cpp): placement and binding on this machine,
// errors, the STL allocator, concurrent use from goroutines and plain threads, and the node
// view: the emulated topology of a running runtime, and the machine's again after it.
//
// The development machine has one NUMA node (node 0), so "on node 0" is checked twice: where
// the kernel put the pages (get_mempolicy MPOL_F_NODE), and the policy of the mapping (MPOL_BIND
// to node 0, MPOL_INTERLEAVE), which is what would put them elsewhere on a larger machine. Where
// the kernel cannot bind (no NUMA support, or a sandbox forbids mbind) the policy checks are
// skipped with a warning.
#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <nugo/nugo.hpp>
#include <nugo/numa.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "memory.hpp"  // numa::detail::local_node
#include "nodes.hpp"   // the node view and binding, below the scheduler

namespace numa = nugo::numa;
using nugo::topo::Topology;

namespace {

const char* const kTwoNodes = "synthetic:pack:2 numa:1 core:2 pu:1";

std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// The node holding the (touched) page at p, or -1.
int node_of(const void* p) {
  int node = -1;
  if (get_mempolicy(&node, nullptr, 0, const_cast<void*>(p), MPOL_F_NODE | MPOL_F_ADDR) != 0)
    return -1;
  return node;
}

struct Policy {
  int mode = -1;           // MPOL_DEFAULT, MPOL_BIND, MPOL_INTERLEAVE, ...; -1: the call failed
  unsigned long mask = 0;  // nodes 0-63
};

// The policy of the mapping holding p.
Policy policy_of(const void* p) {
  unsigned long mask[16] = {};  // maxnode must cover the kernel's node count (up to 1024)
  Policy pol;
  if (get_mempolicy(&pol.mode, mask, sizeof(mask) * 8, const_cast<void*>(p), MPOL_F_ADDR) != 0)
    pol.mode = -1;
  pol.mask = mask[0];
  return pol;
}

// Whether this kernel lets us bind at all (alloc.cpp runs unbound where it does not).
bool can_bind() {
  static const bool yes = [] {
    void* p = mmap(nullptr, page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned long mask[2] = {1, 0};
    const bool ok = mbind(p, page(), MPOL_BIND, mask, sizeof(mask) * 8, 0) == 0;
    munmap(p, page());
    if (!ok) WARN("mbind is not available here: memory policies are not checked");
    return ok;
  }();
  return yes;
}

// Every page of [p, p + bytes) (touched) on node 0.
bool all_on_node0(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t off = 0; off < bytes; off += page())
    if (node_of(b + off) != 0) return false;
  return node_of(b + bytes - 1) == 0;
}

std::string what_of(int node, std::size_t bytes) {
  try {
    void* p = numa::alloc_on(node, bytes);
    numa::free(p, bytes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

// A block filled with its own tag, so that two blocks that overlap are seen when checked.
struct Tagged {
  unsigned char* p;
  std::size_t bytes;
  std::uint64_t tag;
};

void fill(const Tagged& b) {
  std::size_t i = 0;
  for (; i + 8 <= b.bytes; i += 8) std::memcpy(b.p + i, &b.tag, 8);
  for (; i < b.bytes; ++i) b.p[i] = static_cast<unsigned char>(b.tag);
}

bool intact(const Tagged& b) {
  std::size_t i = 0;
  for (; i + 8 <= b.bytes; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, b.p + i, 8);
    if (word != b.tag) return false;
  }
  for (; i < b.bytes; ++i)
    if (b.p[i] != static_cast<unsigned char>(b.tag)) return false;
  return true;
}

// Allocates, fills, checks and frees blocks of random sizes (mostly small, some a few pages,
// a few up to 64 KiB) with every placement; returns the number of damaged blocks.
int churn(int worker, int rounds, bool in_goroutine) {
  std::mt19937 rng(1234 + worker);
  std::vector<Tagged> live;
  int damaged = 0;
  std::uint64_t count = 0;
  auto release = [&](std::size_t i) {
    if (!intact(live[i])) ++damaged;
    numa::free(live[i].p, live[i].bytes);
    live[i] = live.back();
    live.pop_back();
  };
  for (int round = 0; round < rounds; ++round) {
    if (live.size() == 32 || (!live.empty() && rng() % 2 == 0)) {
      release(rng() % live.size());
    } else {
      const unsigned kind = rng() % 100;
      const std::size_t bytes = kind < 80   ? rng() % 2049
                                : kind < 95 ? 2049 + rng() % 6000
                                            : rng() % (64 << 10);
      void* p = nullptr;
      switch (rng() % 3) {
        case 0: p = numa::alloc_on(0, bytes); break;
        case 1: p = numa::alloc_local(bytes); break;
        default: p = numa::alloc_interleaved(bytes); break;
      }
      live.push_back({static_cast<unsigned char*>(p), bytes,
                      (std::uint64_t{static_cast<unsigned>(worker)} << 40) | ++count});
      fill(live.back());
    }
    if (in_goroutine && round % 64 == 0) nugo::yield();
  }
  while (!live.empty()) release(live.size() - 1);
  return damaged;
}

}  // namespace

TEST_CASE("alloc_on(0) gives writable memory on node 0, bound to it", "[numa_alloc]") {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{16}, std::size_t{100}, std::size_t{2048},
                            std::size_t{4096}, std::size_t{1} << 20}) {
    CAPTURE(bytes);
    void* p = numa::alloc_on(0, bytes);
    REQUIRE(p != nullptr);
    const std::size_t align =
        std::min<std::size_t>(std::bit_ceil(std::max<std::size_t>(bytes, 16)), 4096);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
    std::memset(p, 0xa5, bytes);
    CHECK(all_on_node0(p, bytes));
    if (can_bind()) {
      const Policy pol = policy_of(p);
      CHECK(pol.mode == MPOL_BIND);
      CHECK(pol.mask == 1);
    }
    numa::free(p, bytes);
  }
}

TEST_CASE("a node outside the view is an invalid_argument naming it and the valid nodes",
          "[numa_alloc]") {
  for (int node : {7, -1}) {
    for (std::size_t bytes : {std::size_t{64}, std::size_t{1} << 20}) {
      const std::string what = what_of(node, bytes);
      CAPTURE(what);
      CHECK(what.find("node " + std::to_string(node)) != std::string::npos);
      CHECK(what.find("valid nodes: 0") != std::string::npos);
    }
  }
  std::vector<int, numa::Allocator<int>> v(numa::Allocator<int>(7));
  CHECK_THROWS_AS(v.push_back(1), std::invalid_argument);
}

TEST_CASE("zero bytes gives unique pointers, and freeing nullptr does nothing", "[numa_alloc]") {
  void* a = numa::alloc_on(0, 0);
  void* b = numa::alloc_on(0, 0);
  void* c = numa::alloc_local(0);
  void* d = numa::alloc_interleaved(0);
  CHECK(a != nullptr);
  CHECK(b != nullptr);
  CHECK(a != b);
  CHECK(c != nullptr);
  CHECK(d != nullptr);
  numa::free(a, 0);
  numa::free(b, 0);
  numa::free(c, 0);
  numa::free(d, 0);
  numa::free(nullptr, 0);
  numa::free(nullptr, 100);
  numa::free(nullptr, 1 << 20);
}

TEST_CASE("alloc_local and alloc_interleaved outside a runtime", "[numa_alloc]") {
  CHECK(numa::detail::local_node() == 0);
  for (std::size_t bytes : {std::size_t{1}, std::size_t{2048}, std::size_t{4096},
                            std::size_t{1} << 20}) {
    CAPTURE(bytes);
    void* local = numa::alloc_local(bytes);
    void* spread = numa::alloc_interleaved(bytes);
    std::memset(local, 1, bytes);
    std::memset(spread, 2, bytes);
    CHECK(all_on_node0(local, bytes));
    CHECK(all_on_node0(spread, bytes));
    if (can_bind()) {
      CHECK(policy_of(local).mode == MPOL_BIND);
      CHECK(policy_of(local).mask == 1);
      CHECK(policy_of(spread).mode == MPOL_INTERLEAVE);
      CHECK(policy_of(spread).mask == 1);
    }
    numa::free(local, bytes);
    numa::free(spread, bytes);
  }
}

TEST_CASE("Allocator works with STL containers", "[numa_alloc]") {
  using A = numa::Allocator<int>;
  static_assert(std::is_same_v<std::allocator_traits<A>::rebind_alloc<double>,
                               numa::Allocator<double>>);
  CHECK(A(0) == numa::Allocator<double>(0));
  CHECK(A(0) != A(1));
  CHECK(A(0) != A::local());
  CHECK(A() == A::local());
  CHECK(A::interleaved() == numa::Allocator<char>::interleaved());
  CHECK(A::interleaved() != A::local());
  CHECK(numa::Allocator<double>(A(3)).node() == 3);

  std::vector<int, A> v{A(0)};
  for (int i = 0; i < 100000; ++i) v.push_back(i);
  long long sum = 0;
  for (int x : v) sum += x;
  CHECK(sum == 99999LL * 100000 / 2);
  CHECK(all_on_node0(v.data(), v.size() * sizeof(int)));
  if (can_bind()) CHECK(policy_of(v.data()).mode == MPOL_BIND);

  // A move carries the buffer, and with it the allocator that says where the buffer lives.
  std::vector<int, A> w{A::interleaved()};
  w = std::move(v);
  CHECK(w.get_allocator() == A(0));
  CHECK(w.size() == 100000);

  // Node-based containers rebind the allocator to their nodes.
  std::map<int, int, std::less<int>, numa::Allocator<std::pair<const int, int>>> m{
      numa::Allocator<std::pair<const int, int>>::local()};
  for (int i = 0; i < 1000; ++i) m[i] = i * i;
  CHECK(m.size() == 1000);
  CHECK(m[999] == 999 * 999);

  struct alignas(64) Line {
    char bytes[64];
  };
  std::vector<Line, numa::Allocator<Line>> lines(5, Line{}, numa::Allocator<Line>::interleaved());
  CHECK(reinterpret_cast<std::uintptr_t>(lines.data()) % 64 == 0);
}

TEST_CASE("goroutines and plain threads allocating at once get disjoint blocks", "[numa_alloc]") {
  constexpr int kGoroutines = 8;
  constexpr int kThreads = 2;
  constexpr int kRounds = 2000;
  std::atomic<int> damaged{0};
  std::atomic<bool> started{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!started.load()) std::this_thread::yield();  // overlap the goroutines
      damaged += churn(kGoroutines + t, kRounds, false);
    });
  nugo::Config cfg;
  cfg.procs = 2;
  nugo::run([&] {
    started = true;
    nugo::WaitGroup wg;
    wg.add(kGoroutines);
    for (int g = 0; g < kGoroutines; ++g)
      nugo::go([&, g] {
        damaged += churn(g, kRounds, true);
        wg.done();
      });
    wg.wait();
  }, cfg);
  for (std::thread& t : threads) t.join();
  CHECK(damaged.load() == 0);
}

TEST_CASE("inside a run on an emulated 2-node machine nodes 0 and 1 exist and nothing is bound",
          "[numa_alloc]") {
  nugo::Config cfg;
  cfg.topology = kTwoNodes;
  cfg.mode = nugo::Mode::numa;
  cfg.procs = 2;
  Policy small, large;
  std::string failed;  // an exception escaping the goroutine would end the process
  std::string what;
  int local = -2, mine = -2;
  nugo::run([&] {
    try {
      void* p = numa::alloc_on(1, 100);
      void* q = numa::alloc_on(1, 1 << 20);
      std::memset(p, 1, 100);
      std::memset(q, 1, 1 << 20);
      small = policy_of(p);
      large = policy_of(q);
      numa::free(p, 100);
      numa::free(q, 1 << 20);
      void* r = numa::alloc_local(5000);
      numa::free(r, 5000);
    } catch (const std::exception& e) {
      failed = e.what();
    }
    try {
      numa::free(numa::alloc_on(5, 64), 64);
    } catch (const std::invalid_argument& e) {
      what = e.what();
    }
    local = numa::detail::local_node();
    mine = nugo::this_g::node();
  }, cfg);
  CHECK(failed == "");
  CHECK(small.mode == MPOL_DEFAULT);
  CHECK(large.mode == MPOL_DEFAULT);
  CAPTURE(what);
  CHECK(what.find("node 5") != std::string::npos);
  CHECK(what.find("valid nodes: 0, 1") != std::string::npos);
  CHECK((mine == 0 || mine == 1));
  CHECK(local == mine);  // a goroutine's local node is its P's
  // The machine's view again.
  CHECK(what_of(1, 100).find("node 1") != std::string::npos);
  CHECK(what_of(1, 1 << 20).find("node 1") != std::string::npos);
}

// White box: the view as base/nodes.hpp publishes it, without a runtime.
TEST_CASE("a published view decides which nodes exist and where a thread's local node is",
          "[numa_alloc]") {
  const Topology two = Topology::load(kTwoNodes);
  nugo::detail::publish_topology(&two, false);
  void* kept = numa::alloc_on(1, 64);  // freed under the next view
  std::memset(kept, 3, 64);
  CHECK(policy_of(kept).mode == MPOL_DEFAULT);
  CHECK_THROWS_AS(numa::alloc_on(2, 64), std::invalid_argument);
  // A plain thread's node on an emulated view is the first node with CPUs, whatever real CPU
  // it runs on: that CPU stands for PUs of several nodes folded onto it, so it says nothing.
  int first_cpu_node = -1;
  for (const auto& node : two.nodes)
    if (first_cpu_node < 0 && !node.pus.empty()) first_cpu_node = node.os_index;
  for (int cpu : two.real_cpus) {
    const int expected = first_cpu_node;
    int got = -2;
    std::thread([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) == 0) got = numa::detail::local_node();
      else got = expected;  // not allowed here: nothing to check
    }).join();
    CAPTURE(cpu);
    CHECK(got == expected);
  }
  void* range = mmap(nullptr, 4 * page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
  REQUIRE(range != MAP_FAILED);
  CHECK(nugo::detail::bind_range(range, 4 * page(), 1));  // emulated: binds nothing
  CHECK(policy_of(range).mode == MPOL_DEFAULT);

  nugo::detail::publish_topology(nullptr, false);
  numa::free(kept, 64);
  CHECK_THROWS_AS(numa::alloc_on(1, 64), std::invalid_argument);
  errno = 0;
  CHECK_FALSE(nugo::detail::bind_range(range, 4 * page(), 7));
  CHECK(errno == EINVAL);
  CHECK_FALSE(nugo::detail::bind_range(static_cast<char*>(range) + 8, page(), 0));
  CHECK(nugo::detail::bind_range(range, 4 * page(), 0) == can_bind());
  if (can_bind()) CHECK(policy_of(range).mode == MPOL_BIND);
  munmap(range, 4 * page());

  // The machine's own topology published: bound as without one.
  const Topology machine = Topology::load("");
  nugo::detail::publish_topology(&machine, false);
  void* p = numa::alloc_on(0, 5000);
  std::memset(p, 4, 5000);
  if (can_bind()) CHECK(policy_of(p).mode == MPOL_BIND);
  numa::free(p, 5000);
  nugo::detail::publish_topology(nullptr, false);
}
