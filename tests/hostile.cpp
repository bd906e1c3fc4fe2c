// Programs that attack the runtime the way a hostile user would, run as child processes by
// hostile_test.cpp (a crash or a hang then fails one test instead of the suite). Each prints
// what it checked and exits 0 when the runtime behaved, non-zero when it did not. The P count
// and the slice come from the environment (NUGO_PROCS, NUGO_TIMESLICE).
//
//   nugo_hostile x87-sum             long double sums under preemption equal a plain thread's
//   nugo_hostile x87-stack           x87 register stacks survive preemption and migration
//   nugo_hostile mix SEED            yields, channels and compute between partners
//   nugo_hostile random SEED [N [H]] seeded random programs that check themselves
//                                    (program.hpp; N seeds from SEED, one run() each; a
//                                    program without progress for H s (60) is a hang)
//   nugo_hostile bytes FILE...       the fuzzer's inputs run as programs (tests/fuzz/corpus)
//   nugo_hostile yield-spin          goroutines yielding in a loop beside compute
//   nugo_hostile std-mutex           goroutines taking a std::mutex held across compute
//   nugo_hostile static-init         function-local statics with slow initializers
//   nugo_hostile exit-holding-lock   goroutines on a G whose last owner died holding a lock
//   nugo_hostile no-threads          run() when not even sysmon's thread can be created
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nugo/nugo.hpp>
#include <csignal>
#include <chrono>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "counted.hpp"
#include "program.hpp"

using namespace std::chrono_literals;

namespace {

// ---- x87 ----

// A long double loop the compiler keeps on the x87 stack: about 40 ms for 20 million terms,
// so a 10 ms slice ends inside it several times.
__attribute__((noinline)) long double harmonic(std::int64_t n) {
  long double s = 0;
  for (std::int64_t i = 1; i <= n; ++i) s += 1.0L / static_cast<long double>(i);
  return s;
}

int x87_sum() {
  constexpr std::int64_t kTerms = 20'000'000;
  constexpr int kGoroutines = 4;
  long double expected = 0;
  std::thread([&] { expected = harmonic(kTerms); }).join();
  std::atomic<int> wrong{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int i = 0; i < kGoroutines; ++i) {
      wg.add(1);
      nugo::go([&] {
        long double s = harmonic(kTerms);
        if (std::memcmp(&s, &expected, 10) != 0) {
          std::printf("wrong sum %.21Lg, expected %.21Lg\n", s, expected);
          wrong.fetch_add(1);
        }
        wg.done();
      });
    }
    wg.wait();
  });
  std::printf("x87-sum: %d of %d sums wrong\n", wrong.load(), kGoroutines);
  return wrong.load() == 0 ? 0 : 1;
}

// Pushes five constants on the x87 stack, spins with them there (where the signal lands),
// then pops them and compares. Returns false if any came back changed.
__attribute__((noinline)) bool x87_stack_round(std::uint32_t spins) {
  long double out[5];
  __asm__ volatile(
      "fld1\n\t"
      "fldpi\n\t"
      "fldl2e\n\t"
      "fldln2\n\t"
      "fldlg2\n\t"
      "mov %[spins], %%ecx\n\t"
      "1: dec %%ecx\n\t"
      "jnz 1b\n\t"
      "fstpt 0(%[out])\n\t"
      "fstpt 16(%[out])\n\t"
      "fstpt 32(%[out])\n\t"
      "fstpt 48(%[out])\n\t"
      "fstpt 64(%[out])\n\t"
      :
      : [spins] "r"(spins), [out] "r"(out)
      : "ecx", "memory", "cc", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)");
  const long double log10_2 = 0.301029995663981195213738894724493027L;
  const long double ln2 = 0.693147180559945309417232121458176568L;
  const long double log2_e = 1.44269504088896340735992468100189214L;
  const long double pi = 3.14159265358979323846264338327950288L;
  return std::fabs(out[0] - log10_2) < 1e-18L && std::fabs(out[1] - ln2) < 1e-18L &&
         std::fabs(out[2] - log2_e) < 1e-18L && std::fabs(out[3] - pi) < 1e-18L &&
         out[4] == 1.0L;
}

