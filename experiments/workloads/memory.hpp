// The memory-bound workloads with data placement (experiments/workloads/README.md): a
// STREAM-like triad, a 2-D Jacobi heat stencil and a histogram. Their data (a total size, the
// same at every P count) is split into one part per node that has Ps, in proportion to its
// Ps, each allocated on its node (nugo::numa::alloc_on), and each part is worked on by
// goroutines started on that node (nugo::go_on), which the scheduler may still move. On an
// emulated topology the memory is ordinary memory, so nothing is slower when it is remote;
// the latency model below (off unless asked for) charges what the distance matrix says
// remote memory costs. Each function must be called from a goroutine.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <nugo/nugo.hpp>
#include <nugo/topology.hpp>
#include <vector>

namespace workloads {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---- the emulated memory latency model (README, "Memory speed on emulated topologies") ----
//
// Every block of a kernel's data has a home node, the node its NodeArray was allocated on. A
// goroutine that works on a block while it runs on a P of another node waits, busy, for the
// block's local cost x (distance - 10) / 10 more, so that the block costs local x distance / 10
// in all, the ratio the topology's distance matrix states (10 is local, by ACPI's convention).
// The local cost is measured as the blocks run (by_blocks: on an emulated topology all memory
// is this machine's), so the charge follows the cache state, the data size and the load of the
// moment, as a real remote access would. The node a goroutine
// runs on is read once per block (nugo::this_g::node()): a goroutine that moves in the middle
// of a block pays for the whole block where it began it.
//
// The model is a property of the run, not of the runtime: nugo-workload turns it on with
// --latency-model (by default on emulated topologies with more than one node) and reports it in
// its JSON, so that no result obtained with it can pass for one measured on hardware.
class LatencyModel {
 public:
  // Off until turned on: on, with the distance matrix of `t` (an emulated topology: on real hardware remote memory
  // is already slower, and charging it again would count it twice). Before any goroutine runs.
  void turn_on(const nugo::topo::Topology& t) {
    on_ = true;
    int max_os = 0;
    for (const auto& n : t.nodes) max_os = std::max(max_os, n.os_index);
    extra_tenths_.assign(static_cast<std::size_t>(max_os + 1), std::vector<int>(static_cast<std::size_t>(max_os + 1), 0));
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      for (std::size_t j = 0; j < t.nodes.size(); ++j)
        extra_tenths_[static_cast<std::size_t>(t.nodes[i].os_index)][static_cast<std::size_t>(t.nodes[j].os_index)] =
            std::max(0, t.distance[i][j] - 10);
  }
  bool on() const { return on_; }

  // Runs body(lo, hi) over [lo, hi) in blocks of `block` elements whose home is `home` (an OS
  // node number), charging each remote one, and adds the counts.
  //
  // A block's local cost is the least any block of this call has cost so far: the blocks are
  // the same size, and the least is the one the OS did not interrupt (a block timed across a
  // deschedule, a preemption or a steal of the CPU by another busy-wait would otherwise be
  // charged for that time too, and only in the mode that has remote blocks). One clock read per
  // block: a block's time runs from the previous block's end, its charge included.
  template <class F>
  void by_blocks(int home, std::size_t lo, std::size_t hi, std::size_t block, F body) {
    if (!on_) {
      body(lo, hi);
      return;
    }
    std::uint64_t blocks = 0, remote = 0, block_ns = 0;
    auto least = Clock::duration::max();
    auto last = Clock::now();
    for (std::size_t b = lo; b < hi; b += block) {
      const int here = nugo::this_g::node();
      body(b, std::min(hi, b + block));
      const auto now = Clock::now();
      const auto cost = now - last;
      last = now;
      if (b + block <= hi) least = std::min(least, cost);  // a short last block is not a sample
      ++blocks;
      block_ns += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(cost).count());
      if (here >= 0 && here != home) {
        ++remote;
        const int tenths = extra_tenths_[static_cast<std::size_t>(here)][static_cast<std::size_t>(home)];
        const auto until = now + std::min(least, cost) * tenths / 10;
        while ((last = Clock::now()) < until) __builtin_ia32_pause();
      }
    }
    blocks_.fetch_add(blocks, std::memory_order_relaxed);
    remote_.fetch_add(remote, std::memory_order_relaxed);
    block_ns_.fetch_add(block_ns, std::memory_order_relaxed);
  }

