// tbb-workload: the oneTBB twin of nugo-workload (experiments/baselines/README.md, "The peers").
//
// Written as a TBB programmer writes each kernel:
//   - the fork-join kernels with tbb::task_group: a task per call or child where nugo starts
//     a goroutine, and no serial cut-off where nugo has none (fib, skynet and UTS spawn down to
//     the leaves; n-queens and merge sort have the same cut-offs as nugo's). skynet's sums come
//     back through the join, not over channels: TBB has none.
//   - the memory-bound kernels with tbb::parallel_for (its default auto_partitioner) and the
//     histogram with tbb::parallel_reduce, after first touching the data with the same loop.
//   - on a machine with several NUMA nodes, TBB's documented NUMA recipe: one task_arena per
//     node, constrained to it (task_arena::constraints{numa_id}, which needs libtbbbind and
//     hwloc), each node's part of the data first touched and then worked inside its arena,
//     the nodes' parts split in proportion to their workers (triad_skew: three times as much
//     on the first node, as nugo's; spmv: a copy of x per node, as nugo's). Arenas do not
//     share work: a node done first idles.
//
// --procs N caps TBB's parallelism at N threads (global_control), the calling thread included.
// --bind pu pins the thread in arena slot k to the k-th CPU of --cpus (nugo's Ps' CPUs; a
// task_scheduler_observer, TBB's own way to place its threads), in each node's arena to the
// k-th of that node's. --cpus's node groups decide the node arenas; without it, on several
// nodes the threads are split evenly and the constraints bind them to their node only (the row
// says bind node). The threads are started before the first kernel.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <array>
#include <memory>
#include <stdexcept>

#include "../cpp/twin.hpp"

namespace {

// ---- the runtime: the arenas, and where each node's part of the data is ----

// Pins the thread in arena slot k to the k-th of its CPUs, each time it enters the arena.
class PinSlots : public tbb::task_scheduler_observer {
 public:
  PinSlots(tbb::task_arena& arena, std::vector<int> cpus)
      : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)) {
    observe(true);
  }
  ~PinSlots() override { observe(false); }
  void on_scheduler_entry(bool) override { twin::pin_to_slot(cpus_, tbb::this_task_arena::current_thread_index()); }

 private:
  std::vector<int> cpus_;
};

struct Tbb {
  std::unique_ptr<tbb::global_control> parallelism;
  std::unique_ptr<tbb::task_arena> all;                 // every thread: the fork-join kernels
  std::vector<std::unique_ptr<tbb::task_arena>> nodes;  // with several nodes: an arena per node
  std::vector<int> weight;                              // each node's threads (one entry on one node)
  std::vector<std::unique_ptr<PinSlots>> pins;
};
Tbb& tbb_runtime() {
  static Tbb rt;
  return rt;
}

template <class F>
void in_node_arenas(const F& part);

twin::Started start(int procs, const twin::Placement& where) {
  Tbb& rt = tbb_runtime();
  rt.parallelism = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                         static_cast<std::size_t>(procs));
  rt.all = std::make_unique<tbb::task_arena>(procs);
  const bool pin = where.bind == twin::Bind::pu;
  if (pin) rt.pins.push_back(std::make_unique<PinSlots>(*rt.all, where.cpus()));
  // The nodes' threads: --cpus's groups, else (several NUMA nodes) the workers split evenly.
  const std::vector<tbb::numa_node_id> numa = tbb::info::numa_nodes();
  if (!where.nodes.empty()) {
    for (const auto& node : where.nodes) rt.weight.push_back(static_cast<int>(node.size()));
  } else {
    const int used = std::min<int>(static_cast<int>(numa.size()), procs);
    for (int k = 0; k < used; ++k) rt.weight.push_back(procs * (k + 1) / used - procs * k / used);
  }
  twin::Started started{where.bind, 1, "one task_arena"};
  if (rt.weight.size() > 1) {
    // TBB's NUMA recipe: an arena per node, constrained to it (the k-th node group to oneTBB's
    // k-th NUMA node: both in the OS's order). The main thread works in the first (its reserved
    // slot); the others have no slot for it, so that all their threads are workers and every
    // node has as many threads working as it was given. Where oneTBB sees fewer nodes than
    // --cpus has groups (no libtbbbind, say), plain arenas of the same sizes, placed by --cpus.
    const bool constrained = rt.weight.size() <= numa.size();
    for (std::size_t k = 0; k < rt.weight.size(); ++k) {
      const unsigned master = k == 0 ? 1 : 0;
      rt.nodes.push_back(constrained ? std::make_unique<tbb::task_arena>(
                                           tbb::task_arena::constraints{numa[k], rt.weight[k]}, master)
                                     : std::make_unique<tbb::task_arena>(rt.weight[k], master));
      if (pin && !where.nodes.empty()) rt.pins.push_back(std::make_unique<PinSlots>(*rt.nodes[k], where.nodes[k]));
    }
    started.nodes = static_cast<int>(rt.weight.size());
    started.env = constrained ? "a task_arena per NUMA node (constraints{numa_id})"
                              : "a task_arena per node group of --cpus (oneTBB sees " + std::to_string(numa.size()) +
                                    " NUMA nodes: no constraints)";
    // Without CPUs to pin to, the constraints bind each arena's threads to its node, no closer.
    if (constrained && !(pin && !where.nodes.empty())) started.bind = twin::Bind::node;
  }
  started.env += ", max_allowed_parallelism=" + std::to_string(procs);
  // Start the threads now, so that their creation is not in the first kernel's time (libgomp's
  // team is made in omp-workload's start() too).
  rt.all->execute([procs] { tbb::parallel_for(0, 64 * procs, [](int) {}); });
  in_node_arenas([](std::size_t) { tbb::parallel_for(0, 64, [](int) {}); });
  return started;
}

