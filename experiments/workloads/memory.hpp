// The memory-bound workloads with data placement (experiments/workloads/README.md): a
// STREAM-like triad (even, and skewed three to one across nodes), a 2-D Jacobi heat stencil, a
// histogram and a sparse matrix-vector product whose rows' degrees are skewed. Their data (a
// total size, the same at every P count) is split into one part per node that has Ps, each
// allocated on its node (nugo::numa::alloc_on). The goroutines that work on a part are started
// on its node (go_on) or, for the ablation, without a node (go): the run's placement, below. On an emulated topology the memory is ordinary memory, so nothing is
// slower when it is remote; the latency model below (off unless asked for) charges what a
// remote penalty says remote memory costs. Each function must be called from a goroutine.
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
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "work.hpp"

namespace workloads {

// ---- the emulated memory latency model (README, "Memory speed on emulated topologies") ----
//
// Every block of a kernel's data has a home node, the node its NodeArray was allocated on. A
// goroutine that works on a block while it runs on a P of another node waits, busy, for the
// block's local cost x (penalty(distance) - 1) more, so that the block costs its local cost x
// penalty(distance) in all. The penalty is a parameter of the run: at the nearest remote
// distance it is the ratio asked for (--latency-penalty: 1.0 charges nothing, 1.74 is remote
// over local DRAM latency measured on 2-socket Cascade Lake), and farther nodes pay in
// proportion to their distance above local (ACPI's 10): penalty(d) = 1 + (R - 1) (d - 10) /
// (d_nearest - 10). Without a ratio it is the distance matrix's own, d / 10.
//
// The local cost is measured as the blocks run (by_blocks: on an emulated topology all memory
// is this machine's), so the charge follows the cache state, the data size and the load of the
// moment, as a real remote access would. The node a goroutine runs on is read once per block
// (nugo::this_g::node()): a goroutine that moves in the middle of a block pays for the whole
// block where it began it.
//
// The model is a property of the run, not of the runtime: nugo-workload turns it on with
// --latency-model (by default on emulated topologies with more than one node) and reports it,
// and the penalty, in its JSON, so that no result obtained with it can pass for one measured
// on hardware. Its speedups are projections under the model.
class LatencyModel {
 public:
  // Off until turned on: on, with the distance matrix of `t` (an emulated topology: on real
  // hardware remote memory is already slower, and charging it again would count it twice)
  // and `penalty`, the ratio at the nearest remote distance (0: d / 10, the matrix's own).
  // Before any goroutine runs.
  void turn_on(const nugo::topo::Topology& t, double penalty = 0) {
    on_ = true;
    int max_os = 0, nearest = 0;
    for (const auto& n : t.nodes) max_os = std::max(max_os, n.os_index);
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      for (std::size_t j = 0; j < t.nodes.size(); ++j)
        if (t.distance[i][j] > 10 && (nearest == 0 || t.distance[i][j] < nearest)) nearest = t.distance[i][j];
    penalty_ = penalty > 0 ? penalty : nearest > 0 ? nearest / 10.0 : 1.0;
    extra_.assign(static_cast<std::size_t>(max_os + 1), std::vector<double>(static_cast<std::size_t>(max_os + 1), 0));
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      for (std::size_t j = 0; j < t.nodes.size(); ++j) {
        const int d = t.distance[i][j];
        const double extra = d <= 10 || nearest <= 10 ? 0.0
                             : penalty > 0            ? (penalty - 1) * (d - 10) / (nearest - 10)
                                                      : (d - 10) / 10.0;
        extra_[static_cast<std::size_t>(t.nodes[i].os_index)][static_cast<std::size_t>(t.nodes[j].os_index)] = extra;
      }
  }
  bool on() const { return on_; }
  // The cost of a remote block over a local one at the nearest remote distance.
  double penalty() const { return penalty_; }

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
        const double extra = extra_[static_cast<std::size_t>(here)][static_cast<std::size_t>(home)];
        const auto charge = std::chrono::duration_cast<Clock::duration>(std::min(least, cost) * extra);
        // In virtual time the charge is added to the virtual CPU's clock; else spent here.
        if (charge_virtual(charge)) {
          last = Clock::now();
        } else {
          const auto until = now + charge;
          while ((last = Clock::now()) < until) __builtin_ia32_pause();
        }
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
  double penalty_ = 1.0;
  std::vector<std::vector<double>> extra_;  // [here][home]: penalty - 1, by OS node number
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
//
// With heavy > 1 the first node's share counts `heavy` times (the skewed kernels: three times
// the blocks on one node), and its goroutines with it, so that every goroutine has the same
// amount of work and the other nodes, done first, must take the first node's work or idle.
inline std::vector<NodeShare> shares(std::size_t total, int per_p, int heavy = 1) {
  const nugo::Stats st = nugo::stats();
  std::vector<NodeShare> out;
  std::size_t weight = 0, before = 0;
  for (std::size_t k = 0; k < st.nodes.size(); ++k)
    weight += st.nodes[k].ps.size() * static_cast<std::size_t>(k == 0 ? heavy : 1);
  for (std::size_t k = 0; k < st.nodes.size(); ++k) {
    const std::size_t w = st.nodes[k].ps.size() * static_cast<std::size_t>(k == 0 ? heavy : 1);
    const std::size_t lo = total * before / weight;
    before += w;
    const std::size_t hi = total * before / weight;
    out.push_back({st.nodes[k].node, hi - lo, per_p * static_cast<int>(w)});
  }
  return out;
}

// ---- where the workers start: the placement of the run (--placement) ----
//
//   go_on  each worker is started with nugo::go_on(its data's node): the program says where
//          its work belongs (the default; how a NUMA-aware nugo program is written). Flat mode
//          ignores the node; NUMA mode queues it on the node's pinned queue (NUGO_NUMA
//          go_on=pinned, the default: it starts there) or its global queue (go_on=queued:
//          another node may take it, as the stealing rules allow).
//   go     each worker is started with nugo::go by the main goroutine: the program says
//          nothing, and the workers start where it runs or wherever a thief takes them.
// With NUGO_NUMA steal=flat|nearest this makes the ablation of scripts/pipeline/sweep.py, which
// separates placement from the stealing hierarchy. Counted per run, to show what each arm did:
// the workers, and how many of them began their work on their data's node (the runtime's
// statistics count the goroutines it placed: `placed`).
enum class Placement { go_on, go };
inline const char* name(Placement p) { return p == Placement::go_on ? "go_on" : "go"; }

struct PlacementCounts {
  Placement how = Placement::go_on;
  std::atomic<std::uint64_t> workers{0}, started_home{0};
};
inline PlacementCounts& placement() {
  static PlacementCounts counts;
  return counts;
}

// Memory on one node, freed with it. Before it is freed, when page_check() is on (a real
// topology: on an emulated one nothing is bound), the node of its pages is asked of the kernel
// (move_pages without a target: a query), a sample of at most 1,024 pages spread over it, and
// counted: the fraction on their intended node is the run's evidence that its data was where
// the model assumes, on hardware.
struct PageCheck {
  bool on = false;
  std::atomic<std::uint64_t> pages{0}, on_node{0};
};
inline PageCheck& page_check() {
  static PageCheck check;
  return check;
}

template <class T>
class NodeArray {
 public:
  NodeArray(int node, std::size_t n)
      : node_(node), n_(n), p_(static_cast<T*>(nugo::numa::alloc_on(node, bytes()))) {}
  ~NodeArray() {
    if (page_check().on) count_pages();
    nugo::numa::free(p_, bytes());
  }
  NodeArray(const NodeArray&) = delete;
  NodeArray& operator=(const NodeArray&) = delete;
  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) const { return p_[i]; }

