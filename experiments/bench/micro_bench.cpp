// nugo's micro-benchmarks. The names are shared with the Go and Boost.Fiber twins
// (experiments/baselines) and with scripts/pipeline/micro.py, which runs all three side by side and
// prints ratios. Every figure is real (wall-clock) time per unit of work:
//   raw_switch               one Boost.Context jump_fcontext round trip (two switches): the floor
//   raw_switch_nugo          the same with nugo's own jump (core/src/base/switch_amd64.S), which
//                            leaves out Boost's floating-point control words: the runtime's floor
//   yield_ping/procs:1       one goroutine switch by nugo::yield, two goroutines on 1 P
//   create_and_run/procs:N   one goroutine of a chain in which each spawns the next
//   fanout_100k/procs:N      spawning 100,000 goroutines and waiting for all of them
//   skynet/procs:N           the skynet benchmark: 1,000,000 leaves, 10-way, over channels
//   fib/procs:N              fork-join fib(27): one goroutine per call, joined by WaitGroups
//                            (skynet and fib live in experiments/workloads/forkjoin.hpp, shared with nugo-locality
//                            and nugo-workload)
//   chan_sync, chan_prod_cons0/100, select_uncontended/contended, mutex_uncontended/contended:
//                            Go's runtime and sync benchmarks of those names, ns per op
//   timer_churn/procs:N, timer_wake/procs:2: timers at scale (see experiments/baselines)
//   ping_pong_hog/procs:1    Go's BenchmarkPingPongHog: ns per round trip beside a CPU hog
// The goroutine benchmarks run their timing loop inside the main goroutine; where Go's
// benchmark needs b.N up front, KeepRunningBatch(n) gives it and the time is per op.
#include <sys/resource.h>
#include <sys/mman.h>

#include <atomic>
#include <benchmark/benchmark.h>
#include <boost/context/detail/fcontext.hpp>
#include <boost/version.hpp>
#include <nugo/nugo.hpp>
#include <nugo/trace.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "../workloads/forkjoin.hpp"

namespace {

namespace ctx = boost::context::detail;

// nugo's own jump (core/src/base/switch_amd64.S), written for Boost 1.74's frames, which the
// runtime uses with that version only (core/src/base/fiber.hpp).
extern "C" ctx::transfer_t nugo_jump_fcontext(ctx::fcontext_t to, void* data);

nugo::Config with_procs(int procs) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = procs;
  return cfg;
}

// A round trip through a second context: Jump is Boost's jump_fcontext or nugo's.
template <ctx::transfer_t (*Jump)(ctx::fcontext_t, void*)>
void round_trips(benchmark::State& state) {
  constexpr std::size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto echo = [](ctx::transfer_t t) {
    for (;;) t = Jump(t.fctx, nullptr);
  };
  ctx::fcontext_t other = ctx::make_fcontext(static_cast<char*>(stack) + kStack, kStack, echo);
  for (auto _ : state) other = Jump(other, nullptr).fctx;
  munmap(stack, kStack);
}

void raw_switch(benchmark::State& state) { round_trips<ctx::jump_fcontext>(state); }
#if BOOST_VERSION == 107400
void raw_switch_nugo(benchmark::State& state) { round_trips<nugo_jump_fcontext>(state); }
#endif

// The *_traced twins run the same loop with the execution tracer recording (nugo/trace.hpp):
// what tracing costs. Records stream to a temporary file as in any trace and are discarded at
// the end, when the timing is over: writing the JSON is post-processing, as `go tool trace`'s.
// No cap: a capped trace would stop recording part way and hide the cost.
class Tracing {
 public:
  explicit Tracing(bool on) : on_(on) {
    if (on_)
      nugo::trace::start(std::filesystem::temp_directory_path() /
                             ("nugo-bench-trace-" + std::to_string(getpid()) + ".json"),
                         std::size_t{1} << 40);
  }
  ~Tracing() {
    if (on_) nugo::trace::discard();
  }
  Tracing(const Tracing&) = delete;
  Tracing& operator=(const Tracing&) = delete;

 private:
  bool on_;
};

void yield_ping(benchmark::State& state, int procs, bool traced) {
  nugo::run([&] {
    Tracing tracing(traced);
    std::atomic<bool> stop{false};
    nugo::WaitGroup wg;
    wg.add(1);
    nugo::go([&] {
      while (!stop.load(std::memory_order_relaxed)) nugo::yield();
      wg.done();
    });
    // Each of our yields is answered by one of the partner's: two switches per round.
    while (state.KeepRunningBatch(2)) nugo::yield();
    stop = true;
    wg.wait();
  }, with_procs(procs));
}

