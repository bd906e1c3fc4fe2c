// nugo-workload: runs one workload of experiments/workloads/ once, checks its result, and
// prints one JSON line: what ran, where, how long, and whether the result was right.
//
//   nugo-workload fib --size small
//   NUGO_PROCS=4 NUGO_MODE=numa NUGO_TOPOLOGY=xml:... nugo-workload triad
//
// Exit status 0 if the result is right, 1 if it is not (the JSON says "ok": false), 2 for a
// bad command line (an unknown workload or size) or environment.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>

#include "communication.hpp"
#include "forkjoin.hpp"
#include "memory.hpp"

namespace {

enum Size { tiny, small, standard, large };
const char* kSizeNames[] = {"tiny", "small", "default", "large"};

struct Outcome {
  bool ok = false;
  double work = 0;           // units of work done, for throughput
  const char* unit = "";     // what work counts
  std::string result;        // the value checked, and what it was checked against
};

struct Workload {
  const char* name;
  const char* kind;  // compute, memory, communication
  std::function<Outcome(Size)> run;
};

// For the memory-bound workloads: `factor` goroutines per P of each node (at least one each).
int goroutines_per_node(const std::vector<int>& nodes, int factor) {
  return std::max(factor, factor * nugo::gomaxprocs() / static_cast<int>(nodes.size()));
}

template <class T>
std::string checked(T got, T want) {
  return std::to_string(got) + (got == want ? " == " : " != ") + std::to_string(want);
}

const std::vector<Workload>& all() {
  static const std::vector<Workload> workloads = {
      {"fib", "compute",
       [](Size s) {
         const int n = std::array{15, 22, 27, 32}[s];
         long got = workloads::fib(n), want = workloads::fib_serial(n);
         return Outcome{got == want, static_cast<double>(2 * want - 1), "goroutines", checked(got, want)};
       }},
      {"skynet", "compute",
       [](Size s) {
         const long leaves = std::array{1'000L, 100'000L, 1'000'000L, 10'000'000L}[s];
         long got = workloads::run_skynet(leaves), want = workloads::skynet_checksum(leaves);
         return Outcome{got == want, leaves * 1.111111, "goroutines", checked(got, want)};
       }},
      {"uts", "compute",
       [](Size s) {
         const workloads::uts::Tree t = std::array{workloads::uts::kT1Depth4, workloads::uts::kT1Depth6,
                                                   workloads::uts::kT1, workloads::uts::kT1L}[s];
         long got = workloads::uts::run(t);
         return Outcome{got == t.nodes, static_cast<double>(got), "nodes", checked(got, t.nodes)};
       }},
      {"nqueens", "compute",
       [](Size s) {
         const int n = std::array{6, 10, 14, 16}[s];
         long got = workloads::nqueens::run(n), want = workloads::nqueens::kSolutions[n];
         return Outcome{got == want, static_cast<double>(got), "solutions", checked(got, want)};
       }},
      {"mergesort", "compute",
       [](Size s) {
         const std::size_t n = std::array<std::size_t, 4>{10'000, 200'000, 4'000'000, 32'000'000}[s];
         std::vector<std::uint64_t> v = workloads::mergesort::input(n), tmp(n);
         std::uint64_t sum_before = 0, sum_after = 0;
         for (auto x : v) sum_before += x;
         workloads::mergesort::sort(v.data(), tmp.data(), 0, n);
         for (auto x : v) sum_after += x;
         bool ok = std::is_sorted(v.begin(), v.end()) && sum_after == sum_before;
         return Outcome{ok, static_cast<double>(n), "elements",
                        std::string(ok ? "sorted, same sum" : "NOT sorted or elements lost")};
       }},
      {"triad", "memory",
       [](Size s) {
         const std::size_t per_node = std::array<std::size_t, 4>{10'000, 1'000'000, 8'000'000, 32'000'000}[s];
         const int passes = std::array{2, 5, 10, 20}[s];
         auto nodes = workloads::nodes_with_ps();
         auto r = workloads::triad(nodes, per_node, passes, goroutines_per_node(nodes, 1));
         return Outcome{r.ok, r.bytes, "bytes", r.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values"};
       }},
      {"stencil", "memory",
       [](Size s) {
         const std::size_t n = std::array<std::size_t, 4>{64, 256, 2048, 4096}[s];
         const int sweeps = std::array{10, 20, 20, 40}[s];
         auto nodes = workloads::nodes_with_ps();
         auto r = workloads::stencil(nodes, n, sweeps, goroutines_per_node(nodes, 2), s <= small);
         return Outcome{r.ok, r.cells, "cells",
                        (r.ok ? "symmetric, bounded" : "WRONG grid") +
                            std::string(s <= small ? ", equal to a serial run" : "") +
                            ", sum " + std::to_string(r.checksum)};
       }},
      {"histogram", "memory",
       [](Size s) {
         const std::size_t per_node = std::array<std::size_t, 4>{65'536, 4'000'000, 64'000'000, 256'000'000}[s];
         const int passes = std::array{2, 3, 5, 5}[s];
         auto nodes = workloads::nodes_with_ps();
         auto r = workloads::histogram(nodes, per_node, passes, goroutines_per_node(nodes, 1));
         return Outcome{r.ok, r.bytes, "bytes", r.ok ? "every bucket exact" : "WRONG counts"};
       }},
      {"sieve", "communication",
       [](Size s) {
         const int n = std::array{100, 500, 2000, 5000}[s];
         auto got = workloads::sieve(n), want = workloads::primes_serial(n);
         return Outcome{got == want, static_cast<double>(n), "primes",
                        "prime " + std::to_string(n) + ": " + checked(got.back(), want.back())};
       }},
      {"pingpong_hogs", "communication",
       [](Size s) {
         const long rounds = std::array{1'000L, 20'000L, 200'000L, 1'000'000L}[s];
         auto r = workloads::pingpong_hogs(rounds, std::max(1, nugo::gomaxprocs()));
         return Outcome{r.ok, static_cast<double>(r.rounds), "round trips",
                        r.ok ? "every round, every hog ended" : "rounds or hogs lost"};
       }},
      {"fanin", "communication",
       [](Size s) {
         const long each = std::array{1'000L, 50'000L, 500'000L, 2'000'000L}[s];
         auto r = workloads::fan_in(16, each, 64);
         return Outcome{r.ok, static_cast<double>(r.messages), "messages",
                        r.ok ? "every message, exact sum" : "messages lost"};
       }},
  };
  return workloads;
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "nugo-workload: %s\nusage: nugo-workload WORKLOAD [--size tiny|small|default|large]\nworkloads:",
               problem.c_str());
  for (const Workload& w : all()) std::fprintf(stderr, " %s", w.name);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("no workload named");
  const Workload* workload = nullptr;
  for (const Workload& w : all())
    if (std::strcmp(argv[1], w.name) == 0) workload = &w;
  if (!workload) usage(std::string("unknown workload '") + argv[1] + "'");
  Size size = standard;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      bool known = false;
      for (int s = tiny; s <= large; ++s)
        if (std::strcmp(argv[i + 1], kSizeNames[s]) == 0) {
          size = static_cast<Size>(s);
          known = true;
        }
      if (!known) usage(std::string("unknown size '") + argv[i + 1] + "'");
      ++i;
    } else {
      usage(std::string("unknown argument '") + argv[i] + "'");
    }
  }
  nugo::Config cfg = nugo::Config::from_env_or_exit();
  Outcome outcome;
  double seconds = 0;
  int procs = 0;
  nugo::run(
      [&] {
        procs = nugo::gomaxprocs();
        auto start = std::chrono::steady_clock::now();
        outcome = workload->run(size);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      cfg);
  const char* mode = std::getenv("NUGO_MODE");
  std::printf("{\"workload\": \"%s\", \"kind\": \"%s\", \"size\": \"%s\", \"procs\": %d, "
              "\"mode\": \"%s\", \"topology\": \"%s\", \"ok\": %s, "
              "\"seconds\": %.6f, \"work\": %.0f, \"unit\": \"%s\", \"throughput\": %.6g, "
              "\"result\": \"%s\"}\n",
              workload->name, workload->kind, kSizeNames[size], procs, mode ? mode : "automatic",
              json_escape(cfg.topology.empty() ? "this machine" : cfg.topology).c_str(),
              outcome.ok ? "true" : "false",
              seconds, outcome.work, outcome.unit, seconds > 0 ? outcome.work / seconds : 0.0,
              json_escape(outcome.result).c_str());
  return outcome.ok ? 0 : 1;
}