  std::uint64_t blocks() const { return blocks_.load(); }
  std::uint64_t remote_blocks() const { return remote_.load(); }
  // The mean time of a block as worked on, before any charge (interruptions included).
  double block_ns() const { return blocks_ ? static_cast<double>(block_ns_.load()) / static_cast<double>(blocks_.load()) : 0; }

 private:
  bool on_ = false;
  std::vector<std::vector<int>> extra_tenths_;  // [here][home]: distance - 10, by OS node number
  std::atomic<std::uint64_t> blocks_{0}, remote_{0}, block_ns_{0};
};

// The model of this process (nugo-workload sets it up before the runtime starts).
inline LatencyModel& latency_model() {
  static LatencyModel model;
  return model;
}

// Runs body(lo, hi) over [lo, hi) in blocks whose home is `home`, through the model.
template <class F>
void by_blocks(int home, std::size_t lo, std::size_t hi, std::size_t block, F body) {
  latency_model().by_blocks(home, lo, hi, block, body);
}

// A node's share of a memory-bound workload: the node (the OS's number), how many of the
// elements live there, and how many goroutines work on them.
struct NodeShare {
  int node;
  std::size_t n;
  int goroutines;
};

// Splits `total` elements over the nodes that have Ps, in proportion to their Ps (so the
// problem is the same size at every P count and on every topology), with `per_p` goroutines
// per P. From the runtime's own statistics: the nodes it placed Ps on.
inline std::vector<NodeShare> shares(std::size_t total, int per_p) {
  const nugo::Stats st = nugo::stats();
  std::vector<NodeShare> out;
  std::size_t ps_before = 0, procs = static_cast<std::size_t>(st.procs);
  for (const nugo::NodeStats& n : st.nodes) {
    std::size_t lo = total * ps_before / procs;
    ps_before += n.ps.size();
    std::size_t hi = total * ps_before / procs;
    out.push_back({n.node, hi - lo, per_p * static_cast<int>(n.ps.size())});
  }
  return out;
}

// Memory on one node, freed with it.
template <class T>
class NodeArray {
 public:
  NodeArray(int node, std::size_t n)
      : n_(n), p_(static_cast<T*>(nugo::numa::alloc_on(node, std::max<std::size_t>(n, 1) * sizeof(T)))) {}
  ~NodeArray() { nugo::numa::free(p_, std::max<std::size_t>(n_, 1) * sizeof(T)); }
  NodeArray(const NodeArray&) = delete;
  NodeArray& operator=(const NodeArray&) = delete;
  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) const { return p_[i]; }

 private:
  std::size_t n_;
  T* p_;
};

// Splits [0, n) into `parts` nearly equal ranges; the i-th.
struct Range {
  std::size_t lo, hi;
};
inline Range split(std::size_t n, std::size_t parts, std::size_t i) {
  return {n * i / parts, n * (i + 1) / parts};
}

// Runs f(share index, range) in each share's goroutines, each started on the share's node and
// given its part of the share's elements, and waits for all of them.
template <class F>
void on_every_node(const std::vector<NodeShare>& shares, F f) {
  nugo::WaitGroup joined;
  for (std::size_t k = 0; k < shares.size(); ++k)
    for (int j = 0; j < shares[k].goroutines; ++j) {
      joined.add(1);
      nugo::go_on(shares[k].node, [&, k, j] {
        f(k, split(shares[k].n, static_cast<std::size_t>(shares[k].goroutines), static_cast<std::size_t>(j)));
        joined.done();
      });
    }
  joined.wait();
}

// ---- triad: a[i] = b[i] + s * c[i], STREAM's fourth kernel ----

struct KernelResult {
  bool ok;
  double work;     // bytes moved, or cells updated
  double seconds;  // the timed kernel only: not the allocation, first touch or the check
  double checksum = 0;
};

