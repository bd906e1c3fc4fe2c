// nugo-workload: runs one workload of experiments/workloads/ once, checks its result, and
// prints one JSON line: what ran, where, how long, and whether the result was right.
//
//   nugo-workload fib --size small
//   NUGO_PROCS=4 NUGO_MODE=numa NUGO_TOPOLOGY=xml:... nugo-workload triad
//   nugo-workload triad --latency-model off
//
// --latency-model on|off|auto (default auto): the emulated memory latency model of the
// memory-bound workloads (memory.hpp). auto turns it on for a memory-bound workload on an
// emulated topology with more than one node with CPUs; on is refused on a real topology.
//
// Exit status 0 if the result is right, 1 if it is not (the JSON says "ok": false), 2 for a
// bad command line (an unknown workload or size) or environment.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
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
  double seconds = 0;     // the kernel only: not the input's set-up, nor the check
  double work = 0;        // units of work done, for throughput
  const char* unit = "";  // what work counts
  std::string result;     // the value checked, and what it was checked against
};

struct Workload {
  const char* name;
  const char* kind;  // compute, memory, communication
  std::function<Outcome(Size)> run;
};

template <class T>
std::string checked(T got, T want) {
  return std::to_string(got) + (got == want ? " == " : " != ") + std::to_string(want);
}

// Runs f, timed; its result.
template <class F>
auto timed(double* seconds, F f) {
  auto start = workloads::Clock::now();
  auto result = f();
  *seconds = workloads::seconds_since(start);
  return result;
}

Outcome from_kernel(const workloads::KernelResult& r, const char* unit, std::string result) {
  return {r.ok, r.seconds, r.work, unit, std::move(result)};
}

