// nugo-floor: what this machine charges for the parts no scheduler can avoid, so that the
// runtime's costs per operation can be set against them:
//   xchg_ns, cmpxchg_ns   one uncontended atomic read-modify-write (a tight loop of them)
//   signal_us             what one signal sent by another thread (tgkill) costs a thread
//                         that computes: its loss per signal, at 1,000 and 5,000 a second,
//                         with an empty handler; the median of 5 rounds, each against a run
//                         without signals just before. Asynchronous preemption pays this
//                         at least.
// Plain threads, no runtime. Prints one JSON object; scripts/pipeline/preempt.py shows it.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

template <class Op>
double ns_per_op(Op op) {
  constexpr long kN = 50'000'000;
  auto t0 = Clock::now();
  for (long i = 0; i < kN; ++i) op(i);
  return seconds(Clock::now() - t0) * 1e9 / kN;
}

std::atomic<int> spinner_tid{0};

// xorshift, as nugo-preempt-bench's compute loop: no calls, no memory.
__attribute__((noipa)) double ns_per_iteration(double secs) {
  spinner_tid = static_cast<int>(syscall(SYS_gettid));
  std::uint64_t x = 88172645463325252ull, n = 0;
  auto t0 = Clock::now(), end = t0 + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(secs));
  do {
    for (int i = 0; i < 100'000; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    n += 100'000;
  } while (Clock::now() < end);
  spinner_tid = 0;
  asm volatile("" : : "r"(x));  // the result is used
  return seconds(Clock::now() - t0) * 1e9 / static_cast<double>(n);
}

// The loss per signal, in microseconds, at `rate` signals a second, against base_ns, the
// same loop without signals measured just before.
double signal_cost_us(int rate, double base_ns, double secs) {
  std::atomic<bool> stop{false};
  long sent = 0;
  std::thread sender([&] {
    while (spinner_tid.load() == 0) {
    }
    auto period = std::chrono::nanoseconds(1'000'000'000 / rate);
    for (auto next = Clock::now(); !stop.load(); next += period) {
      if (int tid = spinner_tid.load()) syscall(SYS_tgkill, getpid(), tid, SIGURG), ++sent;
      std::this_thread::sleep_until(next + period);
    }
  });
  double with = ns_per_iteration(secs);
  stop = true;
  sender.join();
  double lost_s = (with / base_ns - 1) * secs;  // the computing time the signals took
  return lost_s * 1e6 / static_cast<double>(sent);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigaction(SIGURG, &sa, nullptr);
  std::atomic<std::uint32_t> word{0};
  double xchg = ns_per_op([&](long i) { word.exchange(static_cast<std::uint32_t>(i)); });
  double cas = ns_per_op([&](long i) {
    auto expected = static_cast<std::uint32_t>(i);
    word.compare_exchange_strong(expected, expected + 1);
  });
  // Five rounds, each a run without signals and then one with, so that the machine's drift
  // hits both; the median of the rounds' costs.
  constexpr double kSecs = 0.5;
  std::vector<double> at1k, at5k, base;
  for (int round = 0; round < 5; ++round) {
    base.push_back(ns_per_iteration(kSecs));
    at1k.push_back(signal_cost_us(1000, base.back(), kSecs));
    base.push_back(ns_per_iteration(kSecs));
    at5k.push_back(signal_cost_us(5000, base.back(), kSecs));
  }
  std::printf("{\"xchg_ns\": %.2f, \"cmpxchg_ns\": %.2f, \"signal_us_at_1000_per_s\": %.2f, "
              "\"signal_us_at_5000_per_s\": %.2f, \"compute_ns_per_iter\": %.4f}\n",
              xchg, cas, median(at1k), median(at5k), median(base));
  return 0;
}
