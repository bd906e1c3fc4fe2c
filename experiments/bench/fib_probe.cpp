// nugo-fib-probe: what a goroutine of fork-join costs, apart from how many are alive at once.
//
//   nugo-fib-probe [ROUNDS]     (NUGO_PROCS etc. as for any nugo program)
//
// Go's scheduler puts a new goroutine in runnext and pushes the one there to the tail of the
// run queue, so a fork-join tree like fib runs about breadth-first: thousands of goroutines
// are alive at once, each parked parent holding a stack, and every switch touches a G, a stack
// top and a WaitGroup that have left the caches long ago. A task runtime that runs children
// depth-first (oneTBB, OpenMP) keeps a tree's depth alive. This probe times the workload's
// fib (experiments/workloads/forkjoin.hpp), interleaved:
//   - fib(27) once per round: the sweep's tree;
//   - fib(10) repeated to about as many goroutines: the same code with a live set that fits
//     the caches.
// The difference per goroutine is what the live set costs (the fork-join rows of
// paper/generated/results.md, "nugo against Go and the C++ peers"). Each measurement then
// counts its peak of live goroutines in an untimed run of a copy of fib with a shared counter,
// whose atomics would distort the timing at 2 Ps. Prints one JSON line per round, and the
// medians.
#include <nugo/nugo.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../workloads/forkjoin.hpp"

namespace {

std::atomic<long> live{0}, peak{0};

// forkjoin.hpp's fib with the live count: a goroutine counts itself from its spawn to its end.
long counted_fib(int n) {
  if (n < 2) return n;
  long first = 0;
  nugo::WaitGroup joined;
  joined.add(1);
  long now = live.fetch_add(1, std::memory_order_relaxed) + 1;
  long seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  nugo::go([&first, &joined, n] {
    first = counted_fib(n - 1);
    live.fetch_sub(1, std::memory_order_relaxed);
    joined.done();
  });
  long second = counted_fib(n - 2);
  joined.wait();
  return first + second;
}

struct Result {
  double ns_per_goroutine;
  long peak_live;
};

Result measure(int n, long repeats) {
  auto t0 = std::chrono::steady_clock::now();
  long sum = 0;
  for (long i = 0; i < repeats; ++i) sum += workloads::fib(n);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sum != repeats * workloads::fib_serial(n)) std::abort();
  peak = 0;
  if (counted_fib(n) != workloads::fib_serial(n)) std::abort();
  return {s * 1e9 / static_cast<double>(repeats * workloads::fib_tasks(n)), peak.load()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  if (argc > 1) {
    char* end = nullptr;
    long r = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || r < 1 || r > 1000) {
      std::fprintf(stderr, "nugo-fib-probe: ROUNDS must be a whole number from 1 to 1000, not '%s'\n", argv[1]);
      return 2;
    }
    rounds = static_cast<int>(r);
  }
  constexpr int kBig = 27, kSmall = 10;
  const long small_repeats = workloads::fib_tasks(kBig) / workloads::fib_tasks(kSmall);
  return nugo::run([&] {
    measure(kBig, 1);  // warm: stacks and Gs exist from here on, in both measurements
    std::vector<double> big, small, peaks_big, peaks_small;
    for (int r = 0; r < rounds; ++r) {  // interleaved, so that drift hits both alike
      Result b = measure(kBig, 1);
      Result s = measure(kSmall, small_repeats);
      std::printf("{\"round\": %d, \"procs\": %d, \"fib27_ns_per_goroutine\": %.1f, \"fib27_peak_live\": %ld, "
                  "\"fib10_ns_per_goroutine\": %.1f, \"fib10_peak_live\": %ld}\n",
                  r + 1, nugo::gomaxprocs(), b.ns_per_goroutine, b.peak_live, s.ns_per_goroutine,
                  s.peak_live);
      big.push_back(b.ns_per_goroutine);
      small.push_back(s.ns_per_goroutine);
      peaks_big.push_back(static_cast<double>(b.peak_live));
      peaks_small.push_back(static_cast<double>(s.peak_live));
    }
    std::printf("median over %d rounds at %d Ps: fib(27) %.1f ns per goroutine, peak %.0f alive; "
                "fib(10) x%ld %.1f ns per goroutine, peak %.0f alive\n",
                rounds, nugo::gomaxprocs(), median(big), median(peaks_big), small_repeats,
                median(small), median(peaks_small));
  });
}
