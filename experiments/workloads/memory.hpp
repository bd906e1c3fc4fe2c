// The memory-bound workloads with data placement (experiments/workloads/README.md): a
// STREAM-like triad, a 2-D Jacobi heat stencil and a histogram. Their data is split into one
// part per node that has Ps, each allocated on its node (nugo::numa::alloc_on), and each part
// is worked on by goroutines started on that node (nugo::go_on), which the scheduler may still
// move. On an emulated topology the memory is ordinary memory: without a latency model nothing
// is slower when it is remote (the README says what that means for the numbers).
// Each function must be called from a goroutine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nugo/nugo.hpp>
#include <stdexcept>
#include <vector>

namespace workloads {

// The OS numbers of the nodes that have Ps in the running runtime, in order: go_on refuses a
// node without a P (or without CPUs), so a goroutine started on each one says which do.
inline std::vector<int> nodes_with_ps() {
  std::vector<int> nodes;
  for (const nugo::topo::Node& n : nugo::topo::Topology::load(nugo::Config::from_env().topology).nodes) {
    try {
      nugo::go_on(n.os_index, [] {});
      nodes.push_back(n.os_index);
    } catch (const std::invalid_argument&) {
    }
  }
  return nodes;
}

// Memory on one node, freed with it.
template <class T>
class NodeArray {
 public:
  NodeArray(int node, std::size_t n)
      : n_(n), p_(static_cast<T*>(nugo::numa::alloc_on(node, n * sizeof(T)))) {}
  ~NodeArray() { nugo::numa::free(p_, n_ * sizeof(T)); }
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

// Runs f(node_index, range) in `per_node` goroutines per node, each started on its node,
// over a part of [0, part_size), and waits for all of them.
template <class F>
void on_every_node(const std::vector<int>& nodes, int per_node, std::size_t part_size, F f) {
  nugo::WaitGroup joined;
  for (std::size_t k = 0; k < nodes.size(); ++k)
    for (int j = 0; j < per_node; ++j) {
      joined.add(1);
      nugo::go_on(nodes[k], [&, k, j] {
        f(k, split(part_size, static_cast<std::size_t>(per_node), static_cast<std::size_t>(j)));
        joined.done();
      });
    }
  joined.wait();
}

// ---- triad: a[i] = b[i] + s * c[i], STREAM's fourth kernel ----

struct TriadResult {
  bool ok;
  double bytes;  // moved: three arrays of doubles, each pass
};

inline TriadResult triad(const std::vector<int>& nodes, std::size_t per_node, int passes, int per_node_goroutines) {
  constexpr double s = 3.0;
  std::vector<std::unique_ptr<NodeArray<double>>> a, b, c;
  for (int node : nodes) {
    a.push_back(std::make_unique<NodeArray<double>>(node, per_node));
    b.push_back(std::make_unique<NodeArray<double>>(node, per_node));
    c.push_back(std::make_unique<NodeArray<double>>(node, per_node));
  }
  // First touch on the node too, by its own goroutines.
  on_every_node(nodes, per_node_goroutines, per_node, [&](std::size_t k, Range r) {
    for (std::size_t i = r.lo; i < r.hi; ++i) {
      (*a[k])[i] = 0;
      (*b[k])[i] = static_cast<double>(i % 1000);
      (*c[k])[i] = 2.0;
    }
  });
  for (int pass = 0; pass < passes; ++pass)
    on_every_node(nodes, per_node_goroutines, per_node, [&](std::size_t k, Range r) {
      double* ak = a[k]->data();
      const double* bk = b[k]->data();
      const double* ck = c[k]->data();
      for (std::size_t i = r.lo; i < r.hi; ++i) ak[i] = bk[i] + s * ck[i];
    });
  bool ok = true;
  for (std::size_t k = 0; k < nodes.size(); ++k)
    for (std::size_t i = 0; i < per_node; ++i)
      ok = ok && (*a[k])[i] == static_cast<double>(i % 1000) + s * 2.0;
  return {ok, 3.0 * sizeof(double) * static_cast<double>(per_node * nodes.size()) * passes};
}

// ---- stencil: Jacobi iterations of the 2-D heat equation ----
//
// An n x n grid, its rows split into one band per node (allocated there, with a halo row on
// each side copied from the neighbours before each sweep). Each sweep spawns its goroutines
// afresh, one per block of rows, started on the block's node: where they run is the
// scheduler's choice every sweep, not a fixed assignment. Each cell is computed from the
// previous sweep's grid only, so the result is the same bits at any P count: the check is
// that it equals a serial run for small grids, and for all grids that it is exactly
// mirror-symmetric (left-right: the setup is, and (n + s) + (w + e) is the same sum either
// way) and bounded by the boundary values (the maximum principle).

struct StencilResult {
  bool ok;
  double cells;  // updated, over all sweeps
  double checksum;
};

inline StencilResult stencil(const std::vector<int>& nodes, std::size_t n, int sweeps, int blocks_per_node,
                             bool compare_serial) {
  const std::size_t bands = nodes.size();
  // band k holds rows [lo_k, hi_k) plus a halo row above and below.
  std::vector<Range> rows;
  std::vector<std::unique_ptr<NodeArray<double>>> cur, next;
  for (std::size_t k = 0; k < bands; ++k) {
    rows.push_back(split(n, bands, k));
    std::size_t cells = (rows[k].hi - rows[k].lo + 2) * n;
    cur.push_back(std::make_unique<NodeArray<double>>(nodes[k], cells));
    next.push_back(std::make_unique<NodeArray<double>>(nodes[k], cells));
  }
  // The boundary: the top edge is hot (100), the other edges cold (0); inside starts at 0.
  auto initial = [n](std::size_t r, std::size_t c) {
    return r == 0 && c > 0 && c + 1 < n ? 100.0 : 0.0;
  };
  for (std::size_t k = 0; k < bands; ++k)
    for (std::size_t r = rows[k].lo; r < rows[k].hi; ++r)
      for (std::size_t c = 0; c < n; ++c) {
        (*cur[k])[(r - rows[k].lo + 1) * n + c] = initial(r, c);
        (*next[k])[(r - rows[k].lo + 1) * n + c] = initial(r, c);
      }
  auto exchange_halos = [&] {
    for (std::size_t k = 0; k < bands; ++k) {
      double* g = cur[k]->data();
      std::size_t h = rows[k].hi - rows[k].lo;
      if (k > 0) std::memcpy(g, cur[k - 1]->data() + (rows[k - 1].hi - rows[k - 1].lo) * n, n * sizeof(double));
      if (k + 1 < bands) std::memcpy(g + (h + 1) * n, cur[k + 1]->data() + n, n * sizeof(double));
    }
  };
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    exchange_halos();
    nugo::WaitGroup joined;
    for (std::size_t k = 0; k < bands; ++k)
      for (int b = 0; b < blocks_per_node; ++b) {
        joined.add(1);
        nugo::go_on(nodes[k], [&, k, b] {
          const std::size_t h = rows[k].hi - rows[k].lo;
          Range mine = split(h, static_cast<std::size_t>(blocks_per_node), static_cast<std::size_t>(b));
          const double* g = cur[k]->data();
          double* out = next[k]->data();
          for (std::size_t lr = mine.lo; lr < mine.hi; ++lr) {
            std::size_t r = rows[k].lo + lr;
            if (r == 0 || r + 1 == n) continue;  // boundary rows stay
            const double* up = g + lr * n;
            const double* here = g + (lr + 1) * n;
            const double* down = g + (lr + 2) * n;
            double* o = out + (lr + 1) * n;
            for (std::size_t c = 1; c + 1 < n; ++c) o[c] = ((up[c] + down[c]) + (here[c - 1] + here[c + 1])) * 0.25;
          }
          joined.done();
        });
      }
    joined.wait();
    std::swap(cur, next);
  }
  auto at = [&](std::size_t r, std::size_t c) {
    for (std::size_t k = 0; k < bands; ++k)
      if (r >= rows[k].lo && r < rows[k].hi) return (*cur[k])[(r - rows[k].lo + 1) * n + c];
    return 0.0;
  };
  bool ok = true;
  double checksum = 0;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      double v = at(r, c);
      checksum += v;
      ok = ok && v >= 0.0 && v <= 100.0 && v == at(r, n - 1 - c);
    }
  if (compare_serial) {  // the same sweeps on one plain grid
    std::vector<double> g(n * n), o(n * n);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < n; ++c) g[r * n + c] = o[r * n + c] = initial(r, c);
    for (int sweep = 0; sweep < sweeps; ++sweep) {
      for (std::size_t r = 1; r + 1 < n; ++r)
        for (std::size_t c = 1; c + 1 < n; ++c)
          o[r * n + c] = ((g[(r - 1) * n + c] + g[(r + 1) * n + c]) + (g[r * n + c - 1] + g[r * n + c + 1])) * 0.25;
      std::swap(g, o);
    }
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < n; ++c) ok = ok && g[r * n + c] == at(r, c);
  }
  return {ok, static_cast<double>((n - 2) * (n - 2)) * sweeps, checksum};
}

