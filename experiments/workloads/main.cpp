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

using workloads::checked;
using workloads::Outcome;
using workloads::timed;
using workloads::kSizeNames;
using workloads::Size;

struct Workload {
  const char* name;
  const char* kind;  // compute, memory, communication
  std::function<Outcome(Size)> run;
};

Outcome from_kernel(const workloads::KernelResult& r, const char* unit, std::string result) {
  return {r.ok, r.seconds, r.work, unit, std::move(result)};
}

const std::vector<Workload>& all() {
  static const std::vector<Workload> workloads = {
      {"fib", "compute",
       [](Size s) {
         const int n = workloads::sizes::fib[s];
         Outcome o;
         o.unit = "goroutines";
         long got = timed(&o.seconds, [&] { return workloads::fib(n); });
         long want = workloads::fib_serial(n);
         o.ok = got == want;
         o.work = static_cast<double>(workloads::fib_tasks(n));
         o.result = checked(got, want);
         return o;
       }},
      {"skynet", "compute",
       [](Size s) {
         const long leaves = workloads::sizes::skynet_leaves[s];
         Outcome o;
         o.unit = "goroutines";
         long got = timed(&o.seconds, [&] { return workloads::run_skynet(leaves); });
         long want = workloads::skynet_checksum(leaves);
         o.ok = got == want;
         o.work = static_cast<double>(workloads::skynet_nodes(leaves));
         o.result = checked(got, want);
         return o;
       }},
      {"uts", "compute",
       [](Size s) {
         const workloads::uts::Tree t = workloads::uts::kTrees[s];
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
         const int n = workloads::sizes::queens[s];
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
         const std::size_t n = workloads::sizes::sort[s];
         std::vector<std::uint64_t> v = workloads::mergesort::input(n), tmp(n);
         const std::uint64_t sum_before = workloads::mergesort::sum(v);
         Outcome o;
         o.unit = "elements";
         timed(&o.seconds, [&] {
           workloads::mergesort::sort(v.data(), tmp.data(), 0, n);
           return 0;
         });
         o.ok = std::is_sorted(v.begin(), v.end()) && workloads::mergesort::sum(v) == sum_before;
         o.work = static_cast<double>(n);
         o.result = o.ok ? "sorted, same sum" : "NOT sorted, or elements lost";
         return o;
       }},
      {"triad", "memory",
       [](Size s) {
         const auto [total, passes] = workloads::sizes::triad[s];
         auto r = workloads::triad(workloads::shares(total, 1), passes);
         return from_kernel(r, "bytes", r.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values");
       }},
      {"triad_skew", "memory",
       [](Size s) {  // triad's data, three times as much of it on the first node
         const auto [total, passes] = workloads::sizes::triad[s];
         auto r = workloads::triad(workloads::shares(total, 4, 3), passes);
         return from_kernel(r, "bytes", r.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values");
       }},
      {"stencil", "memory",
       [](Size s) {
         const auto [n, sweeps] = workloads::sizes::stencil[s];
         auto r = workloads::stencil(n, sweeps, 2);
         return from_kernel(r, "cells", (r.ok ? "equal to a serial run, symmetric, bounded, sum "
                                              : "WRONG grid, sum ") + std::to_string(r.checksum));
       }},
      {"histogram", "memory",
       [](Size s) {
         const auto [total, passes] = workloads::sizes::histogram[s];
         auto r = workloads::histogram(total, passes, 1);
         return from_kernel(r, "bytes", r.ok ? "every bucket exact" : "WRONG counts");
       }},
      {"spmv", "memory",
       [](Size s) {
         const auto [rows, passes] = workloads::sizes::spmv[s];
         auto r = workloads::spmv(rows, passes, 4);
         return from_kernel(r, "non-zeros", (r.ok ? "every y[r] equal to a serial product's, sum "
                                                  : "WRONG products, sum ") + std::to_string(r.checksum));
       }},
      {"sieve", "communication",
       [](Size s) {
         const int n = workloads::sizes::sieve_primes[s];
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
         const long rounds = workloads::sizes::pingpong_rounds[s];
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
         const long each = workloads::sizes::fanin_each[s];
         Outcome o;
         o.unit = "messages";
         auto r = timed(&o.seconds, [&] { return workloads::fan_in(workloads::kFanInProducers, each, workloads::kFanInBuffer); });
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("no workload named");
  const Workload* workload = nullptr;
  for (const Workload& w : all())
    if (std::strcmp(argv[1], w.name) == 0) workload = &w;
  if (!workload) usage(std::string("unknown workload '") + argv[1] + "'");
  Size size = workloads::standard;
  std::string latency = "auto";
  double penalty = 0;  // 0: the distance matrix's own ratio
  auto placement = workloads::Placement::go_on;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      const auto named = workloads::size_named(argv[i + 1]);
      if (!named) usage(std::string("unknown size '") + argv[i + 1] + "'");
      size = *named;
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
  std::printf("{\"workload\": \"%s\", \"kind\": \"%s\", \"size\": \"%s\", \"procs\": %d, \"seed\": %llu, "
              "\"mode\": \"%s\", \"topology\": \"%s\", \"emulated\": %s, \"ok\": %s, "
              "\"seconds\": %.6f, \"work\": %.0f, \"unit\": \"%s\", \"throughput\": %.6g, "
              "\"latency_model\": %s, \"block_ns\": %.1f, \"blocks\": %llu, \"remote_blocks\": %llu, "
              "%s\"result\": \"%s\"}\n",
              workload->name, workload->kind, kSizeNames[size], st.procs,
              static_cast<unsigned long long>(st.seed),
              st.mode == nugo::Mode::numa ? "numa" : "flat", workloads::json_escape(st.topology_source).c_str(),
              st.emulated ? "true" : "false", outcome.ok ? "true" : "false", outcome.seconds,
              outcome.work, outcome.unit, outcome.seconds > 0 ? outcome.work / outcome.seconds : 0.0,
              model.on() ? "true" : "false", model.block_ns(),
              static_cast<unsigned long long>(model.blocks()), static_cast<unsigned long long>(model.remote_blocks()),
              extra.c_str(), workloads::json_escape(outcome.result).c_str());
  if (!outcome.ok)
    std::fprintf(stderr, "nugo-workload: %s (%s): WRONG RESULT: %s\n", workload->name,
                 kSizeNames[size], outcome.result.c_str());
  return outcome.ok ? 0 : 1;
}