// Runs f inside the arena of all threads (where the fork-join kernels run) and returns its value.
template <class F>
auto in_all(F f) {
  return tbb_runtime().all->execute(f);
}

// The node parts of [0, total): node k's range, in proportion to its threads, the first node's
// weight times `heavy`.
std::vector<std::pair<std::size_t, std::size_t>> node_parts(std::size_t total, int heavy) {
  const std::vector<int>& w = tbb_runtime().weight;
  std::size_t sum = 0, before = 0;
  for (std::size_t k = 0; k < w.size(); ++k) sum += static_cast<std::size_t>(w[k] * (k == 0 ? heavy : 1));
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const std::size_t lo = total * before / sum;
    before += static_cast<std::size_t>(w[k] * (k == 0 ? heavy : 1));
    parts.emplace_back(lo, total * before / sum);
  }
  return parts;
}

// Runs part(k) for every node k at once, each inside its node's arena (a task_group per arena:
// TBB's NUMA recipe), and waits for all of them; on one node, part(0) in the arena of all threads.
template <class F>
void in_node_arenas(const F& part) {
  Tbb& rt = tbb_runtime();
  if (rt.nodes.empty()) {
    rt.all->execute([&] { part(0); });
    return;
  }
  std::vector<tbb::task_group> groups(rt.nodes.size());
  for (std::size_t k = 1; k < rt.nodes.size(); ++k) rt.nodes[k]->execute([&, k] { groups[k].run([&, k] { part(k); }); });
  rt.nodes[0]->execute([&] { part(0); });
  for (std::size_t k = 1; k < rt.nodes.size(); ++k) rt.nodes[k]->execute([&, k] { groups[k].wait(); });
}

using Range = tbb::blocked_range<std::size_t>;

// parallel_for(range, body) over each node's part of [0, total), in the node's arena.
template <class Body>
void for_each_part(std::size_t total, int heavy, const Body& body) {
  const auto parts = node_parts(total, heavy);
  in_node_arenas([&](std::size_t k) { tbb::parallel_for(Range(parts[k].first, parts[k].second), body); });
}

// ---- fork-join ----

long fib(int n) {
  if (n < 2) return n;
  long first = 0;
  tbb::task_group g;
  g.run([&] { first = fib(n - 1); });
  const long second = fib(n - 2);
  g.wait();
  return first + second;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  std::array<long, workloads::kSkynetFanOut> sums{};
  tbb::task_group g;
  const long child = size / workloads::kSkynetFanOut;
  for (long i = 0; i < workloads::kSkynetFanOut; ++i)
    g.run([&sums, i, num, child] { sums[static_cast<std::size_t>(i)] = skynet(num + i * child, child); });
  g.wait();
  long sum = 0;
  for (long s : sums) sum += s;
  return sum;
}

long uts_count(const workloads::uts::State& s, int depth, const workloads::uts::Tree& t) {
  const int n = workloads::uts::children(s, depth, t);
  if (n == 0) return 1;
  std::vector<long> sub(static_cast<std::size_t>(n));
  tbb::task_group g;
  for (int i = 0; i < n; ++i)
    g.run([&, i] {
      sub[static_cast<std::size_t>(i)] = uts_count(workloads::uts::child(s, static_cast<std::uint32_t>(i)), depth + 1, t);
    });
  g.wait();
  long total = 1;
  for (long c : sub) total += c;
  return total;
}

long queens(int n, int row, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti) {
  if (row >= workloads::nqueens::spawn_rows(n)) return workloads::nqueens::serial(n, row, cols, diag, anti);
  const std::vector<std::uint32_t> bits = workloads::nqueens::free_bits(n, cols, diag, anti);
  std::vector<long> sub(bits.size());
  tbb::task_group g;
  for (std::size_t i = 0; i < bits.size(); ++i)
    g.run([&, i] {
      const std::uint32_t bit = bits[i];
      sub[i] = queens(n, row + 1, cols | bit, (diag | bit) << 1, (anti | bit) >> 1);
    });
  g.wait();
  long total = 0;
  for (long s : sub) total += s;
  return total;
}