int x87_stack() {
  constexpr int kGoroutines = 8;
  constexpr int kRounds = 4000;
  std::atomic<int> wrong{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int i = 0; i < kGoroutines; ++i) {
      wg.add(1);
      nugo::go([&] {
        for (int r = 0; r < kRounds; ++r)
          if (!x87_stack_round(20'000)) wrong.fetch_add(1);
        wg.done();
      });
    }
    wg.wait();
  });
  std::printf("x87-stack: %d of %d rounds wrong\n", wrong.load(), kGoroutines * kRounds);
  return wrong.load() == 0 ? 0 : 1;
}

// ---- crash and hang mixes ----

// Spawns f counted in wg (counted.hpp).
template <class F>
void go_counted(nugo::WaitGroup& wg, F f) {
  nugo::go(testing_counted::counted(wg, std::move(f)));
}

__attribute__((noinline)) std::uint64_t compute(std::uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

// Pairs of goroutines pass a token back and forth through unbuffered channels; others yield
// and compute. Every goroutine does a fixed amount of work, so the total is known.
int mix(std::uint32_t seed) {
  constexpr int kPairs = 8, kRounds = 3000, kYielders = 4, kComputers = 2;
  std::atomic<std::uint64_t> sum{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int p = 0; p < kPairs; ++p) {
      nugo::Chan<int> ping, pong;
      go_counted(wg, [=, &sum] {
        for (int r = 0; r < kRounds; ++r) {
          ping.send(r);
          int v = *pong.recv();
          sum.fetch_add(static_cast<std::uint64_t>(v), std::memory_order_relaxed);
          if (r % 7 == 0) compute(seed + r, 2000);
        }
      });
      go_counted(wg, [=] {
        for (int r = 0; r < kRounds; ++r) {
          int v = *ping.recv();
          if (r % 5 == 0) nugo::yield();
          pong.send(v + 1);
        }
      });
    }
    // Compute for about a slice, then yield: the preemption signal is often on its way when
    // the yield begins.
    for (int y = 0; y < kYielders; ++y) {
      wg.add(1);
      nugo::go([&, y] {
        std::uint64_t x = seed * 31 + y;
        for (int r = 0; r < kRounds * 4; ++r) {
          x = compute(x, 5000 + static_cast<int>(x >> 48));
          nugo::yield();
        }
        if (x == 42) std::puts("");
        wg.done();
      });
    }
    for (int c = 0; c < kComputers; ++c) {
      wg.add(1);
      nugo::go([&, c] {
        std::uint64_t x = seed + c;
        for (int r = 0; r < 2000; ++r) x = compute(x, 100'000);
        if (x == 42) std::puts("");  // keep x alive
        wg.done();
      });
    }
    wg.wait();
  });
  std::uint64_t want = std::uint64_t{kPairs} * kRounds * (kRounds + 1) / 2;
  std::printf("mix: sum %llu, expected %llu\n", static_cast<unsigned long long>(sum.load()),
              static_cast<unsigned long long>(want));
  return sum.load() == want ? 0 : 1;
}

// The configuration NUGO_* asks for; false (having said why) if it is malformed.
bool config_from_env(nugo::Config* cfg) {
  try {
    *cfg = nugo::Config::from_env();
    return true;
  } catch (const nugo::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return false;
  }
}

// Seeded random programs (program.hpp), one run() each. A watchdog thread turns a program
// that has not finished in hang_seconds into a report: the seed, then the runtime's goroutine
// dump (SIGQUIT), exit 2.
int random_programs(const nugo::Config& cfg, std::uint32_t first, int count, int hang_seconds) {
  std::atomic<std::uint32_t> current{first};
  std::atomic<int> started{0};
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    int last = -1;
    auto since = std::chrono::steady_clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(100ms);
      if (int now = started.load(); now != last) {
        last = now;
        since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - since > std::chrono::seconds(hang_seconds)) {
        std::printf("random %u: no progress in %d s (a lost wake-up?); goroutine dump:\n",
                    current.load(), hang_seconds);
        std::fflush(stdout);
        kill(getpid(), SIGQUIT);  // the runtime prints every goroutine and exits 2
        std::this_thread::sleep_for(10s);
        _exit(3);
      }
    }
  });
  int rc = 0;
  long long goroutines = 0;
  for (int i = 0; i < count && rc == 0; ++i) {
    std::uint32_t seed = first + static_cast<std::uint32_t>(i);
    current.store(seed);
    started.fetch_add(1);
    program::Outcome out = program::run_seed(seed, cfg);
    goroutines += out.goroutines;
    if (!out.ok) {
      std::printf("random %u: %s (%d goroutines)\n", seed, out.failure.c_str(), out.goroutines);
      rc = 1;
    }
  }
  finished.store(true);
  watchdog.join();
  if (rc == 0) std::printf("random %u..%u: %d programs passed, %lld goroutines\n", first,
                           first + static_cast<std::uint32_t>(count) - 1, count, goroutines);
  return rc;
}

