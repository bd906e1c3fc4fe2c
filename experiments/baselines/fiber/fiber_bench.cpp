// Boost.Fiber twins of nugo's scheduler micro-benchmarks.
//
// Each benchmark does the work of the nugo benchmark of the same name (see
// experiments/baselines/README.md), so that scripts/pipeline/micro.py can put nugo,
// Go and Boost.Fiber side by side. Names are the contract with micro.py:
//
//   yield_ping/procs:1       ns per fiber switch (round_robin, 2 fibers)
//   create_and_run/procs:N   ns per fiber of a chain where each fiber
//                            launches the next one and exits
//   fanout_100k/procs:N      ns per fan-out of 100,000 fibers that each
//                            decrement a shared counter; reports the
//                            process's peak RSS as counter peak_rss_mib
//   skynet/procs:N           ns per whole skynet run (1,111,111 fibers
//                            passing sums up a 10-ary tree over channels);
//                            fails on a wrong checksum; reports
//                            peak_rss_mib like fanout_100k
//
// procs:1 runs on the benchmark thread with Boost.Fiber's default
// round_robin scheduler. procs:2 runs on a pool of two threads under
// boost::fibers::algo::work_stealing, Boost.Fiber's closest match to Go's
// stealing Ps. work_stealing can be installed only once per process (its
// constructor waits on a static barrier sized by the first thread count and
// registers itself in a static table), so the pool is created on first use
// and kept until exit, and the benchmark thread never installs it itself:
// that keeps procs:1 on round_robin whatever order the benchmarks run in.

#include <benchmark/benchmark.h>

#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/fiber/all.hpp>

#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "skynet.hpp"

namespace {

// Counts outstanding fibers and wakes one waiting fiber when the count
// reaches zero: a WaitGroup, the same protocol as nugo's fan-out (an atomic
// decrement; only the last one takes the lock and wakes the waiter). The
// mutex and condition variable are Boost.Fiber's, so the waiter blocks its
// fiber, not its thread, and they work across the pool's threads.
class FiberWaitGroup {
 public:
  explicit FiberWaitGroup(std::int64_t count) : pending_(count) {}

  void done() {
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    all_done_ = true;
    all_done_cv_.notify_one();
  }

  void wait() {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    all_done_cv_.wait(lock, [this] { return all_done_; });
  }

 private:
  std::atomic<std::int64_t> pending_;
  boost::fibers::mutex mutex_;
  boost::fibers::condition_variable all_done_cv_;
  bool all_done_ = false;
};

// Two threads running work_stealing, parked on a std::condition_variable
// between jobs so that they do not spin while other benchmarks run.
//
// run(job) executes job on the main fiber of the first pool thread, where
// the fibers it launches land in that thread's queue; meanwhile the second
// thread's main fiber blocks on a fiber condition variable, which leaves its
// dispatcher looping in work_stealing::pick_next and stealing. Both threads
// spin while they have nothing to run (work_stealing without suspend), like
// Go's spinning Ms; with suspend they would sleep and never be woken to
// steal, since work_stealing only notifies a thread of fibers made ready
// on it from elsewhere.
class WorkStealingPool {
 public:
  static constexpr std::uint32_t kThreads = 2;

  WorkStealingPool()
      : runner_([this] { runner_loop(); }), stealer_([this] { stealer_loop(); }) {}

  ~WorkStealingPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutting_down_ = true;
    }
    wake_.notify_all();
    runner_.join();
    stealer_.join();
  }

  WorkStealingPool(const WorkStealingPool&) = delete;
  WorkStealingPool& operator=(const WorkStealingPool&) = delete;

  // Blocks the calling thread (not a fiber of the pool) until job returns.
  void run(std::function<void()> job) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = std::move(job);
    job_running_ = true;
    stealer_idle_ = false;  // Set here, not by the stealer, so it cannot race.
    ++job_generation_;
    wake_.notify_all();
    job_finished_.wait(lock, [this] { return !job_running_; });
  }

 private:
  void install_work_stealing() {
    // Returns only once both pool threads have installed it.
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(kThreads);
  }

  // Waits for the next job; false means the pool is shutting down.
  bool wait_for_job(std::uint64_t& seen_generation) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return shutting_down_ || job_generation_ != seen_generation; });
    seen_generation = job_generation_;
    return !shutting_down_;
  }

  void runner_loop() {
    install_work_stealing();
    std::uint64_t seen_generation = 0;
    while (wait_for_job(seen_generation)) {
      job_();
      // Release the stealer first so that it is parked again, not spinning,
      // by the time the next benchmark (maybe a procs:1 one) starts timing.
      {
        std::lock_guard<boost::fibers::mutex> lock(stealer_mutex_);
        stealer_released_ = true;
      }
      stealer_release_cv_.notify_one();
      std::unique_lock<std::mutex> lock(mutex_);
      stealer_parked_.wait(lock, [this] { return stealer_idle_; });
      job_running_ = false;
      job_finished_.notify_all();
    }
  }

  void stealer_loop() {
    install_work_stealing();
    std::uint64_t seen_generation = 0;
    while (wait_for_job(seen_generation)) {
      {
        std::unique_lock<boost::fibers::mutex> lock(stealer_mutex_);
        stealer_release_cv_.wait(lock, [this] { return stealer_released_; });
        stealer_released_ = false;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      stealer_idle_ = true;
      stealer_parked_.notify_one();
    }
  }

  // Hand-off between the benchmark thread and the pool (thread-blocking).
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable job_finished_;
  std::condition_variable stealer_parked_;
  std::function<void()> job_;
  std::uint64_t job_generation_ = 0;
  bool job_running_ = false;
  bool stealer_idle_ = true;
  bool shutting_down_ = false;

  // Holds the stealer's main fiber off its thread while a job runs
  // (fiber-blocking, so the thread keeps stealing).
  boost::fibers::mutex stealer_mutex_;
  boost::fibers::condition_variable stealer_release_cv_;
  bool stealer_released_ = false;

  std::thread runner_;
  std::thread stealer_;
};