// ---- histogram: 256 buckets over node-local input ----
//
// Each node's part of the input lives on the node; goroutines count a chunk each into a
// private histogram and merge it under a mutex. The input is byte (37 i mod 256), so with a
// multiple of 256 bytes per node every bucket holds exactly total / 256.

struct HistogramResult {
  bool ok;
  double bytes;
};

inline HistogramResult histogram(const std::vector<int>& nodes, std::size_t per_node, int passes,
                                 int per_node_goroutines) {
  per_node -= per_node % 256;
  std::vector<std::unique_ptr<NodeArray<std::uint8_t>>> input;
  for (int node : nodes) input.push_back(std::make_unique<NodeArray<std::uint8_t>>(node, per_node));
  on_every_node(nodes, per_node_goroutines, per_node, [&](std::size_t k, Range r) {
    for (std::size_t i = r.lo; i < r.hi; ++i) (*input[k])[i] = static_cast<std::uint8_t>(37 * i);
  });
  bool ok = true;
  for (int pass = 0; pass < passes; ++pass) {
    std::uint64_t total[256] = {};
    nugo::Mutex mu;
    on_every_node(nodes, per_node_goroutines, per_node, [&](std::size_t k, Range r) {
      std::uint64_t mine[256] = {};
      const std::uint8_t* p = input[k]->data();
      for (std::size_t i = r.lo; i < r.hi; ++i) ++mine[p[i]];
      std::lock_guard lock(mu);
      for (int b = 0; b < 256; ++b) total[b] += mine[b];
    });
    for (std::uint64_t count : total) ok = ok && count == per_node * nodes.size() / 256;
  }
  return {ok, static_cast<double>(per_node * nodes.size()) * passes};
}

}  // namespace workloads
