// The memory-bound workloads with data placement (experiments/workloads/README.md): a
// STREAM-like triad, a 2-D Jacobi heat stencil and a histogram. Their data (a total size, the
// same at every P count) is split into one part per node that has Ps, in proportion to its
// Ps, each allocated on its node (nugo::numa::alloc_on), and each part is worked on by
// goroutines started on that node (nugo::go_on), which the scheduler may still move. On an emulated topology the memory is ordinary memory: without a latency model nothing
// is slower when it is remote (the README says what that means for the numbers).
// Each function must be called from a goroutine.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <nugo/nugo.hpp>
#include <vector>

namespace workloads {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

inline KernelResult triad(const std::vector<NodeShare>& shares, int passes) {
  constexpr double s = 3.0;
  std::vector<std::unique_ptr<NodeArray<double>>> a, b, c;
  std::size_t total = 0;
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
  auto start = Clock::now();
  for (int pass = 0; pass < passes; ++pass)
    on_every_node(shares, [&](std::size_t k, Range r) {
      double* ak = a[k]->data();
      const double* bk = b[k]->data();
      const double* ck = c[k]->data();
      for (std::size_t i = r.lo; i < r.hi; ++i) ak[i] = bk[i] + s * ck[i];
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
  auto start = Clock::now();
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    exchange_halos();
    on_every_node(bands, [&](std::size_t k, Range mine) {
      const double* g = cur[k]->data();
      double* out = next[k]->data();
      for (std::size_t lr = mine.lo; lr < mine.hi; ++lr) {
        const std::size_t r = rows[k].lo + lr;
        if (r == 0 || r + 1 == n) continue;  // boundary rows stay
        const double* up = g + lr * n;
        const double* here = g + (lr + 1) * n;
        const double* down = g + (lr + 2) * n;
        double* o = out + (lr + 1) * n;
        for (std::size_t c = 1; c + 1 < n; ++c) o[c] = ((up[c] + down[c]) + (here[c - 1] + here[c + 1])) * 0.25;
      }
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
  const std::vector<NodeShare> parts = shares(total, per_p);
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
  bool ok = true;
  double seconds = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::uint64_t buckets[256] = {};
    nugo::Mutex mu;
    auto start = Clock::now();
    on_every_node(parts, [&](std::size_t k, Range r) {
      std::uint64_t mine[256] = {};
      const std::uint8_t* p = input[k]->data();
      for (std::size_t i = r.lo; i < r.hi; ++i) ++mine[p[i]];
      std::lock_guard lock(mu);
      for (int b = 0; b < 256; ++b) buckets[b] += mine[b];
    });
    seconds += seconds_since(start);
    for (std::uint64_t count : buckets) ok = ok && count == total / 256;
  }
  return {ok, static_cast<double>(total) * passes, seconds};
}

}  // namespace workloads
