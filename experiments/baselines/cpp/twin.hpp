// The driver of the C++ peers' twins of nugo-workload: tbb-workload (oneTBB), omp-workload
// (GCC's OpenMP) and fiber-workload (Boost.Fiber). Each twin supplies its kernels and how to
// start its runtime; this gives all of them nugo-workload's command line, sizes, checks
// (experiments/workloads/work.hpp) and JSON line, so that scripts/pipeline/sweep.py runs them as more
// values of its mode factor:
//
//   tbb-workload fib --size small --procs 2 --bind pu
//   {"workload": "fib", "kind": "compute", "size": "small", "procs": 2, "mode": "tbb",
//    "bind": "pu", "runtime_env": "...", "nodes": 1, "ok": true, "seconds": ..., ...}
//
// --procs N (default: the CPUs this process may use) is the twin's worker count, its Ps;
// --bind pu pins worker k to the k-th CPU of --cpus (sweep.py passes the CPUs nugo gives its Ps,
// grouped by node: nugo's NUGO_BIND=pu), none leaves the threads to the OS. Exit status 0 if
// the result is right, 1 if not, 2 for a bad command line or a runtime that cannot be set up
// as asked.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../workloads/work.hpp"

namespace twin {

using workloads::Outcome;
using workloads::Size;

// The kernels of one runtime: each does the work of nugo's kernel of that name (forkjoin.hpp,
// memory.hpp, communication.hpp) the way an expert of the runtime writes it. A runtime without
// a kernel leaves it empty, and its twin does not offer that workload (TBB and OpenMP have no
// channels, Boost.Fiber's work_stealing no parallel loops).
//
// The fork-join and communication kernels are timed whole. The memory-bound ones are given
// their arrays allocated but untouched, touch them first themselves (so that first touch places
// the pages where the runtime's workers run) and return the seconds of their passes only; the
// driver then checks the arrays.
struct Kernels {
  std::function<long(int n)> fib;
  std::function<long(long leaves)> skynet;
  std::function<long(const workloads::uts::Tree&)> uts;
  std::function<long(int n)> nqueens;
  std::function<void(std::uint64_t* v, std::uint64_t* tmp, std::size_t n)> mergesort;
  // a, b, c of `total` elements; heavy > 1: the skewed triad (three times the data on the
  // first NUMA node, where the runtime places data per node).
  std::function<double(double* a, double* b, double* c, std::size_t total, int passes, int heavy)> triad;
  // Whether the runtime puts data on nodes the program names: the skewed triad needs it (and is
  // offered only then), since on a runtime that places by first touch it is the triad.
  bool places_data_by_node = true;
  // Two n x n grids; after an even number of sweeps the result is in g, else in o.
  std::function<double(double* g, double* o, std::size_t n, int sweeps)> stencil;
  // Counts the input into 256 buckets at each pass: pass p's into buckets[256 p, 256 p + 256).
  std::function<double(std::uint8_t* input, std::size_t total, int passes, std::uint64_t* buckets)> histogram;
  // The matrix's row offsets are filled (a serial prefix sum); col, val, x and y are not.
  std::function<double(const std::size_t* ptr, std::uint32_t* col, double* val, double* x, double* y,
                       std::size_t rows, int passes)> spmv;
  std::function<std::vector<long>(int n)> sieve;
  std::function<bool(long rounds, int hogs)> pingpong_hogs;  // every round made, every hog ended
  // Returns the messages received; *sum their sum.
  std::function<long(int producers, long each, std::size_t buffer, long* sum)> fanin;
};

struct Workload {
  const char* name;
  const char* kind;  // compute, memory, communication
  std::function<Outcome(Size)> run;
};

enum class Bind { pu, node, none };
inline const char* name(Bind b) { return b == Bind::pu ? "pu" : b == Bind::node ? "node" : "none"; }

// Where the workers run. With --bind pu, worker k runs on the k-th CPU of `cpus` (--cpus: the
// CPUs nugo gives its Ps, which sweep.py reads from nugo-topo, so that both bind alike; else
// the usable CPUs in order). --cpus also groups them by NUMA node, in node order, as nugo
// places its Ps: "0,1/12,13" is two workers on the first node and two on the second. The
// groups are what the runtimes that place data per node (oneTBB's arenas) split it by.
struct Placement {
  Bind bind = Bind::none;
  std::vector<std::vector<int>> nodes;  // --cpus, by node; empty when not given