// Inputs of the fuzzer (tests/fuzz/), each run as the program its bytes describe.
int replay_inputs(const nugo::Config& cfg, int n, char** paths) {
  for (int i = 0; i < n; ++i) {
    std::FILE* f = std::fopen(paths[i], "rb");
    if (!f) {
      std::fprintf(stderr, "nugo_hostile bytes: cannot read %s: %s\n", paths[i], std::strerror(errno));
      return 2;
    }
    std::vector<std::uint8_t> bytes;
    for (int c; (c = std::fgetc(f)) != EOF;) bytes.push_back(static_cast<std::uint8_t>(c));
    std::fclose(f);
    program::Outcome out = program::run_bytes(bytes.data(), bytes.size(), cfg);
    if (!out.ok) {
      std::printf("%s: %s (%d goroutines)\n", paths[i], out.failure.c_str(), out.goroutines);
      return 1;
    }
  }
  std::printf("bytes: %d inputs passed\n", n);
  return 0;
}

int yield_spin() {
  constexpr int kYielders = 4, kYields = 20'000;
  std::atomic<int> yields{0};
  nugo::run([&] {
    std::atomic<bool> stop{false};
    nugo::WaitGroup wg, spinners;
    for (int i = 0; i < kYielders; ++i) {
      wg.add(1);
      nugo::go([&] {
        std::uint64_t x = 7;
        for (int r = 0; r < kYields; ++r) {
          x = compute(x, 2000 + static_cast<int>(x >> 50));
          nugo::yield();
          yields.fetch_add(1, std::memory_order_relaxed);
        }
        if (x == 42) std::puts("");
        wg.done();
      });
    }
    for (int i = 0; i < 2; ++i) {
      spinners.add(1);
      nugo::go([&] {
        std::uint64_t x = 1;
        while (!stop.load(std::memory_order_relaxed)) x = compute(x, 1000);
        if (x == 42) std::puts("");
        spinners.done();
      });
    }
    wg.wait();
    stop.store(true);
    spinners.wait();
  });
  std::printf("yield-spin: %d yields\n", yields.load());
  return yields.load() == kYielders * kYields ? 0 : 1;
}

__attribute__((noinline)) void spin_for(std::chrono::nanoseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Two goroutines on one P take a std::mutex, compute 20 us holding it, and let go, for a
// fixed number of rounds. A preemption while one holds it would make the other block its
// thread in the kernel, forever.
int std_mutex() {
  constexpr int kRounds = 20'000;
  std::atomic<int> rounds{0};
  std::mutex mu;
  std::shared_mutex rw;
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int i = 0; i < 4; ++i) {
      wg.add(1);
      nugo::go([&, i] {
        for (int r = 0; r < kRounds / 4; ++r) {
          if (i == 0) {  // also asks to yield while holding it: deferred to the unlock
            std::lock_guard lock(mu);
            for (int k = 0; k < 20; ++k) {
              spin_for(1us);
              nugo::preempt_point();
            }
          } else if (i == 2) {
            std::lock_guard lock(mu);
            spin_for(20us);
          } else {
            std::unique_lock lock(rw);
            spin_for(20us);
          }
          rounds.fetch_add(1, std::memory_order_relaxed);
        }
        wg.done();
      });
    }
    wg.wait();
  });
  std::printf("std-mutex: %d rounds\n", rounds.load());
  return rounds.load() == kRounds ? 0 : 1;
}

