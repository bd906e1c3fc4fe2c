// nugo-preempt-bench: sysmon, preemption and system calls, beside their Go twins in
// experiments/baselines/go/preempt_test.go (scripts/pipeline/preempt.py runs both).
//   preempt_latency/slice:S   1 P: a call-free spinning hog, and a goroutine sleeping 100 us
//                             in a loop; p50_us/p99_us of how late each sleep returns
//   preempt_latency/lock_hog:S   the same with a hog that holds a std::mutex for 20 us at a
//                             time, almost always: preempted at the unlock (threadlocks.hpp)
//   preempt_latency/library_hog:S   the same with a hog that spends nearly all its time in
//                             libc (memcpy of 256 KiB in a loop): the signal stops it only in
//                             the program's own code between two calls (core/README.md, "What
//                             is preemptible"), so this is what that rule costs
//   preempt_overhead/slice:S  1 P: ns per iteration of a compute loop, preempted every slice;
//                             other_cores: the CPU time of every thread but the one running
//                             the loop (sysmon, mostly), over the wall time: the runtime's
//                             background cost while a goroutine runs without blocking
//   preempt_overhead/async:off   the same loop with NUGO_DEBUG=asyncpreemptoff=1
//   syscall_empty             nugo::syscall around nothing: entersyscall + exitsyscall
//   syscall_getpid            nugo::syscall(getpid) (Go: syscall.Syscall(SYS_GETPID))
//   raw_getpid                getpid without the runtime knowing (Go: syscall.RawSyscall)
//   thread_lock/counted       an uncontended std::mutex lock + unlock in a goroutine, through
//                             nugo's counting interposers
//   thread_lock/direct        the same through libc's pthread_mutex_lock/unlock called
//                             directly: the interposers' cost is counted - direct
//   syscall_storm             400 goroutines each in a 1 s nanosleep syscall at once:
//                             threads_peak while they sleep, threads_after 2 s later
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <benchmark/benchmark.h>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

nugo::Config config(std::chrono::nanoseconds slice, bool async = true, int procs = 1) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = procs;
  cfg.timeslice = slice;
  cfg.async_preempt = async;
  return cfg;
}

int threads_in_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

double nearest_rank(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(r, 1) - 1];
}

__attribute__((noinline)) void spin(const std::atomic<bool>* stop) {
  while (!stop->load(std::memory_order_relaxed)) {
  }
}

// Holds a std::mutex for 20 us at a time, with only a few instructions between unlock and
// the next lock: the preemption signal nearly always finds the lock held.
__attribute__((noinline)) void lock_hog(const std::atomic<bool>* stop) {
  std::mutex mu;
  while (!stop->load(std::memory_order_relaxed)) {
    std::lock_guard lock(mu);
    auto end = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < end) {
    }
  }
}

// Copies 256 KiB at a time through libc's memcpy (a call the compiler cannot inline or
// elide), with a few instructions of the program's own between two calls.
__attribute__((noinline)) void library_hog(const std::atomic<bool>* stop) {
  static std::vector<char> from(256 * 1024, 'x'), to(256 * 1024);
  void* (*volatile copy)(void*, const void*, std::size_t) = &std::memcpy;
  while (!stop->load(std::memory_order_relaxed)) copy(to.data(), from.data(), from.size());
}

enum class Hog { spin, lock, library };

void preempt_latency(benchmark::State& state, std::chrono::nanoseconds slice, int samples, Hog hog) {
  std::vector<double> late_us;
  for (auto _ : state) {
    nugo::run([&] {
      std::atomic<bool> stop{false};
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([&] {
        if (hog == Hog::spin)
          spin(&stop);
        else if (hog == Hog::lock)
          lock_hog(&stop);
        else
          library_hog(&stop);
        wg.done();
      });
      nugo::yield();
      for (int i = 0; i < samples; ++i) {
        auto t0 = nugo::Clock::now();
        nugo::sleep_for(100us);
        late_us.push_back(
            std::chrono::duration<double, std::micro>(nugo::Clock::now() - t0 - 100us).count());
      }
      stop = true;
      wg.wait();
    }, config(slice));
  }
  state.counters["p50_us"] = nearest_rank(late_us, 0.50);
  state.counters["p99_us"] = nearest_rank(late_us, 0.99);
  state.counters["slice_us"] = std::chrono::duration<double, std::micro>(slice).count();
}

// On-CPU nanoseconds of each thread of this process, from /proc/self/task/*/schedstat.
std::vector<std::pair<int, double>> thread_cpu_ns() {
  std::vector<std::pair<int, double>> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "schedstat");
    double ns = 0;
    if (f >> ns) out.emplace_back(std::stoi(task.path().filename().string()), ns);
  }
  return out;
}

// The CPU time between two snapshots of every thread but the busiest (the one that ran the
// loop), in ns. A thread born in between counts from zero; one that left is not counted.
double others_cpu_ns(const std::vector<std::pair<int, double>>& before,
                     const std::vector<std::pair<int, double>>& after) {
  double total = 0, busiest = 0;
  for (auto [tid, ns] : after) {
    double start = 0;
    for (auto [t0, ns0] : before)
      if (t0 == tid) start = ns0;
    total += ns - start;
    busiest = std::max(busiest, ns - start);
  }
  return total - busiest;
}