  std::vector<int> cpus() const;
};

// What the runtime was started with, for the JSON line.
struct Started {
  Bind bind = Bind::none;  // as resolved by the runtime
  int nodes = 1;           // NUMA nodes the memory-bound kernels place data on
  std::string env;         // the runtime's settings in force ("OMP_PROC_BIND=close ...")
};

struct Runtime {
  const char* program;  // "tbb-workload"
  const char* mode;     // results.csv's mode: "tbb"
  Kernels kernels;
  // Starts the runtime with `procs` workers, bound as asked, before the workload runs; may
  // refuse (a std::exception: a bad setting, named).
  std::function<Started(int procs, const Placement& where)> start;
};

// The CPUs this process may use, in order.
inline std::vector<int> usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

inline std::vector<int> Placement::cpus() const {
  std::vector<int> all;
  for (const auto& node : nodes) all.insert(all.end(), node.begin(), node.end());
  return nodes.empty() ? usable_cpus() : all;
}

// Pins the calling thread to the slot-th of `cpus` (modulo their number).
inline void pin_to_slot(const std::vector<int>& cpus, int slot) {
  if (cpus.empty() || slot < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(slot) % cpus.size()], &one);
  sched_setaffinity(0, sizeof one, &one);
}

// The machine's online CPUs (/sys/devices/system/cpu/online, "0-3,8-11"). Not this process's
// affinity: libgomp narrows that to the first place before main when OMP_PROC_BIND is set.
inline std::vector<int> online_cpus() {
  std::vector<int> cpus;
  std::FILE* f = std::fopen("/sys/devices/system/cpu/online", "r");
  if (!f) return usable_cpus();
  int lo = 0, hi = 0;
  char sep = 0;
  while (std::fscanf(f, "%d", &lo) == 1) {
    hi = lo;
    if (std::fscanf(f, "%c", &sep) == 1 && sep == '-' && std::fscanf(f, "%d%c", &hi, &sep) < 1) break;
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    if (sep != ',') break;
  }
  std::fclose(f);
  return cpus;
}

// --cpus "a,b/c,d": the CPUs by node; empty on a malformed list or a CPU the machine lacks.
inline std::vector<std::vector<int>> parse_cpus(const std::string& text) {
  const std::vector<int> usable = online_cpus();
  std::vector<std::vector<int>> nodes(1);
  std::size_t at = 0;
  while (at <= text.size()) {
    if (at == text.size() || !std::isdigit(static_cast<unsigned char>(text[at]))) return {};
    char* end = nullptr;
    const long cpu = std::strtol(text.c_str() + at, &end, 10);
    const std::size_t next = static_cast<std::size_t>(end - text.c_str());
    if (std::find(usable.begin(), usable.end(), cpu) == usable.end()) return {};
    nodes.back().push_back(static_cast<int>(cpu));
    if (next == text.size()) return nodes;
    if (text[next] == '/') nodes.emplace_back();
    else if (text[next] != ',') return {};
    at = next + 1;
  }
  return {};
}

// Memory for a memory-bound kernel, allocated and not touched (large arrays are fresh pages
// from mmap, which the kernel's first touch places).
template <class T>
std::unique_ptr<T[]> untouched(std::size_t n) {
  return std::unique_ptr<T[]>(new T[std::max<std::size_t>(n, 1)]);
}