inline KernelResult triad(std::vector<NodeShare> shares, int passes) {
  constexpr double s = 3.0;
  std::vector<std::unique_ptr<NodeArray<double>>> a, b, c;
  std::size_t total = 0;
  std::erase_if(shares, [](const NodeShare& sh) { return sh.n == 0; });
  for (const NodeShare& sh : shares) {
    a.push_back(std::make_unique<NodeArray<double>>(sh.node, sh.n));
    b.push_back(std::make_unique<NodeArray<double>>(sh.node, sh.n));
    c.push_back(std::make_unique<NodeArray<double>>(sh.node, sh.n));
    total += sh.n;
  }
  // First touch on the node too, by its own goroutines (the elements' global index: the
  // values do not depend on the split).
  std::vector<std::size_t> base(shares.size(), 0);
  for (std::size_t k = 1; k < shares.size(); ++k) base[k] = base[k - 1] + shares[k - 1].n;
  on_every_node(shares, [&](std::size_t k, Range r) {
    for (std::size_t i = r.lo; i < r.hi; ++i) {
      (*a[k])[i] = 0;
      (*b[k])[i] = static_cast<double>((base[k] + i) % 1000);
      (*c[k])[i] = 2.0;
    }
  });
  auto kernel = [&](std::size_t k, std::size_t lo, std::size_t hi) {
    double* ak = a[k]->data();
    const double* bk = b[k]->data();
    const double* ck = c[k]->data();
    for (std::size_t i = lo; i < hi; ++i) ak[i] = bk[i] + s * ck[i];
  };
  constexpr std::size_t kBlock = 2048;  // 16 KiB of each array
  auto start = Clock::now();
  for (int pass = 0; pass < passes; ++pass)
    on_every_node(shares, [&](std::size_t k, Range r) {
      by_blocks(shares[k].node, r.lo, r.hi, kBlock, [&](std::size_t lo, std::size_t hi) { kernel(k, lo, hi); });
    });
  double seconds = seconds_since(start);
  bool ok = true;
  for (std::size_t k = 0; k < shares.size(); ++k)
    for (std::size_t i = 0; i < shares[k].n; ++i)
      ok = ok && (*a[k])[i] == static_cast<double>((base[k] + i) % 1000) + s * 2.0;
  return {ok, 3.0 * sizeof(double) * static_cast<double>(total) * passes, seconds};
}

// ---- stencil: Jacobi iterations of the 2-D heat equation ----
//
// An n x n grid, its rows split into one band per node in proportion to its Ps (allocated
// there, with a halo row on each side copied from the neighbours before each sweep). Each
// sweep spawns its goroutines afresh, one per block of rows, started on the block's node:
// where they run is the scheduler's choice every sweep, not a fixed assignment.
//
// The grid starts uneven everywhere (a left-right symmetric pattern inside, a hot top edge),
// so that a wrong halo, block or swap changes the result. Each cell is computed from the
// previous sweep's grid only, so the result is the same bits at any P count, and the check is
// exact: equal to a serial run of the same sweeps (after the timer), mirror-symmetric (the
// setup is, and (n + s) + (w + e) is the same sum either way), and within [0, 100].

inline double stencil_initial(std::size_t n, std::size_t r, std::size_t c) {
  if (r == 0) return c > 0 && c + 1 < n ? 100.0 : 0.0;
  if (r + 1 == n || c == 0 || c + 1 == n) return 0.0;
  return static_cast<double>((r * 131 + std::min(c, n - 1 - c) * 71) % 101);
}