void chain_step(int n, nugo::WaitGroup* wg) {
  if (n == 0)
    wg->done();
  else
    nugo::go([=] { chain_step(n - 1, wg); });
}

void create_and_run(benchmark::State& state, int procs) {
  constexpr int kChain = 10000;
  nugo::run([&] {
    while (state.KeepRunningBatch(kChain)) {
      nugo::WaitGroup wg;
      wg.add(1);
      chain_step(kChain, &wg);
      wg.wait();
    }
  }, with_procs(procs));
}

void fanout_100k(benchmark::State& state, int procs) {
  constexpr int kFanout = 100000;
  nugo::run([&] {
    for (auto _ : state) {
      nugo::WaitGroup wg;
      wg.add(kFanout);
      for (int i = 0; i < kFanout; ++i) nugo::go([&wg] { wg.done(); });
      wg.wait();
    }
  }, with_procs(procs));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// ---- skynet and fib (experiments/workloads/forkjoin.hpp) ----

void skynet_bench(benchmark::State& state, int procs, bool traced) {
  nugo::run([&] {
    Tracing tracing(traced);
    for (auto _ : state) {
      if (workloads::run_skynet() != workloads::kSkynetChecksum)
        state.SkipWithError("skynet: wrong checksum");
    }
  }, with_procs(procs));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void fib_bench(benchmark::State& state, int procs) {
  nugo::run([&] {
    for (auto _ : state) {
      if (workloads::fib(workloads::kFibN) != workloads::fib_serial(workloads::kFibN))
        state.SkipWithError("fib: wrong result");
    }
  }, with_procs(procs));
}

// Go's b.RunParallel: gomaxprocs goroutines share n iterations, claiming them from a shared
// counter in grains (Go sizes a grain to ~100 us of work, at most 10,000 iterations).
template <class Body>
void run_parallel(long n, Body body) {
  constexpr long kGrain = 1000;
  int procs = nugo::gomaxprocs();
  std::atomic<long> claimed{0};
  nugo::WaitGroup wg;
  wg.add(procs);
  for (int p = 0; p < procs; ++p)
    nugo::go([&] {
      long cache = 0;
      body([&] {
        if (cache == 0) {
          long end = claimed.fetch_add(kGrain, std::memory_order_relaxed) + kGrain;
          if (end <= n)
            cache = kGrain;
          else if (end < n + kGrain)
            cache = n + kGrain - end;
          else
            return false;
        }
        --cache;
        return true;
      });
      wg.done();
    });
  wg.wait();
}

// Runs Go's benchmark body `go_bench(n)` for b.N = n, in batches, inside a runtime.
template <class GoBench>
void as_go_benchmark(benchmark::State& state, int procs, long batch, GoBench go_bench) {
  nugo::run([&] {
    while (state.KeepRunningBatch(batch)) go_bench(batch);
  }, with_procs(procs));
}

// BenchmarkChanSync: two goroutines ping-pong on an unbuffered channel.
void chan_sync(benchmark::State& state, int procs) {
  as_go_benchmark(state, procs, 20000, [](long n) {
    constexpr long kCallsPerSched = 1000;
    constexpr int kProcs = 2;
    std::atomic<long> batches{n / kCallsPerSched / kProcs * kProcs};
    nugo::Chan<bool> done(kProcs);
    nugo::Chan<int> myc;
    for (int p = 0; p < kProcs; ++p)
      nugo::go([&] {
        for (;;) {
          long i = batches.fetch_sub(1) - 1;
          if (i < 0) break;
          for (long g = 0; g < kCallsPerSched; ++g) {
            if (i % 2 == 0) {
              myc.recv();
              myc.send(0);
            } else {
              myc.send(0);
              myc.recv();
            }
          }
        }
        done.send(true);
      });
    for (int p = 0; p < kProcs; ++p) done.recv();
  });
}

// benchmarkChanProdCons(chanSize, localWork = 0): a producer and a consumer per P.
void chan_prod_cons(benchmark::State& state, int procs, std::size_t chan_size) {
  as_go_benchmark(state, procs, 20000, [chan_size](long n) {
    constexpr long kCallsPerSched = 1000;
    int gomaxprocs = nugo::gomaxprocs();
    std::atomic<long> batches{n / kCallsPerSched};
    nugo::Chan<bool> done(2 * gomaxprocs);
    nugo::Chan<int> myc(chan_size);
    for (int p = 0; p < gomaxprocs; ++p) {
      nugo::go([&] {
        while (batches.fetch_sub(1) - 1 >= 0)
          for (long g = 0; g < kCallsPerSched; ++g) myc.send(1);
        myc.send(0);
        done.send(true);
      });
      nugo::go([&] {
        while (*myc.recv() != 0) {}
        done.send(true);
      });
    }
    for (int p = 0; p < 2 * gomaxprocs; ++p) done.recv();
  });
}

// The loop of Go's select benchmarks: a token moves between c1 and c2, one select per move.
template <class Next>
void select_ping(const nugo::Chan<int>& c1, const nugo::Chan<int>& c2, Next next) {
  while (next())
    nugo::select(nugo::on_recv(c1, [&](auto) { c2.send(0); }),
                 nugo::on_recv(c2, [&](auto) { c1.send(0); }));
}

// BenchmarkSelectUncontended: each parallel goroutine selects over its own two channels.
void select_uncontended(benchmark::State& state, int procs) {
  as_go_benchmark(state, procs, 100000, [](long n) {
    run_parallel(n, [](auto next) {
      nugo::Chan<int> c1(1), c2(1);
      c1.send(0);
      select_ping(c1, c2, next);
    });
  });
}

// BenchmarkSelectContended: all parallel goroutines select over two shared channels.
void select_contended(benchmark::State& state, int procs) {
  as_go_benchmark(state, procs, 100000, [](long n) {
    int gomaxprocs = nugo::gomaxprocs();
    nugo::Chan<int> c1(gomaxprocs), c2(gomaxprocs);
    run_parallel(n, [&](auto next) {
      c1.send(0);
      select_ping(c1, c2, next);
    });
  });
}

// BenchmarkMutexUncontended: each parallel goroutine locks its own (padded) mutex.
void mutex_uncontended(benchmark::State& state, int procs) {
  as_go_benchmark(state, procs, 1000000, [](long n) {
    run_parallel(n, [](auto next) {
      struct alignas(128) Padded { nugo::Mutex mu; } m;
      while (next()) {
        m.mu.lock();
        m.mu.unlock();
      }
    });
  });
}

// BenchmarkMutex: all parallel goroutines lock one mutex.
void mutex_contended(benchmark::State& state, int procs) {
  as_go_benchmark(state, procs, 1000000, [](long n) {
    nugo::Mutex mu;
    run_parallel(n, [&](auto next) {
      while (next()) {
        mu.lock();
        mu.unlock();
      }
    });
  });
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(nugo::Clock::time_point t) {
  return std::chrono::duration<double>(nugo::Clock::now() - t).count();
}

// 100,000 goroutines each sleeping 1 ms in a loop; one iteration is a 1 s window. Reports
// ns_per_sleep (window / sleeps completed in it) and cpu_cores (process CPU time / window).
// Same definition as BenchmarkTimerChurn in experiments/baselines/go/sync_test.go.
void timer_churn(benchmark::State& state, int procs) {
  constexpr int kGoroutines = 100'000;
  nugo::run([&] {
    std::atomic<long> completed{0};
    std::atomic<bool> stop{false};
    nugo::WaitGroup running, gate, exited, warmed_up;
    running.add(kGoroutines);
    gate.add(1);
    exited.add(kGoroutines);
    warmed_up.add(1);
    for (int g = 0; g < kGoroutines; ++g)
      nugo::go([&] {
        running.done();
        gate.wait();
        while (!stop.load(std::memory_order_relaxed)) {
          nugo::sleep_for(std::chrono::milliseconds(1));
          if (completed.fetch_add(1, std::memory_order_relaxed) + 1 == kGoroutines) warmed_up.done();
        }
        exited.done();
      });
    running.wait();
    gate.done();
    warmed_up.wait();
    double wall = 0, cpu = 0;
    long sleeps = 0;
    for (auto _ : state) {
      auto w0 = nugo::Clock::now();
      double c0 = process_cpu_seconds();
      long s0 = completed.load();
      nugo::sleep_for(std::chrono::seconds(1));
      wall += seconds_since(w0);
      cpu += process_cpu_seconds() - c0;
      sleeps += completed.load() - s0;
    }
    stop = true;
    exited.wait();
    state.counters["ns_per_sleep"] = wall * 1e9 / static_cast<double>(sleeps);
    state.counters["cpu_cores"] = cpu / wall;
  }, with_procs(procs));
}

// Rounds of 100,000 goroutines that each sleep 10 ms once, released together; reports the
// nearest-rank p50_us and p99_us of wake delays (wake time - deadline) over all rounds and
// cpu_cores over the sleeping part. Same definition as BenchmarkTimerWake (Go twin).
void timer_wake(benchmark::State& state, int procs) {
  constexpr int kGoroutines = 100'000;
  std::vector<double> delays_us;
  double sleep_wall = 0, sleep_cpu = 0;
  nugo::run([&] {
    std::vector<double> round(kGoroutines);
    for (auto _ : state) {
      nugo::WaitGroup running, gate, woken;
      running.add(kGoroutines);
      gate.add(1);
      woken.add(kGoroutines);
      for (int g = 0; g < kGoroutines; ++g)
        nugo::go([&, g] {
          running.done();
          gate.wait();
          auto deadline = nugo::Clock::now() + std::chrono::milliseconds(10);
          nugo::sleep_until(deadline);
          round[g] = std::chrono::duration<double, std::micro>(nugo::Clock::now() - deadline).count();
          woken.done();
        });
      running.wait();
      auto w0 = nugo::Clock::now();
      double c0 = process_cpu_seconds();
      gate.done();
      woken.wait();
      sleep_wall += seconds_since(w0);
      sleep_cpu += process_cpu_seconds() - c0;
      delays_us.insert(delays_us.end(), round.begin(), round.end());
    }
  }, with_procs(procs));
  std::sort(delays_us.begin(), delays_us.end());
  auto rank = [&](double q) {
    auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(delays_us.size())));
    return delays_us[std::max<std::size_t>(r, 1) - 1];
  };
  state.counters["p50_us"] = rank(0.50);
  state.counters["p99_us"] = rank(0.99);
  state.counters["cpu_cores"] = sleep_cpu / sleep_wall;
}

// Go's BenchmarkPingPongHog: on 1 P a hog spins on a non-blocking select while a pair hands a
// token back and forth; ns per round trip. The pair shares one inherited slice; the hog gets
// the P when sysmon ends that slice, and the pair gets it back when the hog is preempted.
// One round of b.N = all the run's iterations, as `go test` runs it: the figure is the steady
// state of alternating whole slices. (Batches of 20,000 round trips, about 3 ms of the pair's
// work, each with a hog of its own, measured one 10 ms hog slice per batch: 1.9x Go.)
void ping_pong_hog(benchmark::State& state) {
  as_go_benchmark(state, 1, static_cast<long>(state.max_iterations), [](long n) {
    nugo::Chan<bool> stop, done(3), ping, pong;
    nugo::go([=] {  // the hog
      for (bool stopped = false; !stopped;)
        nugo::select(nugo::on_recv(stop, [&](std::optional<bool>) { stopped = true; }),
                     nugo::on_default([] {}));
      done.send(true);
    });
    nugo::go([=] {
      for (long i = 0; i < n; ++i) pong.send(*ping.recv());
      stop.close();
      done.send(true);
    });
    nugo::go([=] {
      for (long i = 0; i < n; ++i) ping.send(*pong.recv());
      done.send(true);
    });
    ping.send(true);  // serve
    stop.recv();
    ping.recv();  // the last return, so that the second player can finish
    for (int i = 0; i < 3; ++i) done.recv();
  });
}

void register_all() {
  benchmark::RegisterBenchmark("raw_switch", raw_switch)->UseRealTime();
#if BOOST_VERSION == 107400
  benchmark::RegisterBenchmark("raw_switch_nugo", raw_switch_nugo)->UseRealTime();
#endif
  benchmark::RegisterBenchmark("yield_ping/procs:1", yield_ping, 1, false)->UseRealTime();
  benchmark::RegisterBenchmark("yield_ping_traced/procs:1", yield_ping, 1, true)->UseRealTime();
  for (int procs : {1, 2}) {
    std::string suffix = "/procs:" + std::to_string(procs);
    benchmark::RegisterBenchmark(("create_and_run" + suffix).c_str(), create_and_run, procs)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("fanout_100k" + suffix).c_str(), fanout_100k, procs)
        ->UseRealTime();
  }
  for (int procs : {1, 2}) {
    std::string suffix = "/procs:" + std::to_string(procs);
    auto add = [&](const std::string& name, auto fn, auto... args) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), fn, procs, args...)->UseRealTime();
    };
    add("skynet", skynet_bench, false);
    add("skynet_traced", skynet_bench, true);
    add("fib", fib_bench);
    add("chan_sync", chan_sync);
    add("chan_prod_cons0", chan_prod_cons, std::size_t{0});
    add("chan_prod_cons100", chan_prod_cons, std::size_t{100});
    add("select_uncontended", select_uncontended);
    add("select_contended", select_contended);
    add("mutex_uncontended", mutex_uncontended);
    add("mutex_contended", mutex_contended);
    benchmark::RegisterBenchmark(("timer_churn" + suffix).c_str(), timer_churn, procs)
        ->UseRealTime()
        ->Iterations(1);
  }
  benchmark::RegisterBenchmark("timer_wake/procs:2", timer_wake, 2)->UseRealTime()->Iterations(3);
  benchmark::RegisterBenchmark("ping_pong_hog/procs:1", ping_pong_hog)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