WorkStealingPool& work_stealing_pool() {
  static WorkStealingPool pool;
  return pool;
}

// Runs job with procs scheduling threads: on the calling thread under its
// default round_robin for 1, on the work_stealing pool for 2.
void run_on_procs(std::int64_t procs, const std::function<void()>& job) {
  if (procs == 1) {
    job();
  } else {
    work_stealing_pool().run(job);
  }
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB.
}

// The benchmark thread's main fiber is one side of the ping, a second fiber
// the other: each yield switches to the other one. One batch of two
// iterations is one round trip, so real_time per iteration is per switch.
void yield_ping(benchmark::State& state) {
  std::atomic<bool> stop{false};
  boost::fibers::fiber partner([&stop] {
    while (!stop.load(std::memory_order_relaxed)) boost::this_fiber::yield();
  });
  while (state.KeepRunningBatch(2)) boost::this_fiber::yield();
  stop.store(true, std::memory_order_relaxed);
  partner.join();
}

// One link of the create_and_run chain: launch the next link (queued, as
// `go f()` queues it) and exit. Detached, since nobody joins a link.
void chain_link(std::int64_t remaining, FiberWaitGroup& chain_end) {
  if (remaining == 0) {
    chain_end.done();
    return;
  }
  boost::fibers::fiber(chain_link, remaining - 1, std::ref(chain_end)).detach();
}

// Like Go's BenchmarkCreateGoroutines: the whole run is one chain as long as
// the iteration count, so real_time per iteration is per fiber.
void create_and_run(benchmark::State& state) {
  const std::int64_t procs = state.range(0);
  const std::int64_t links = static_cast<std::int64_t>(state.max_iterations);
  while (state.KeepRunningBatch(state.max_iterations)) {
    run_on_procs(procs, [links] {
      FiberWaitGroup chain_end(1);
      boost::fibers::fiber(chain_link, links, std::ref(chain_end)).detach();
      chain_end.wait();
    });
  }
}

constexpr std::int64_t kFanOutWidth = 100'000;

void fanout_100k(benchmark::State& state) {
  const std::int64_t procs = state.range(0);
  for (auto _ : state) {
    run_on_procs(procs, [] {
      FiberWaitGroup pending(kFanOutWidth);
      for (std::int64_t i = 0; i < kFanOutWidth; ++i) {
        boost::fibers::fiber([&pending] { pending.done(); }).detach();
      }
      pending.wait();
    });
  }
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

// skynet: a 10-ary tree of fibers with 1,000,000 leaves (skynet.hpp, shared with
// fiber-workload); the root's sum must be 0 + 1 + ... + 999,999.
constexpr std::int64_t kSkynetLeaves = 1'000'000;
constexpr std::int64_t kSkynetChecksum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;

// One whole tree per iteration, so real_time per iteration is per run. A
// wrong sum fails the benchmark (error_occurred in its JSON).
void skynet(benchmark::State& state) {
  const std::int64_t procs = state.range(0);
  for (auto _ : state) {
    std::int64_t sum = -1;
    run_on_procs(procs, [&sum] {
      sum = fiber_skynet::run(kSkynetLeaves);
    });
    if (sum != kSkynetChecksum) {
      state.SkipWithError(("skynet sum " + std::to_string(sum) + ", want " +
                           std::to_string(kSkynetChecksum))
                              .c_str());
      break;
    }
  }
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

}  // namespace

int main(int argc, char** argv) {
  // Registered by hand rather than with BENCHMARK() so that the names carry
  // the procs:N argument exactly as nugo-bench spells it.
  benchmark::RegisterBenchmark("yield_ping", yield_ping)->ArgName("procs")->Arg(1)->UseRealTime();
  benchmark::RegisterBenchmark("create_and_run", create_and_run)
      ->ArgName("procs")
      ->Arg(1)
      ->Arg(2)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fanout_100k", fanout_100k)
      ->ArgName("procs")
      ->Arg(1)
      ->Arg(2)
      ->UseRealTime()
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("skynet", skynet)
      ->ArgName("procs")
      ->Arg(1)
      ->Arg(2)
      ->UseRealTime()
      ->Unit(benchmark::kNanosecond);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