// A goroutine that exits holding a std::mutex leaves the lock to nobody; the G it ran on is
// recycled at once, and the goroutines that get it must still be preemptible: at 1 P, main
// runs again only if each call-free spinner is preempted.
int exit_holding_lock() {
  constexpr int kRounds = 100;
  static std::mutex mutexes[kRounds];  // left locked; std::mutex's destructor is trivial here
  int rounds = 0;
  nugo::run([&] {
    for (int r = 0; r < kRounds; ++r) {
      std::mutex* mu = &mutexes[r];
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([&] {
        mu->lock();  // and exits holding it
        wg.done();
      });
      wg.wait();
      std::atomic<bool> stop{false};
      wg.add(1);
      nugo::go([&] {  // very likely on the G the first one left
        while (!stop.load(std::memory_order_relaxed)) {
        }
        wg.done();
      });
      nugo::sleep_for(1ms);  // needs the spinner preempted at 1 P
      stop = true;
      wg.wait();
      ++rounds;
    }
  });
  std::printf("exit-holding-lock: %d rounds\n", rounds);
  return rounds == kRounds ? 0 : 1;
}

// Each instance's static takes about 2 ms to initialize; every goroutine wants each of them.
template <int N>
__attribute__((noinline)) int slow_static() {
  static const int value = [] {
    spin_for(2ms);
    return N + 1;
  }();
  return value;
}

template <int... Ns>
int all_statics(std::integer_sequence<int, Ns...>) {
  return (slow_static<Ns>() + ...);
}

int static_init() {
  constexpr int kStatics = 40;
  std::atomic<int> wrong{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    for (int i = 0; i < 8; ++i) {
      wg.add(1);
      nugo::go([&] {
        int total = all_statics(std::make_integer_sequence<int, kStatics>{});
        if (total != kStatics * (kStatics + 1) / 2) wrong.fetch_add(1);
        wg.done();
      });
    }
    wg.wait();
  });
  std::printf("static-init: %d wrong\n", wrong.load());
  return wrong.load() == 0 ? 0 : 1;
}

// No thread can be created: the runtime must say so, not die in std::terminate.
int no_threads() {
  if (geteuid() == 0) {  // root ignores RLIMIT_NPROC: become nobody first
    if (setgid(65534) != 0 || setuid(65534) != 0) {
      std::perror("setuid");
      return 3;
    }
  }
  rlimit lim{1, 1};
  if (setrlimit(RLIMIT_NPROC, &lim) != 0) {
    std::perror("setrlimit");
    return 3;
  }
  return nugo::run([] { std::puts("ran without threads?"); });
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  auto seed = static_cast<std::uint32_t>(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // A background job of a non-interactive shell (the soak's) starts with SIGQUIT ignored,
  // and the runtime leaves an ignored SIGQUIT alone: take the default back, so that the
  // watchdog's SIGQUIT gets the runtime's goroutine dump.
  std::signal(SIGQUIT, SIG_DFL);
  if (mode == "x87-sum") return x87_sum();
  if (mode == "x87-stack") return x87_stack();
  if (mode == "mix") return mix(seed);
  if (mode == "random") {  // random FIRST [COUNT [HANG_SECONDS]]: COUNT seeds from FIRST
    int count = argc > 3 ? std::atoi(argv[3]) : 1;
    int hang_seconds = argc > 4 ? std::atoi(argv[4]) : 60;
    if (count < 1 || hang_seconds < 1) {
      std::fprintf(stderr, "nugo_hostile random FIRST [COUNT [HANG_SECONDS]]: COUNT and HANG_SECONDS must be positive\n");
      return 64;
    }
    nugo::Config cfg;
    if (!config_from_env(&cfg)) return 2;
    return random_programs(cfg, seed, count, hang_seconds);
  }
  if (mode == "bytes") {  // bytes FILE...: the fuzzer's inputs (tests/fuzz/corpus), as programs
    nugo::Config cfg;
    if (!config_from_env(&cfg)) return 2;
    return replay_inputs(cfg, argc - 2, argv + 2);
  }
  if (mode == "yield-spin") return yield_spin();
  if (mode == "std-mutex") return std_mutex();
  if (mode == "static-init") return static_init();
  if (mode == "no-threads") return no_threads();
  if (mode == "exit-holding-lock") return exit_holding_lock();
  std::fprintf(stderr, "usage: nugo_hostile x87-sum|x87-stack|mix SEED|random SEED|yield-spin|"
                       "std-mutex|static-init|exit-holding-lock|no-threads\n");
  return 64;
}