 private:
  std::size_t bytes() const { return std::max<std::size_t>(n_, 1) * sizeof(T); }
  void count_pages() const {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pages = (bytes() + page - 1) / page, sample = std::min<std::size_t>(pages, 1024);
    std::vector<void*> where(sample);
    std::vector<int> status(sample, -1);
    for (std::size_t i = 0; i < sample; ++i)
      where[i] = reinterpret_cast<char*>(p_) + (pages * i / sample) * page;
    if (syscall(SYS_move_pages, 0, sample, where.data(), nullptr, status.data(), 0) != 0) return;
    std::uint64_t present = 0, home = 0;
    for (int st : status) {
      present += st >= 0;  // -ENOENT: never touched
      home += st == node_;
    }
    page_check().pages.fetch_add(present, std::memory_order_relaxed);
    page_check().on_node.fetch_add(home, std::memory_order_relaxed);
  }

  int node_;
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

// Runs f(share index, range) in each share's goroutines, each given its part of the share's
// elements and started as the run's placement says, and waits for all of them.
template <class F>
void on_every_node(const std::vector<NodeShare>& shares, F f) {
  PlacementCounts& counts = placement();
  nugo::WaitGroup joined;
  auto worker = [&](std::size_t k, int j) {
    counts.workers.fetch_add(1, std::memory_order_relaxed);
    counts.started_home.fetch_add(nugo::this_g::node() == shares[k].node, std::memory_order_relaxed);
    f(k, split(shares[k].n, static_cast<std::size_t>(shares[k].goroutines), static_cast<std::size_t>(j)));
    joined.done();
  };
  for (std::size_t k = 0; k < shares.size(); ++k) {
    joined.add(shares[k].goroutines);
    for (int j = 0; j < shares[k].goroutines; ++j) {
      if (counts.how == Placement::go_on)
        nugo::go_on(shares[k].node, [&worker, k, j] { worker(k, j); });
      else
        nugo::go([&worker, k, j] { worker(k, j); });
    }
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
      (*b[k])[i] = triad_b(base[k] + i);
      (*c[k])[i] = 2.0;
    }
  });
  auto kernel = [&](std::size_t k, std::size_t lo, std::size_t hi) { triad_range(a[k]->data(), b[k]->data(), c[k]->data(), lo, hi); };
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
      ok = ok && (*a[k])[i] == triad_want(base[k] + i);
  return {ok, triad_bytes(total, passes), seconds};
}