inline KernelResult stencil(std::size_t n, int sweeps, int blocks_per_p) {
  std::vector<NodeShare> bands = shares(n, blocks_per_p);
  std::erase_if(bands, [](const NodeShare& b) { return b.n == 0; });  // more nodes than rows
  std::vector<Range> rows;
  std::vector<std::unique_ptr<NodeArray<double>>> cur, next;
  std::size_t first = 0;
  for (const NodeShare& band : bands) {  // band k: its rows plus a halo row on each side
    rows.push_back({first, first + band.n});
    first += band.n;
    cur.push_back(std::make_unique<NodeArray<double>>(band.node, (band.n + 2) * n));
    next.push_back(std::make_unique<NodeArray<double>>(band.node, (band.n + 2) * n));
  }
  on_every_node(bands, [&](std::size_t k, Range mine) {
    for (std::size_t lr = mine.lo; lr < mine.hi; ++lr)
      for (std::size_t c = 0; c < n; ++c)
        (*cur[k])[(lr + 1) * n + c] = (*next[k])[(lr + 1) * n + c] = stencil_initial(n, rows[k].lo + lr, c);
  });
  auto exchange_halos = [&] {
    for (std::size_t k = 0; k < bands.size(); ++k) {
      double* g = cur[k]->data();
      const std::size_t h = bands[k].n;
      if (k > 0) std::memcpy(g, cur[k - 1]->data() + bands[k - 1].n * n, n * sizeof(double));
      if (k + 1 < bands.size()) std::memcpy(g + (h + 1) * n, cur[k + 1]->data() + n, n * sizeof(double));
    }
  };
  auto sweep_rows = [&](std::size_t k, std::size_t lo, std::size_t hi) {  // band k's rows [lo, hi)
    const double* g = cur[k]->data();
    double* out = next[k]->data();
    for (std::size_t lr = lo; lr < hi; ++lr) {
      const std::size_t r = rows[k].lo + lr;
      if (r == 0 || r + 1 == n) continue;  // boundary rows stay
      const double* up = g + lr * n;
      const double* here = g + (lr + 1) * n;
      const double* down = g + (lr + 2) * n;
      double* o = out + (lr + 1) * n;
      for (std::size_t c = 1; c + 1 < n; ++c) o[c] = ((up[c] + down[c]) + (here[c - 1] + here[c + 1])) * 0.25;
    }
  };
  // A block is 8 rows (one row of a small grid is too little work to time).
  auto start = Clock::now();
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    exchange_halos();
    on_every_node(bands, [&](std::size_t k, Range mine) {
      by_blocks(bands[k].node, mine.lo, mine.hi, 8, [&](std::size_t lo, std::size_t hi) { sweep_rows(k, lo, hi); });
    });
    std::swap(cur, next);
  }
  const double seconds = seconds_since(start);

  std::vector<double> g(n * n), o(n * n);  // the serial run
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) g[r * n + c] = o[r * n + c] = stencil_initial(n, r, c);
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (std::size_t r = 1; r + 1 < n; ++r)
      for (std::size_t c = 1; c + 1 < n; ++c)
        o[r * n + c] = ((g[(r - 1) * n + c] + g[(r + 1) * n + c]) + (g[r * n + c - 1] + g[r * n + c + 1])) * 0.25;
    std::swap(g, o);
  }
  bool ok = true;
  double checksum = 0;
  for (std::size_t k = 0; k < bands.size(); ++k)
    for (std::size_t lr = 0; lr < bands[k].n; ++lr)
      for (std::size_t c = 0; c < n; ++c) {
        const std::size_t r = rows[k].lo + lr;
        const double v = (*cur[k])[(lr + 1) * n + c];
        checksum += v;
        ok = ok && v == g[r * n + c] && v == (*cur[k])[(lr + 1) * n + (n - 1 - c)] && v >= 0.0 && v <= 100.0;
      }
  return {ok, static_cast<double>((n - 2) * (n - 2)) * sweeps, seconds, checksum};
}

// ---- histogram: 256 buckets over node-local input ----
//
// Each node's part of the input lives on the node; goroutines count a chunk each into a
// private histogram and merge it under a mutex. The input is byte(37 i), i the element's
// global index: 37 is odd, so any 256 consecutive i hit every byte once, and with a total that
// is a multiple of 256 every bucket holds exactly total / 256, however the input is split.

inline KernelResult histogram(std::size_t total, int passes, int per_p) {
  total -= total % 256;
  std::vector<NodeShare> parts = shares(total, per_p);
  std::erase_if(parts, [](const NodeShare& part) { return part.n == 0; });
  std::vector<std::unique_ptr<NodeArray<std::uint8_t>>> input;
  std::vector<std::size_t> base;
  std::size_t first = 0;
  for (const NodeShare& part : parts) {
    input.push_back(std::make_unique<NodeArray<std::uint8_t>>(part.node, part.n));
    base.push_back(first);
    first += part.n;
  }
  on_every_node(parts, [&](std::size_t k, Range r) {
    for (std::size_t i = r.lo; i < r.hi; ++i) (*input[k])[i] = static_cast<std::uint8_t>(37 * (base[k] + i));
  });
  constexpr std::size_t kBlock = 64 * 1024;
  auto count_into = [&](std::uint64_t* mine, std::size_t k, std::size_t lo, std::size_t hi) {
    const std::uint8_t* p = input[k]->data();
    for (std::size_t i = lo; i < hi; ++i) ++mine[p[i]];
  };
  bool ok = true;
  double seconds = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::uint64_t buckets[256] = {};
    nugo::Mutex mu;
    auto start = Clock::now();
    on_every_node(parts, [&](std::size_t k, Range r) {
      std::uint64_t mine[256] = {};
      by_blocks(parts[k].node, r.lo, r.hi, kBlock, [&](std::size_t lo, std::size_t hi) { count_into(mine, k, lo, hi); });
      std::lock_guard lock(mu);
      for (int b = 0; b < 256; ++b) buckets[b] += mine[b];
    });
    seconds += seconds_since(start);
    for (std::uint64_t count : buckets) ok = ok && count == total / 256;
  }
  return {ok, static_cast<double>(total) * passes, seconds};
}

}  // namespace workloads