const std::vector<Workload>& all() {
  static const std::vector<Workload> workloads = {
      {"fib", "compute",
       [](Size s) {
         const int n = std::array{15, 22, 27, 32}[s];
         Outcome o;
         o.unit = "goroutines";
         long got = timed(&o.seconds, [&] { return workloads::fib(n); });
         long want = workloads::fib_serial(n);
         o.ok = got == want;
         o.work = static_cast<double>(workloads::fib_serial(n + 1) - 1);  // goroutines made
         o.result = checked(got, want);
         return o;
       }},
      {"skynet", "compute",
       [](Size s) {
         const long leaves = std::array{1'000L, 100'000L, 1'000'000L, 10'000'000L}[s];
         Outcome o;
         o.unit = "goroutines";
         long got = timed(&o.seconds, [&] { return workloads::run_skynet(leaves); });
         long want = workloads::skynet_checksum(leaves);
         o.ok = got == want;
         o.work = static_cast<double>((10 * leaves - 1) / 9);  // every node of the tree
         o.result = checked(got, want);
         return o;
       }},
      {"uts", "compute",
       [](Size s) {
         const workloads::uts::Tree t = std::array{workloads::uts::kT1Depth4, workloads::uts::kT1Depth6,
                                                   workloads::uts::kT1, workloads::uts::kT1L}[s];
         Outcome o;
         o.unit = "nodes";
         long got = timed(&o.seconds, [&] { return workloads::uts::run(t); });
         o.ok = got == t.nodes;
         o.work = static_cast<double>(got);
         o.result = checked(got, t.nodes);
         return o;
       }},
      {"nqueens", "compute",
       [](Size s) {
         const int n = std::array{6, 10, 14, 16}[s];
         Outcome o;
         o.unit = "solutions";
         long got = timed(&o.seconds, [&] { return workloads::nqueens::run(n); });
         long want = workloads::nqueens::kSolutions[n];
         o.ok = got == want;
         o.work = static_cast<double>(got);
         o.result = checked(got, want);
         return o;
       }},
      {"mergesort", "compute",
       [](Size s) {
         const std::size_t n = std::array<std::size_t, 4>{10'000, 200'000, 4'000'000, 32'000'000}[s];
         std::vector<std::uint64_t> v = workloads::mergesort::input(n), tmp(n);
         std::uint64_t sum_before = 0, sum_after = 0;
         for (auto x : v) sum_before += x;
         Outcome o;
         o.unit = "elements";
         timed(&o.seconds, [&] {
           workloads::mergesort::sort(v.data(), tmp.data(), 0, n);
           return 0;
         });
         for (auto x : v) sum_after += x;
         o.ok = std::is_sorted(v.begin(), v.end()) && sum_after == sum_before;
         o.work = static_cast<double>(n);
         o.result = o.ok ? "sorted, same sum" : "NOT sorted, or elements lost";
         return o;
       }},
      {"triad", "memory",
       [](Size s) {
         const std::size_t total = std::array<std::size_t, 4>{20'000, 4'000'000, 16'000'000, 64'000'000}[s];
         const int passes = std::array{2, 5, 10, 20}[s];
         auto r = workloads::triad(workloads::shares(total, 1), passes);
         return from_kernel(r, "bytes", r.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values");
       }},
      {"triad_skew", "memory",
       [](Size s) {  // triad's data, three times as much of it on the first node
         const std::size_t total = std::array<std::size_t, 4>{20'000, 4'000'000, 16'000'000, 64'000'000}[s];
         const int passes = std::array{2, 5, 10, 20}[s];
         auto r = workloads::triad(workloads::shares(total, 4, 3), passes);
         return from_kernel(r, "bytes", r.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values");
       }},
      {"stencil", "memory",
       [](Size s) {
         const std::size_t n = std::array<std::size_t, 4>{64, 1024, 2048, 4096}[s];
         const int sweeps = std::array{10, 30, 20, 40}[s];
         auto r = workloads::stencil(n, sweeps, 2);
         return from_kernel(r, "cells", (r.ok ? "equal to a serial run, symmetric, bounded, sum "
                                              : "WRONG grid, sum ") + std::to_string(r.checksum));
       }},
      {"histogram", "memory",
       [](Size s) {
         const std::size_t total = std::array<std::size_t, 4>{131'072, 8'000'000, 128'000'000, 512'000'000}[s];
         const int passes = std::array{2, 3, 5, 5}[s];
         auto r = workloads::histogram(total, passes, 1);
         return from_kernel(r, "bytes", r.ok ? "every bucket exact" : "WRONG counts");
       }},
      {"spmv", "memory",
       [](Size s) {
         const std::size_t rows = std::array<std::size_t, 4>{2'000, 200'000, 400'000, 2'000'000}[s];
         const int passes = std::array{2, 5, 10, 20}[s];
         auto r = workloads::spmv(rows, passes, 4);
         return from_kernel(r, "non-zeros", (r.ok ? "every y[r] equal to a serial product's, sum "
                                                  : "WRONG products, sum ") + std::to_string(r.checksum));
       }},
      {"sieve", "communication",
       [](Size s) {
         const int n = std::array{100, 500, 2000, 5000}[s];
         Outcome o;
         o.unit = "primes";
         auto got = timed(&o.seconds, [&] { return workloads::sieve(n); });
         auto want = workloads::primes_serial(n);
         o.ok = got == want;
         o.work = n;
         o.result = "prime " + std::to_string(n) + ": " + checked(got.back(), want.back());
         return o;
       }},
      {"pingpong_hogs", "communication",
       [](Size s) {
         const long rounds = std::array{1'000L, 20'000L, 200'000L, 1'000'000L}[s];
         Outcome o;
         o.unit = "round trips";
         auto r = timed(&o.seconds, [&] { return workloads::pingpong_hogs(rounds, nugo::gomaxprocs()); });
         o.ok = r.ok;
         o.work = static_cast<double>(r.rounds);
         o.result = r.ok ? "every round, every hog ended" : "rounds or hogs lost";
         return o;
       }},
      {"fanin", "communication",
       [](Size s) {
         const long each = std::array{1'000L, 50'000L, 500'000L, 2'000'000L}[s];
         Outcome o;
         o.unit = "messages";
         auto r = timed(&o.seconds, [&] { return workloads::fan_in(16, each, 64); });
         o.ok = r.ok;
         o.work = static_cast<double>(r.messages);
         o.result = r.ok ? "every message, exact sum" : "messages lost";
         return o;
       }},
  };
  return workloads;
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "nugo-workload: %s\nusage: nugo-workload WORKLOAD [--size tiny|small|default|large] "
               "[--latency-model on|off|auto] [--latency-penalty RATIO] [--placement go_on|go]\n"
               "workloads:",
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
  std::string latency = "auto";
  double penalty = 0;  // 0: the distance matrix's own ratio
  auto placement = workloads::Placement::go_on;
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
    } else if (std::strcmp(argv[i], "--latency-model") == 0 && i + 1 < argc) {
      latency = argv[++i];
      if (latency != "on" && latency != "off" && latency != "auto")
        usage("unknown --latency-model '" + latency + "' (on, off or auto)");
    } else if (std::strcmp(argv[i], "--latency-penalty") == 0 && i + 1 < argc) {
      char* end = nullptr;
      penalty = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(penalty >= 1.0 && penalty <= 10.0))
        usage(std::string("--latency-penalty '") + argv[i] + "': a remote/local cost ratio from 1.0 to 10");
    } else if (std::strcmp(argv[i], "--placement") == 0 && i + 1 < argc) {
      const std::string p = argv[++i];
      if (p == "go_on") placement = workloads::Placement::go_on;
      else if (p == "go") placement = workloads::Placement::go;
      else usage("unknown --placement '" + p + "' (go_on or go)");
    } else {
      usage(std::string("unknown argument '") + argv[i] + "'");
    }
  }
  nugo::Config cfg = nugo::Config::from_env_or_exit();
  if (std::strcmp(workload->kind, "memory") == 0 && latency != "off") {
    nugo::topo::Topology t;
    try {
      t = nugo::topo::Topology::load(cfg.topology);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "nugo: %s\n", e.what());
      return 2;
    }
    int nodes_with_cpus = 0;
    for (const auto& n : t.nodes) nodes_with_cpus += !n.pus.empty();
    if (latency == "on" && !t.emulated)
      usage("--latency-model on needs an emulated topology (NUGO_TOPOLOGY=xml:... or synthetic:...): on " +
            t.source + " remote memory is really remote, and the model would charge it twice");
    if (latency == "on" && nodes_with_cpus < 2)
      usage("--latency-model on needs a topology with more than one node with CPUs: " + t.source + " has " +
            std::to_string(nodes_with_cpus));
    if (t.emulated && nodes_with_cpus > 1) workloads::latency_model().turn_on(t, penalty);
    workloads::page_check().on = !t.emulated;
  }
  if (penalty > 0 && !workloads::latency_model().on())
    usage("--latency-penalty needs the latency model, which is on for a memory-bound workload on an emulated "
          "topology with more than one node with CPUs");
  workloads::placement().how = placement;
  Outcome outcome;
  nugo::Stats st;
  std::string failure;
  nugo::run(
      [&] {
        try {
          outcome = workload->run(size);
        } catch (const std::exception& e) {  // out of memory, say: fail with a reason
          failure = e.what();
        }
        st = nugo::stats();
      },
      cfg);
  if (!failure.empty()) outcome.result = "failed: " + failure;
  const workloads::LatencyModel& model = workloads::latency_model();
  const workloads::PlacementCounts& placed = workloads::placement();
  const workloads::PageCheck& pages = workloads::page_check();
  const bool memory = std::strcmp(workload->kind, "memory") == 0;
  std::string extra;  // the memory-bound workloads' placement, model and pages
  if (memory) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "\"placement\": \"%s\", \"workers\": %llu, \"started_home\": %llu, \"latency_penalty\": %s, ",
                  workloads::name(placed.how), static_cast<unsigned long long>(placed.workers.load()),
                  static_cast<unsigned long long>(placed.started_home.load()),
                  model.on() ? std::to_string(model.penalty()).c_str() : "null");
    extra = buf;
    // The pages' nodes: on a real topology only (nothing is bound on an emulated one).
    if (pages.on)
      extra += "\"pages_checked\": " + std::to_string(pages.pages.load()) + ", \"pages_on_node\": " +
               std::to_string(pages.on_node.load()) + ", ";
    else
      extra += "\"pages_checked\": null, \"pages_on_node\": null, ";
  }
  std::printf("{\"workload\": \"%s\", \"kind\": \"%s\", \"size\": \"%s\", \"procs\": %d, "
              "\"mode\": \"%s\", \"topology\": \"%s\", \"emulated\": %s, \"ok\": %s, "
              "\"seconds\": %.6f, \"work\": %.0f, \"unit\": \"%s\", \"throughput\": %.6g, "
              "\"latency_model\": %s, \"block_ns\": %.1f, \"blocks\": %llu, \"remote_blocks\": %llu, "
              "%s\"result\": \"%s\"}\n",
              workload->name, workload->kind, kSizeNames[size], st.procs,
              st.mode == nugo::Mode::numa ? "numa" : "flat", json_escape(st.topology_source).c_str(),
              st.emulated ? "true" : "false", outcome.ok ? "true" : "false", outcome.seconds,
              outcome.work, outcome.unit, outcome.seconds > 0 ? outcome.work / outcome.seconds : 0.0,
              model.on() ? "true" : "false", model.block_ns(),
              static_cast<unsigned long long>(model.blocks()), static_cast<unsigned long long>(model.remote_blocks()),
              extra.c_str(), json_escape(outcome.result).c_str());
  if (!outcome.ok)
    std::fprintf(stderr, "nugo-workload: %s (%s): WRONG RESULT: %s\n", workload->name,
                 kSizeNames[size], outcome.result.c_str());
  return outcome.ok ? 0 : 1;
}