// The workloads of `k`, with nugo-workload's sizes, timed regions, work units and checks.
inline std::vector<Workload> workloads_of(const Kernels& k, int procs) {
  using workloads::checked;
  using workloads::timed;
  namespace sizes = workloads::sizes;
  std::vector<Workload> all;
  if (k.fib)
    all.push_back({"fib", "compute", [&k](Size s) {
                     const int n = sizes::fib[s];
                     Outcome o;
o.unit = "tasks";
                     const long got = timed(&o.seconds, [&] { return k.fib(n); });
                     o.ok = got == workloads::fib_serial(n);
                     o.work = static_cast<double>(workloads::fib_tasks(n));
                     o.result = checked(got, workloads::fib_serial(n));
                     return o;
                   }});
  if (k.skynet)
    all.push_back({"skynet", "compute", [&k](Size s) {
                     const long leaves = sizes::skynet_leaves[s];
                     Outcome o;
o.unit = "tasks";
                     const long got = timed(&o.seconds, [&] { return k.skynet(leaves); });
                     o.ok = got == workloads::skynet_checksum(leaves);
                     o.work = static_cast<double>(workloads::skynet_nodes(leaves));
                     o.result = checked(got, workloads::skynet_checksum(leaves));
                     return o;
                   }});
  if (k.uts)
    all.push_back({"uts", "compute", [&k](Size s) {
                     const workloads::uts::Tree t = workloads::uts::kTrees[s];
                     Outcome o;
o.unit = "nodes";
                     const long got = timed(&o.seconds, [&] { return k.uts(t); });
                     o.ok = got == t.nodes;
                     o.work = static_cast<double>(got);
                     o.result = checked(got, t.nodes);
                     return o;
                   }});
  if (k.nqueens)
    all.push_back({"nqueens", "compute", [&k](Size s) {
                     const int n = sizes::queens[s];
                     Outcome o;
o.unit = "solutions";
                     const long got = timed(&o.seconds, [&] { return k.nqueens(n); });
                     o.ok = got == workloads::nqueens::kSolutions[n];
                     o.work = static_cast<double>(got);
                     o.result = checked(got, workloads::nqueens::kSolutions[n]);
                     return o;
                   }});
  if (k.mergesort)
    all.push_back({"mergesort", "compute", [&k](Size s) {
                     const std::size_t n = sizes::sort[s];
                     std::vector<std::uint64_t> v = workloads::mergesort::input(n), tmp(n);
                     const std::uint64_t before = workloads::mergesort::sum(v);
                     Outcome o;
o.unit = "elements";
                     timed(&o.seconds, [&] {
                       k.mergesort(v.data(), tmp.data(), n);
                       return 0;
                     });
                     o.ok = std::is_sorted(v.begin(), v.end()) && workloads::mergesort::sum(v) == before;
                     o.work = static_cast<double>(n);
                     o.result = o.ok ? "sorted, same sum" : "NOT sorted, or elements lost";
                     return o;
                   }});
  auto triad = [&k](int heavy) {
    return [&k, heavy](Size s) {
      const auto [total, passes] = sizes::triad[s];
      auto a = untouched<double>(total), b = untouched<double>(total), c = untouched<double>(total);
      Outcome o;
o.unit = "bytes";
      o.seconds = k.triad(a.get(), b.get(), c.get(), total, passes, heavy);
      o.ok = true;
      for (std::size_t i = 0; i < total; ++i) o.ok = o.ok && a[i] == workloads::triad_want(i);
      o.work = workloads::triad_bytes(total, passes);
      o.result = o.ok ? "every a[i] == b[i] + 3 c[i]" : "WRONG values";
      return o;
    };
  };
  if (k.triad) {
    all.push_back({"triad", "memory", triad(1)});
    if (k.places_data_by_node) all.push_back({"triad_skew", "memory", triad(3)});
  }
  if (k.stencil)
    all.push_back({"stencil", "memory", [&k](Size s) {
                     const auto [n, sweeps] = sizes::stencil[s];
                     auto g = untouched<double>(n * n), o = untouched<double>(n * n);
                     Outcome out;
out.unit = "cells";
                     out.seconds = k.stencil(g.get(), o.get(), n, sweeps);
                     const double* grid = sweeps % 2 == 0 ? g.get() : o.get();
                     const std::vector<double> want = workloads::stencil_serial(n, sweeps);
                     double sum = 0;
                     out.ok = true;
                     for (std::size_t r = 0; r < n; ++r)
                       for (std::size_t c = 0; c < n; ++c) {
                         const double v = grid[r * n + c];
                         sum += v;
                         out.ok = out.ok && v == want[r * n + c] && v == grid[r * n + n - 1 - c] && v >= 0 && v <= 100;
                       }
                     out.work = workloads::stencil_cells(n, sweeps);
                     out.result = (out.ok ? "equal to a serial run, symmetric, bounded, sum " : "WRONG grid, sum ") +
                                  std::to_string(sum);
                     return out;
                   }});
  if (k.histogram)
    all.push_back({"histogram", "memory", [&k](Size s) {
                     const auto [requested, passes] = sizes::histogram[s];
                     const std::size_t total = workloads::histogram_total(requested);
                     auto input = untouched<std::uint8_t>(total);
                     std::vector<std::uint64_t> buckets(256 * static_cast<std::size_t>(passes), 0);
                     Outcome o;
o.unit = "bytes";
                     o.seconds = k.histogram(input.get(), total, passes, buckets.data());
                     o.ok = true;  // every pass's every bucket
                     for (std::uint64_t count : buckets) o.ok = o.ok && count == total / 256;
                     o.work = static_cast<double>(total) * passes;
                     o.result = o.ok ? "every bucket exact" : "WRONG counts";
                     return o;
                   }});
  if (k.spmv)
    all.push_back({"spmv", "memory", [&k](Size s) {
                     const auto [rows, passes] = sizes::spmv[s];
                     auto ptr = untouched<std::size_t>(rows + 1);
                     ptr[0] = 0;
                     for (std::size_t r = 0; r < rows; ++r) ptr[r + 1] = ptr[r] + workloads::spmv_degree(rows, r);
                     const std::size_t nnz = ptr[rows];
                     auto col = untouched<std::uint32_t>(nnz);
                     auto val = untouched<double>(nnz), x = untouched<double>(rows), y = untouched<double>(rows);
                     Outcome o;
o.unit = "non-zeros";
                     o.seconds = k.spmv(ptr.get(), col.get(), val.get(), x.get(), y.get(), rows, passes);
                     double sum = 0;
                     o.ok = true;
                     for (std::size_t r = 0; r < rows; ++r) {
                       const double want = workloads::spmv_want(rows, r);
                       o.ok = o.ok && y[r] == want;
                       sum += want;
                     }
                     o.work = static_cast<double>(nnz) * passes;
                     o.result = (o.ok ? "every y[r] equal to a serial product's, sum " : "WRONG products, sum ") +
                                std::to_string(sum);
                     return o;
                   }});
  if (k.sieve)
    all.push_back({"sieve", "communication", [&k](Size s) {
                     const int n = sizes::sieve_primes[s];
                     Outcome o;
o.unit = "primes";
                     const std::vector<long> got = timed(&o.seconds, [&] { return k.sieve(n); });
                     const std::vector<long> want = workloads::primes_serial(n);
                     o.ok = got == want;
                     o.work = n;
                     o.result = "prime " + std::to_string(n) + ": " + checked(got.empty() ? 0L : got.back(), want.back());
                     return o;
                   }});
  if (k.pingpong_hogs)
    all.push_back({"pingpong_hogs", "communication", [&k, procs](Size s) {
                     const long rounds = sizes::pingpong_rounds[s];
                     Outcome o;
o.unit = "round trips";
                     o.ok = timed(&o.seconds, [&] { return k.pingpong_hogs(rounds, procs); });
                     o.work = static_cast<double>(rounds);
                     o.result = o.ok ? "every round, every hog ended" : "rounds or hogs lost";
                     return o;
                   }});
  if (k.fanin)
    all.push_back({"fanin", "communication", [&k](Size s) {
                     const long each = sizes::fanin_each[s];
                     const int producers = workloads::kFanInProducers;
                     long sum = 0;
                     Outcome o;
o.unit = "messages";
                     const long got = timed(&o.seconds, [&] { return k.fanin(producers, each, workloads::kFanInBuffer, &sum); });
                     const long total = producers * each;
                     o.ok = got == total && sum == producers * (each * (each - 1) / 2);
                     o.work = static_cast<double>(total);
                     o.result = o.ok ? "every message, exact sum" : "messages lost";
                     return o;
                   }});
  return all;
}

