// The compute-bound fork-join workloads (experiments/workloads/README.md): skynet, fib, UTS,
// n-queens and merge sort. nugo-bench (micro_bench.cpp, timed in a loop), nugo-locality
// (locality.cpp, run once for the runtime's statistics) and nugo-workload (the experiment
// pipeline's driver) all run these, so that every figure describes exactly the same work.
// Each function must be called from a goroutine. The Go twins are in
// experiments/baselines/go/sched_test.go and experiments/baselines/go/workloads/.
#pragma once

#include <cstdint>
#include <nugo/nugo.hpp>
#include <vector>

#include "work.hpp"

namespace workloads {

// ---- skynet: a 10-way tree of 1,111,111 goroutines over channels ----

inline constexpr long kSkynetLeaves = 1'000'000;
inline constexpr long kSkynetChecksum = skynet_checksum(kSkynetLeaves);

// The classic program's goroutine: num is the first leaf of its subtree, size the number of
// leaves in it; it sends the sum of its leaves' numbers on c.
inline void skynet(nugo::Chan<long> c, long num, long size, long div) {
  if (size == 1) {
    c.send(num);
    return;
  }
  nugo::Chan<long> rc;
  for (long i = 0; i < div; ++i) {
    long sub = num + i * (size / div);
    nugo::go([=] { skynet(rc, sub, size / div, div); });
  }
  long sum = 0;
  for (long i = 0; i < div; ++i) sum += *rc.recv();
  c.send(sum);
}

// One whole tree of `leaves` leaves (a power of the fan-out); the root's sum, which is
// skynet_checksum(leaves) when nothing was lost.
inline long run_skynet(long leaves = kSkynetLeaves) {
  nugo::Chan<long> c;
  nugo::go([=] { skynet(c, 0, leaves, kSkynetFanOut); });
  return *c.recv();
}

// ---- fib: fork-join, one goroutine per call ----

// fib(n) as a Go programmer writes it: fib(n-1) in a new goroutine, fib(n-2) in the caller,
// joined by a WaitGroup. There is deliberately no serial cutoff: the point is goroutine
// creation, parking, and the stealing that spreads the tree over the Ps.
inline long fib(int n) {
  if (n < 2) return n;
  long first = 0;
  nugo::WaitGroup joined;
  joined.add(1);
  nugo::go([&first, &joined, n] {
    first = fib(n - 1);
    joined.done();
  });
  long second = fib(n - 2);
  joined.wait();
  return first + second;
}

// fib(kFibN) creates fib(kFibN + 1) - 1 = 317,810 goroutines: tens of milliseconds at 1 P,
// so that Google Benchmark gets several iterations and every P of a run gets work to steal.
inline constexpr int kFibN = 27;
static_assert(fib_serial(kFibN) == 196'418);

// ---- UTS: the Unbalanced Tree Search benchmark's geometric trees (work.hpp) ----

namespace uts {

// The subtree's node count, as a Go programmer writes it: a goroutine per child, joined with
// a WaitGroup, each writing its own slot.
inline long count(const State& s, int depth, const Tree& t) {
  const int n = children(s, depth, t);
  if (n == 0) return 1;
  std::vector<long> sub(static_cast<std::size_t>(n));
  nugo::WaitGroup joined;
  joined.add(n);
  for (int i = 0; i < n; ++i)
    nugo::go([&, i] {
      sub[static_cast<std::size_t>(i)] = count(child(s, static_cast<std::uint32_t>(i)), depth + 1, t);
      joined.done();
    });
  joined.wait();
  long total = 1;
  for (long c : sub) total += c;
  return total;
}

inline long run(const Tree& t) { return count(root(t.seed), 0, t); }

}  // namespace uts

// ---- n-queens: the number of ways to place n queens, BOTS' nqueens ----

namespace nqueens {

// A goroutine per placement in the first `spawn_rows` rows (BOTS' cut-off), serial below.
inline long count(int n, int row, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti,
                  int spawn_rows) {
  if (row >= spawn_rows) return serial(n, row, cols, diag, anti);
  const std::vector<std::uint32_t> bits = free_bits(n, cols, diag, anti);
  std::vector<long> sub(bits.size());
  nugo::WaitGroup joined;
  joined.add(static_cast<std::int64_t>(bits.size()));
  for (std::size_t i = 0; i < bits.size(); ++i)
    nugo::go([&, i] {
      std::uint32_t bit = bits[i];
      sub[i] = count(n, row + 1, cols | bit, (diag | bit) << 1, (anti | bit) >> 1, spawn_rows);
      joined.done();
    });
  joined.wait();
  long total = 0;
  for (long s : sub) total += s;
  return total;
}

inline long run(int n) { return count(n, 0, 0, 0, 0, spawn_rows(n)); }

}  // namespace nqueens

// ---- merge sort: sort halves in parallel, merge, serial below a cut-off (work.hpp) ----

namespace mergesort {

// Sorts v[lo, hi) using tmp[lo, hi) as scratch.
inline void sort(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t hi) {
  if (hi - lo <= kSerialBelow) {
    serial_sort(v, tmp, lo, hi);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  nugo::WaitGroup joined;
  joined.add(1);
  nugo::go([&] {
    sort(v, tmp, lo, mid);
    joined.done();
  });
  sort(v, tmp, mid, hi);
  joined.wait();
  merge(v, tmp, lo, mid, hi);
}

}  // namespace mergesort

}  // namespace workloads