// noipa, not just noinline: with noinline alone GCC proves the function pure and calls it
// once for the whole benchmark loop, which then measures nothing ("0.000 ns/iter").
__attribute__((noipa)) std::uint64_t compute(std::uint64_t iters) {
  std::uint64_t x = 88172645463325252ull;
  for (std::uint64_t i = 0; i < iters; ++i) {  // xorshift: no calls, no memory
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

void preempt_overhead(benchmark::State& state, std::chrono::nanoseconds slice, bool async) {
  constexpr std::uint64_t kIters = 200'000'000;
  double others_ns = 0, wall_ns = 0;
  nugo::run([&] {
    auto cpu0 = thread_cpu_ns();
    auto t0 = nugo::Clock::now();
    for (auto _ : state) {
      std::uint64_t iters = kIters;
      benchmark::DoNotOptimize(iters);
      benchmark::DoNotOptimize(compute(iters));
    }
    wall_ns = static_cast<double>(std::chrono::nanoseconds(nugo::Clock::now() - t0).count());
    others_ns = others_cpu_ns(cpu0, thread_cpu_ns());
  }, config(slice, async));
  state.counters["other_cores"] = others_ns / wall_ns;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kIters));
  state.counters["ns_per_iter"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kIters),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void thread_lock(benchmark::State& state, bool counted) {
  // libc's own functions: the next definitions after this executable, which holds nugo's.
  using LockFn = int (*)(pthread_mutex_t*);
  auto libc_lock = reinterpret_cast<LockFn>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  auto libc_unlock = reinterpret_cast<LockFn>(dlsym(RTLD_NEXT, "pthread_mutex_unlock"));
  nugo::run([&] {
    std::mutex mu;
    pthread_mutex_t* m = mu.native_handle();
    if (counted) {
      for (auto _ : state) {
        mu.lock();
        benchmark::ClobberMemory();
        mu.unlock();
      }
    } else {
      for (auto _ : state) {
        libc_lock(m);
        benchmark::ClobberMemory();
        libc_unlock(m);
      }
    }
  }, config(10ms));
}

void syscall_empty(benchmark::State& state) {
  nugo::run([&] {
    for (auto _ : state) nugo::syscall([] {});
  }, config(10ms));
}

void syscall_getpid(benchmark::State& state) {
  nugo::run([&] {
    for (auto _ : state) benchmark::DoNotOptimize(nugo::syscall([] { return ::syscall(SYS_getpid); }));
  }, config(10ms));
}

void raw_getpid(benchmark::State& state) {
  nugo::run([&] {
    for (auto _ : state) benchmark::DoNotOptimize(::syscall(SYS_getpid));
  }, config(10ms));
}

void syscall_storm(benchmark::State& state) {
  constexpr int kSleepers = 400;
  int peak = 0, after = 0;
  for (auto _ : state) {
    nugo::run([&] {
      nugo::WaitGroup wg;
      wg.add(kSleepers);
      for (int i = 0; i < kSleepers; ++i)
        nugo::go([&] {
          nugo::sys::nanosleep(1s);
          wg.done();
        });
      nugo::sleep_for(500ms);
      peak = threads_in_process();
      wg.wait();
      nugo::sleep_for(2s);
      after = threads_in_process();
    }, config(10ms, true, 2));
  }
  state.counters["threads_peak"] = peak;
  state.counters["threads_after"] = after;
}

void register_all() {
  struct Slice { const char* name; std::chrono::nanoseconds d; int samples; };
  for (Slice s : {Slice{"10ms", 10ms, 100}, Slice{"1ms", 1ms, 400}, Slice{"200us", 200us, 1000}}) {
    benchmark::RegisterBenchmark((std::string("preempt_latency/slice:") + s.name).c_str(),
                                 preempt_latency, s.d, s.samples, Hog::spin)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark((std::string("preempt_latency/lock_hog:") + s.name).c_str(),
                                 preempt_latency, s.d, s.samples, Hog::lock)
        ->UseRealTime()
        ->Iterations(1);
    // A fifth of the samples: each waits for the hog to leave libc, up to seconds at 10 ms.
    benchmark::RegisterBenchmark((std::string("preempt_latency/library_hog:") + s.name).c_str(),
                                 preempt_latency, s.d, s.samples / 5, Hog::library)
        ->UseRealTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark((std::string("preempt_overhead/slice:") + s.name).c_str(),
                                 preempt_overhead, s.d, true)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("preempt_overhead/async:off", preempt_overhead, 10ms, false)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("thread_lock/counted", thread_lock, true)->UseRealTime();
  benchmark::RegisterBenchmark("thread_lock/direct", thread_lock, false)->UseRealTime();
  benchmark::RegisterBenchmark("syscall_empty", syscall_empty)->UseRealTime();
  benchmark::RegisterBenchmark("syscall_getpid", syscall_getpid)->UseRealTime();
  benchmark::RegisterBenchmark("raw_getpid", raw_getpid)->UseRealTime();
  benchmark::RegisterBenchmark("syscall_storm", syscall_storm)->UseRealTime()->Iterations(1);
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