void sort(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t hi) {
  if (hi - lo <= workloads::mergesort::kSerialBelow) {
    workloads::mergesort::serial_sort(v, tmp, lo, hi);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  tbb::task_group g;
  g.run([&] { sort(v, tmp, lo, mid); });
  sort(v, tmp, mid, hi);
  g.wait();
  workloads::mergesort::merge(v, tmp, lo, mid, hi);
}

// ---- memory-bound ----

double triad(double* a, double* b, double* c, std::size_t total, int passes, int heavy) {
  for_each_part(total, heavy, [&](const Range& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      a[i] = 0;
      b[i] = workloads::triad_b(i);
      c[i] = 2.0;
    }
  });
  const auto start = workloads::Clock::now();
  for (int pass = 0; pass < passes; ++pass)
    for_each_part(total, heavy, [&](const Range& r) { workloads::triad_range(a, b, c, r.begin(), r.end()); });
  return workloads::seconds_since(start);
}

double stencil(double* g, double* o, std::size_t n, int sweeps) {
  for_each_part(n, 1, [&](const Range& r) {
    for (std::size_t row = r.begin(); row < r.end(); ++row)
      for (std::size_t c = 0; c < n; ++c) g[row * n + c] = o[row * n + c] = workloads::stencil_initial(n, row, c);
  });
  const auto start = workloads::Clock::now();
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for_each_part(n, 1, [&](const Range& r) {
      for (std::size_t row = std::max<std::size_t>(r.begin(), 1); row < std::min(r.end(), n - 1); ++row)
        workloads::stencil_row(g + (row - 1) * n, g + row * n, g + (row + 1) * n, o + row * n, n);
    });
    std::swap(g, o);
  }
  return workloads::seconds_since(start);
}

double histogram(std::uint8_t* input, std::size_t total, int passes, std::uint64_t* buckets) {
  using Counts = std::array<std::uint64_t, 256>;
  for_each_part(total, 1, [&](const Range& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) input[i] = workloads::histogram_input(i);
  });
  double seconds = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = workloads::Clock::now();
    // Each node's part reduced in its arena; the nodes' counts added here.
    const auto parts = node_parts(total, 1);
    std::vector<Counts> per_node(parts.size(), Counts{});
    in_node_arenas([&](std::size_t k) {
      per_node[k] = tbb::parallel_reduce(
          Range(parts[k].first, parts[k].second), Counts{},
          [&](const Range& r, Counts mine) {
            for (std::size_t i = r.begin(); i < r.end(); ++i) ++mine[input[i]];
            return mine;
          },
          [](Counts x, const Counts& y) {
            for (int b = 0; b < 256; ++b) x[b] += y[b];
            return x;
          });
    });
    for (const Counts& c : per_node)
      for (int b = 0; b < 256; ++b) buckets[256 * pass + b] += c[b];
    seconds += workloads::seconds_since(start);
  }
  return seconds;
}

double spmv(const std::size_t* ptr, std::uint32_t* col, double* val, double* x, double* y, std::size_t rows, int passes) {
  // Each node's rows, y and its own copy of x (nugo's layout); one node: the x given.
  const auto parts = node_parts(rows, 1);
  std::vector<std::unique_ptr<double[]>> copies;
  std::vector<double*> xs{x};
  for (std::size_t k = 1; k < parts.size(); ++k) {
    copies.push_back(twin::untouched<double>(rows));
    xs.push_back(copies.back().get());
  }
  in_node_arenas([&](std::size_t k) {
    tbb::parallel_for(Range(parts[k].first, parts[k].second),
                      [&](const Range& r) { workloads::spmv_fill(rows, 0, ptr, col, val, y, r.begin(), r.end()); });
    tbb::parallel_for(Range(0, rows), [&](const Range& r) {
      for (std::size_t i = r.begin(); i < r.end(); ++i) xs[k][i] = workloads::spmv_x(i);
    });
  });
  const auto start = workloads::Clock::now();
  for (int pass = 0; pass < passes; ++pass)
    in_node_arenas([&](std::size_t k) {
      const double* xk = xs[k];
      tbb::parallel_for(Range(parts[k].first, parts[k].second),
                        [&](const Range& r) { workloads::spmv_rows(ptr, col, val, xk, y, r.begin(), r.end()); });
    });
  return workloads::seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  twin::Kernels k;
  k.fib = [](int n) { return in_all([n] { return fib(n); }); };
  k.skynet = [](long leaves) { return in_all([leaves] { return skynet(0, leaves); }); };
  k.uts = [](const workloads::uts::Tree& t) { return in_all([&t] { return uts_count(workloads::uts::root(t.seed), 0, t); }); };
  k.nqueens = [](int n) { return in_all([n] { return queens(n, 0, 0, 0, 0); }); };
  k.mergesort = [](std::uint64_t* v, std::uint64_t* tmp, std::size_t n) { in_all([=] { sort(v, tmp, 0, n); }); };
  k.triad = triad;
  k.stencil = stencil;
  k.histogram = histogram;
  k.spmv = spmv;
  return twin::main(argc, argv, {"tbb-workload", "tbb", k, start});
}
