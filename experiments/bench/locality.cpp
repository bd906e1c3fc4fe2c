// nugo-locality: one workload, run once, in a runtime configured entirely from the
// environment (NUGO_PROCS, NUGO_TOPOLOGY, NUGO_MODE, NUGO_BIND, NUGO_STATS, ...).
//
//   nugo-locality fib N     fork-join fib(N), one goroutine per call with N >= 2
//   nugo-locality skynet    the skynet tree, 1,000,000 leaves, 10-way, over channels
//
// It exists for scripts/pipeline/numa.py's locality section: the runtime's statistics (NUGO_STATS=PATH,
// written when run() returns) then count this workload and nothing else, which a Google
// Benchmark process with its warm-up and repeated iterations would not give. The workloads
// are nugo-bench's own (experiments/workloads/forkjoin.hpp).
//
// Prints one line, "workload=fib n=N seconds=S" or "workload=skynet leaves=L seconds=S",
// where S is the wall time of the workload inside the runtime (start-up and teardown left
// out). Exit status: 0; 1 when the workload's result is wrong; 2 on bad arguments or a bad
// NUGO_* variable.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nugo/nugo.hpp>

#include "../workloads/forkjoin.hpp"

namespace {

// fib(40) already creates 165 million goroutines; larger n is a typo, not an experiment.
constexpr int kMaxFibN = 40;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "nugo-locality: %s\n"
               "usage: nugo-locality fib N      (0 <= N <= %d)\n"
               "       nugo-locality skynet\n",
               why, kMaxFibN);
  std::exit(2);
}

int fib_argument(const char* text) {
  int n = -1;
  const char* end = text + std::strlen(text);
  auto [rest, error] = std::from_chars(text, end, n);
  if (error != std::errc{} || rest != end || n < 0 || n > kMaxFibN)
    usage("fib: N is not a whole number in range");
  return n;
}

double seconds_since(nugo::Clock::time_point t) {
  return std::chrono::duration<double>(nugo::Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("no workload given");
  bool is_fib = std::strcmp(argv[1], "fib") == 0;
  bool is_skynet = std::strcmp(argv[1], "skynet") == 0;
  if (!is_fib && !is_skynet) usage("unknown workload");
  if (is_fib && argc != 3) usage("fib takes exactly one argument, N");
  if (is_skynet && argc != 2) usage("skynet takes no arguments");
  int n = is_fib ? fib_argument(argv[2]) : 0;

  long got = 0, want = 0;
  double seconds = 0;
  nugo::run([&] {
    auto start = nugo::Clock::now();
    got = is_fib ? workloads::fib(n) : workloads::run_skynet();
    seconds = seconds_since(start);
  });
  want = is_fib ? workloads::fib_serial(n) : workloads::kSkynetChecksum;
  if (got != want) {
    std::fprintf(stderr, "nugo-locality: %s returned %ld, want %ld\n", argv[1], got, want);
    return 1;
  }
  if (is_fib)
    std::printf("workload=fib n=%d seconds=%.6f\n", n, seconds);
  else
    std::printf("workload=skynet leaves=%ld seconds=%.6f\n", workloads::kSkynetLeaves, seconds);
  return 0;
}