[[noreturn]] inline void usage(const Runtime& rt, const std::string& problem) {
  const std::vector<Workload> offered = workloads_of(rt.kernels, 1);
  std::fprintf(stderr,
               "%s: %s\nusage: %s WORKLOAD [--size tiny|small|default|large] [--procs N] [--bind pu|none] "
               "[--cpus A,B/C,D]\n"
               "workloads:",
               rt.program, problem.c_str(), rt.program);
  for (const Workload& w : offered) std::fprintf(stderr, " %s", w.name);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

inline int main(int argc, char** argv, const Runtime& rt) {
  if (argc < 2) usage(rt, "no workload named");
  Size size = workloads::standard;
  int procs = static_cast<int>(usable_cpus().size());
  Placement where;
  for (int i = 2; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--size") == 0 && has_value) {
      const auto named = workloads::size_named(argv[++i]);
      if (!named) usage(rt, std::string("unknown size '") + argv[i] + "'");
      size = *named;
    } else if (std::strcmp(argv[i], "--procs") == 0 && has_value) {
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || n < 1 || n > 1024)
        usage(rt, std::string("--procs '") + argv[i] + "': a number of workers from 1 to 1024");
      procs = static_cast<int>(n);
    } else if (std::strcmp(argv[i], "--bind") == 0 && has_value) {
      const std::string b = argv[++i];
      if (b == "pu") where.bind = Bind::pu;
      else if (b == "none") where.bind = Bind::none;
      else usage(rt, "unknown --bind '" + b + "' (pu or none)");
    } else if (std::strcmp(argv[i], "--cpus") == 0 && has_value) {
      where.nodes = parse_cpus(argv[++i]);
      if (where.nodes.empty())
        usage(rt, std::string("--cpus '") + argv[i] + "': online CPUs of this machine, by node: 0,1/12,13");
    } else {
      usage(rt, std::string("unknown argument '") + argv[i] + "'");
    }
  }
  if (!where.nodes.empty() && where.cpus().size() != static_cast<std::size_t>(procs))
    usage(rt, "--cpus names " + std::to_string(where.cpus().size()) + " CPUs for " + std::to_string(procs) +
                  " workers: one each");
  const std::vector<Workload> offered = workloads_of(rt.kernels, procs);
  const Workload* workload = nullptr;
  for (const Workload& w : offered)
    if (std::strcmp(argv[1], w.name) == 0) workload = &w;
  if (!workload) usage(rt, std::string("unknown workload '") + argv[1] + "'");
  Started started;
  try {
    started = rt.start(procs, where);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", rt.program, e.what());
    return 2;
  }
  Outcome outcome;
  try {
    outcome = workload->run(size);
  } catch (const std::exception& e) {  // out of memory, say: fail with a reason
    outcome.ok = false;
    outcome.result = std::string("failed: ") + e.what();
  }
  std::printf("{\"workload\": \"%s\", \"kind\": \"%s\", \"size\": \"%s\", \"procs\": %d, \"mode\": \"%s\", "
              "\"bind\": \"%s\", \"runtime_env\": \"%s\", \"nodes\": %d, \"topology\": \"this machine\", "
              "\"emulated\": false, \"ok\": %s, \"seconds\": %.6f, \"work\": %.0f, \"unit\": \"%s\", "
              "\"throughput\": %.6g, \"result\": \"%s\"}\n",
              workload->name, workload->kind, workloads::kSizeNames[size], procs, rt.mode,
              name(started.bind), workloads::json_escape(started.env).c_str(), started.nodes,
              outcome.ok ? "true" : "false", outcome.seconds, outcome.work, outcome.unit,
              outcome.seconds > 0 ? outcome.work / outcome.seconds : 0.0,
              workloads::json_escape(outcome.result).c_str());
  if (!outcome.ok)
    std::fprintf(stderr, "%s: %s (%s): WRONG RESULT: %s\n", rt.program, workload->name,
                 workloads::kSizeNames[size], outcome.result.c_str());
  return outcome.ok ? 0 : 1;
}

}  // namespace twin
