// nugo's micro-benchmarks. The names are shared with the Go and Boost.Fiber twins
// (experiments/baselines) and with scripts/micro.py, which runs all three side by side and
// prints ratios. Every figure is real (wall-clock) time per unit of work:
//   raw_switch               one jump_fcontext round trip (two switches): the floor
//   yield_ping/procs:1       one goroutine switch by nugo::yield, two goroutines on 1 P
//   create_and_run/procs:N   one goroutine of a chain in which each spawns the next
//   fanout_100k/procs:N      spawning 100,000 goroutines and waiting for all of them
// The goroutine benchmarks run their timing loop inside the main goroutine.
#include <sys/resource.h>
#include <sys/mman.h>

#include <atomic>
#include <benchmark/benchmark.h>
#include <boost/context/detail/fcontext.hpp>
#include <nugo/nugo.hpp>
#include <string>

namespace {

namespace ctx = boost::context::detail;

nugo::Config with_procs(int procs) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = procs;
  return cfg;
}

void raw_switch(benchmark::State& state) {
  constexpr std::size_t kStack = 64 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto echo = [](ctx::transfer_t t) {
    for (;;) t = ctx::jump_fcontext(t.fctx, nullptr);
  };
  ctx::fcontext_t other = ctx::make_fcontext(static_cast<char*>(stack) + kStack, kStack, echo);
  for (auto _ : state) other = ctx::jump_fcontext(other, nullptr).fctx;
  munmap(stack, kStack);
}

void yield_ping(benchmark::State& state, int procs) {
  nugo::run([&] {
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

void register_all() {
  benchmark::RegisterBenchmark("raw_switch", raw_switch)->UseRealTime();
  benchmark::RegisterBenchmark("yield_ping/procs:1", yield_ping, 1)->UseRealTime();
  for (int procs : {1, 2}) {
    std::string suffix = "/procs:" + std::to_string(procs);
    benchmark::RegisterBenchmark(("create_and_run" + suffix).c_str(), create_and_run, procs)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("fanout_100k" + suffix).c_str(), fanout_100k, procs)
        ->UseRealTime();
  }
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