// ---- stencil: Jacobi iterations of the 2-D heat equation ----
//
// An n x n grid, its rows split into one band per node in proportion to its Ps (allocated
// there, with a halo row on each side copied from the neighbours before each sweep). Each
// sweep spawns its goroutines afresh, one per block of rows, started on the block's node:
// where they run is the scheduler's choice every sweep, not a fixed assignment.
//
// The grid starts uneven everywhere and the result is the same bits at any P count (work.hpp),
// so the check is exact: equal to a serial run of the same sweeps (after the timer),
// mirror-symmetric, and within [0, 100].

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
      stencil_row(g + lr * n, g + (lr + 1) * n, g + (lr + 2) * n, out + (lr + 1) * n, n);
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

  const std::vector<double> g = stencil_serial(n, sweeps);
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
  return {ok, stencil_cells(n, sweeps), seconds, checksum};
}

// ---- histogram: 256 buckets over node-local input ----
//
// Each node's part of the input lives on the node; goroutines count a chunk each into a
// private histogram and merge it under a mutex. The input is histogram_input(i), i the
// element's global index, which puts exactly total / 256 in every bucket (work.hpp).

inline KernelResult histogram(std::size_t total, int passes, int per_p) {
  total = histogram_total(total);
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
    for (std::size_t i = r.lo; i < r.hi; ++i) (*input[k])[i] = histogram_input(base[k] + i);
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

// ---- spmv: y = A x, A sparse with skewed row degrees, rows partitioned by node ----
//
// A square matrix of `rows` rows in compressed sparse rows. Row r has 2 + 62 (1 - r/rows)^2
// non-zeros (64 for the first row, 2 for the last: a few heavy rows and a long light tail, as
// the vertex degrees of a graph whose numbering follows its degrees), in scattered columns. The
// rows are split over the nodes in proportion to their Ps, each node's rows (their pointers,
// columns, values and their part of y) on the node, with a copy of x on each node; so on 2
// nodes the first holds 5.6 times the non-zeros of the second, and on the same nodes the work
// is as uneven as the degrees make it. Each node's rows are worked in `per_p` chunks of equal
// rows per P: the chunks are uneven too, and the nodes done first must take the others' or
// idle. A block of the model is 32 rows, whose degrees change slowly, so that the least block
// cost so far (the model's local cost) is close to each block's own.
//
// The check is exact: every y[r] equals a serial product's, summed in the same order.

inline KernelResult spmv(std::size_t rows, int passes, int per_p) {
  std::vector<NodeShare> parts = shares(rows, per_p);
  std::erase_if(parts, [](const NodeShare& part) { return part.n == 0; });
  struct Part {
    std::size_t first;  // its first row
    std::unique_ptr<NodeArray<std::size_t>> ptr;  // n + 1 offsets into col and val
    std::unique_ptr<NodeArray<std::uint32_t>> col;
    std::unique_ptr<NodeArray<double>> val, x, y;
  };
  std::vector<Part> part(parts.size());
  std::size_t first = 0, nonzeros = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    std::size_t nnz = 0;
    for (std::size_t r = first; r < first + parts[k].n; ++r) nnz += spmv_degree(rows, r);
    const int node = parts[k].node;
    part[k] = {first, std::make_unique<NodeArray<std::size_t>>(node, parts[k].n + 1),
               std::make_unique<NodeArray<std::uint32_t>>(node, nnz), std::make_unique<NodeArray<double>>(node, nnz),
               std::make_unique<NodeArray<double>>(node, rows), std::make_unique<NodeArray<double>>(node, parts[k].n)};
    first += parts[k].n;
    nonzeros += nnz;
  }
  // The offsets here (serially: a prefix sum), the rest by the node's own goroutines.
  for (Part& p : part) {
    std::size_t at = 0;
    for (std::size_t lr = 0; lr + 1 < p.ptr->size(); ++lr) {
      (*p.ptr)[lr] = at;
      at += spmv_degree(rows, p.first + lr);
    }
    (*p.ptr)[p.ptr->size() - 1] = at;
  }
  on_every_node(parts, [&](std::size_t k, Range r) {
    Part& p = part[k];
    spmv_fill(rows, p.first, p.ptr->data(), p.col->data(), p.val->data(), p.y->data(), r.lo, r.hi);
    // and the same share of the node's own copy of x (a copy is read by its node alone)
    const std::size_t n = parts[k].n;
    for (std::size_t i = rows * r.lo / n; i < rows * r.hi / n; ++i) (*p.x)[i] = spmv_x(i);
  });
  auto product = [&](std::size_t k, std::size_t lo, std::size_t hi) {
    const Part& p = part[k];
    spmv_rows(p.ptr->data(), p.col->data(), p.val->data(), p.x->data(), p.y->data(), lo, hi);
  };
  auto start = Clock::now();
  for (int pass = 0; pass < passes; ++pass)
    on_every_node(parts, [&](std::size_t k, Range r) {
      by_blocks(parts[k].node, r.lo, r.hi, 32, [&](std::size_t lo, std::size_t hi) { product(k, lo, hi); });
    });
  const double seconds = seconds_since(start);
  bool ok = true;
  double checksum = 0;
  for (const Part& p : part)
    for (std::size_t lr = 0; lr + 1 < p.ptr->size(); ++lr) {
      const std::size_t r = p.first + lr;
      const double want = spmv_want(rows, r);
      ok = ok && (*p.y)[lr] == want;
      checksum += want;
    }
  // Each non-zero: its value and column read, and the x it names.
  return {ok, static_cast<double>(nonzeros) * passes, seconds, checksum};
}

}  // namespace workloads
