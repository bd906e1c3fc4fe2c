// The goroutine workloads that both nugo-bench (micro_bench.cpp, timed in a loop) and
// nugo-locality (locality.cpp, run once for the runtime's statistics) run, kept in one place
// so that the locality figures describe exactly the work the benchmarks time. Each function
// must be called from a goroutine. The Go twins are in experiments/baselines/go/sched_test.go.
#pragma once

#include <nugo/nugo.hpp>

namespace workloads {

// ---- skynet: a 10-way tree of 1,111,111 goroutines over channels ----

inline constexpr long kSkynetLeaves = 1'000'000;
inline constexpr long kSkynetFanOut = 10;
inline constexpr long kSkynetChecksum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;

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

// One whole tree; the root's sum, which is kSkynetChecksum when nothing was lost.
inline long run_skynet() {
  nugo::Chan<long> c;
  nugo::go([=] { skynet(c, 0, kSkynetLeaves, kSkynetFanOut); });
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

// The reference value that fib(n) is checked against.
constexpr long fib_serial(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    long next = a + b;
    a = b;
    b = next;
  }
  return a;
}

// fib(kFibN) creates fib(kFibN + 1) - 1 = 317,810 goroutines: tens of milliseconds at 1 P,
// so that Google Benchmark gets several iterations and every P of a run gets work to steal.
inline constexpr int kFibN = 27;
static_assert(fib_serial(kFibN) == 196'418);

}  // namespace workloads
