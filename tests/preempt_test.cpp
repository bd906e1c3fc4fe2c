// sysmon, system calls and asynchronous preemption: Go's TestAsyncPreempt, TestPreemption,
// TestPreemptionAfterSyscall and TestYieldLockedProgress, register and errno integrity
// under thousands of preemptions, syscall hand-off, thread growth and release, and
// lock_os_thread. Bounds are generous: these tests check progress, not speed.
#include <immintrin.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <exception>
#include <catch2/catch.hpp>
#include <cxxabi.h>
#include <hwloc.h>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nugo/nugo.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sched.hpp"
#include "threadlocks.hpp"

using namespace std::chrono_literals;

namespace {

// The environment's settings (a NUMA-mode ctest configuration sets NUGO_MODE and
// NUGO_TOPOLOGY), at the P count and slice the test needs.
nugo::Config procs(int n, std::chrono::nanoseconds slice = 10ms) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = n;
  cfg.timeslice = slice;
  return cfg;
}

int thread_id() { return static_cast<int>(::syscall(SYS_gettid)); }

int threads_in_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

std::uint64_t async_preemptions() { return nugo::detail::sched->async_preemptions.load(); }

// Spin loops the compiler turns into code without calls (checked by the tests passing at
// 1 P: nothing but the preemption signal can take the P from them).
__attribute__((noinline)) void spin_atomic(const std::atomic<bool>* stop) {
  while (!stop->load(std::memory_order_relaxed)) {
  }
}

// A frameless leaf: no stack frame, no calls, just a load and a branch.
__attribute__((noinline)) void spin_frameless(const volatile bool* stop) {
  while (!*stop) {
  }
}

// Read and write errno through calls the compiler cannot see into, so that it cannot reuse
// a thread-local address from before a migration (core/README.md, rules for goroutines).
__attribute__((noinline, noipa)) int get_errno() { return errno; }
__attribute__((noinline, noipa)) void set_errno(int v) { errno = v; }

// The floating-point rounding mode as a goroutine finds it: the x87 control word's (what
// fegetround reports) and MXCSR's (what SSE arithmetic uses), and the thread it runs on.
constexpr unsigned kSseRounding = 0x6000, kSseUp = 0x4000;
struct Rounding {
  int tid = 0;
  int x87 = -1;
  unsigned sse = kSseRounding;
  void look() {
    tid = thread_id();
    x87 = std::fegetround();
    sse = _mm_getcsr() & kSseRounding;
  }
};

}  // namespace

TEST_CASE("spinning goroutines without calls do not stop the main goroutine (TestAsyncPreempt)",
          "[asyncpreempt][preempt]") {
  nugo::run(
      [] {
        std::atomic<bool> stop{false};
        volatile bool vstop = false;
        nugo::WaitGroup wg;
        wg.add(3);
        nugo::go([&] {
          spin_atomic(&stop);
          wg.done();
        });
        nugo::go([&] {
          spin_frameless(&vstop);
          wg.done();
        });
        nugo::go([&] {
          for (;;)
            if (vstop) break;  // for(;;) on a volatile
          wg.done();
        });
        nugo::yield();  // let them all start spinning
        nugo::sleep_for(1ms);  // the P is theirs now: only preemption brings us back
        stop = true;
        vstop = true;
        wg.wait();
        CHECK(async_preemptions() > 0);
      },
      procs(1));
}

TEST_CASE("goroutines that wait for each other in call-only loops progress (TestPreemption)",
          "[asyncpreempt][preempt]") {
  nugo::run(
      [] {
        constexpr int kRounds = 5;
        std::atomic<int> turn{0};
        nugo::Chan<bool> done;
        for (int g = 0; g < 2; ++g) {
          nugo::go([&, g] {
            for (int i = 0; i < kRounds; ++i) {
              while (turn.load() != g) {
              }
              turn.store(1 - g);
            }
            done.send(true);
          });
        }
        done.recv();
        done.recv();
      },
      procs(1, 1ms));
}

TEST_CASE("spinners that made a system call are still preempted (TestPreemptionAfterSyscall)",
          "[asyncpreempt][preempt]") {
  for (int p : {1, 2}) {
    INFO("procs " << p);
    nugo::run(
        [] {
          for (int iteration = 0; iteration < 5; ++iteration) {
            constexpr int kSpinners = 8;
            nugo::Chan<bool> started(kSpinners);
            std::atomic<bool> stop{false};
            nugo::WaitGroup wg;
            wg.add(kSpinners);
            for (int g = 0; g < kSpinners; ++g) {
              nugo::go([&] {
                nugo::syscall([] { return ::getpid(); });
                started.send(true);
                spin_atomic(&stop);
                wg.done();
              });
            }
            for (int g = 0; g < kSpinners; ++g) started.recv();
            stop = true;
            wg.wait();
          }
        },
        procs(p, 1ms));
  }
}

TEST_CASE("a locked goroutine that yields and sleeps progresses (TestYieldLockedProgress)",
          "[preempt][lockosthread]") {
  nugo::run(
      [] {
        nugo::Chan<bool> c;
        nugo::go([&] {
          nugo::lock_os_thread();
          for (int i = 0; i < 100; ++i) {
            nugo::yield();
            nugo::sleep_for(1ms);
          }
          c.send(true);
          // unlock_os_thread deliberately omitted, as in Go's test
        });
        c.recv();
      },
      procs(2));
}

namespace {

// Long register-resident loops: the results must be bit-exact whatever happens between
// instructions. Each keeps several vector accumulators live across the whole loop.
std::uint64_t sse_work(int iters) {
  __m128d a = _mm_set_pd(1.000001, 0.999999), b = _mm_set_pd(1.0000003, 0.9999997);
  __m128d c = _mm_set_pd(0.5, 0.25), d = _mm_set_pd(1e-9, 2e-9);
  for (int i = 0; i < iters; ++i) {
    a = _mm_mul_pd(a, b);
    c = _mm_add_pd(c, _mm_mul_pd(a, d));
    b = _mm_sub_pd(_mm_set1_pd(2.0), _mm_mul_pd(b, _mm_set1_pd(0.9999999)));
    d = _mm_add_pd(d, _mm_set1_pd(1e-15));
  }
  double out[8];
  _mm_storeu_pd(out, a);
  _mm_storeu_pd(out + 2, b);
  _mm_storeu_pd(out + 4, c);
  _mm_storeu_pd(out + 6, d);
  std::uint64_t h = 0;
  for (double v : out) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = h * 1000003 ^ bits;
  }
  return h;
}

__attribute__((target("avx2"))) std::uint64_t avx2_work(int iters) {
  __m256i acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = _mm256_set_epi64x(k + 1, k * 7 + 3, k * 13 + 5, k * 31 + 11);
  const __m256i mul = _mm256_set1_epi64x(0x9E3779B1);
  for (int i = 0; i < iters; ++i) {
    for (int k = 0; k < 8; ++k) {
      acc[k] = _mm256_add_epi64(_mm256_mul_epu32(acc[k], mul), _mm256_srli_epi64(acc[k], 17));
      acc[k] = _mm256_xor_si256(acc[k], acc[(k + 1) % 8]);
    }
  }
  alignas(32) std::uint64_t out[4];
  std::uint64_t h = 0;
  for (auto& v : acc) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), v);
    for (std::uint64_t x : out) h = h * 1000003 ^ x;
  }
  return h;
}

__attribute__((target("avx512f"))) std::uint64_t avx512_work(int iters) {
  __m512i acc[16];
  for (int k = 0; k < 16; ++k) acc[k] = _mm512_set1_epi64(k * 0x1234567 + 1);
  const __m512i mul = _mm512_set1_epi64(0x85EBCA6B);
  __mmask8 m = 0x5A;
  for (int i = 0; i < iters; ++i) {
    for (int k = 0; k < 16; ++k) {
      acc[k] = _mm512_mask_add_epi64(acc[k], m, _mm512_mul_epu32(acc[k], mul),
                                     _mm512_srli_epi64(acc[k], 13));
      acc[k] = _mm512_xor_si512(acc[k], acc[(k + 3) % 16]);
    }
    m = static_cast<__mmask8>((m << 1) | (m >> 7));
  }
  alignas(64) std::uint64_t out[8];
  std::uint64_t h = m;
  for (auto& v : acc) {
    _mm512_store_si512(out, v);
    for (std::uint64_t x : out) h = h * 1000003 ^ x;
  }
  return h;
}

}  // namespace

TEST_CASE("SSE, AVX2 and AVX-512 state survives thousands of preemptions bit for bit",
          "[asyncpreempt][preempt][registers]") {
  struct Work {
    const char* name;
    std::uint64_t (*fn)(int);
    int iters;
  };
  std::vector<Work> works{{"sse", sse_work, 20'000'000}, {"avx2", avx2_work, 2'000'000}};
  if (__builtin_cpu_supports("avx512f")) works.push_back({"avx512", avx512_work, 1'000'000});
  std::vector<std::uint64_t> reference;
  for (const Work& w : works) reference.push_back(w.fn(w.iters));  // on this plain thread

  // Three copies of each on 2 Ps with a 50 us slice: preempted constantly, moved between Ms.
  // Rounds repeat until a thousand preemptions have landed (how many one round gets depends
  // on how busy the machine is), every round's results checked.
  constexpr int kCopies = 3, kMaxRounds = 20;
  std::vector<std::uint64_t> results(works.size() * kCopies);
  std::vector<std::uint64_t> wrong;  // round * results.size() + i of each wrong result
  std::uint64_t preemptions = 0;
  nugo::run(
      [&] {
        for (int round = 0; round < kMaxRounds && preemptions < 1000; ++round) {
          nugo::WaitGroup wg;
          for (std::size_t i = 0; i < results.size(); ++i) {
            wg.add(1);
            nugo::go([&, i] {
              const Work& w = works[i / kCopies];
              results[i] = w.fn(w.iters);
              wg.done();
            });
          }
          wg.wait();
          for (std::size_t i = 0; i < results.size(); ++i)
            if (results[i] != reference[i / kCopies]) wrong.push_back(round * results.size() + i);
          preemptions = async_preemptions();
        }
      },
      procs(2, 50us));
  for (std::uint64_t k : wrong) {
    std::size_t i = k % results.size();
    INFO(works[i / kCopies].name << " copy " << i % kCopies << ", round " << k / results.size());
    CHECK(false);
  }
  CHECK(wrong.empty());
  INFO("async preemptions: " << preemptions);
  CHECK(preemptions >= 1000);
}

// A switch carries no floating-point state (core/src/base/README.md, "The switch"), but a
// preemption, by signal or cooperative, keeps the goroutine's and hands the thread on in the
// defaults. At 1 P the goroutine that runs while the spinner is preempted runs on the
// spinner's thread. With async, the spinner spins without calls (only the signal stops it);
// without, it calls preempt_point, the cooperative path (which a signal declined inside
// runtime code also takes).
namespace {
void check_preemption_keeps_rounding(bool async) {
  nugo::Config cfg = procs(1, 1ms);
  cfg.async_preempt = async;
  nugo::run(
      [&] {
        std::atomic<bool> set{false}, other_ran{false};
        int spinner_tid = 0;  // where it was preempted
        Rounding spinner, other;
        nugo::WaitGroup wg;
        wg.add(2);
        nugo::go([&] {
          std::fesetround(FE_UPWARD);  // the x87 control word and MXCSR both
          spinner_tid = thread_id();
          set = true;
          if (async)
            spin_atomic(&other_ran);
          else
            while (!other_ran) nugo::preempt_point();
          spinner.look();
          std::fesetround(FE_TONEAREST);
          wg.done();
        });
        while (!set) nugo::yield();  // it has set the mode and is spinning
        nugo::go([&] {
          other.look();
          other_ran = true;
          wg.done();
        });
        wg.wait();
        CHECK(other.tid == spinner_tid);  // one P: one thread ran both
        CHECK(spinner.x87 == FE_UPWARD);
        CHECK(spinner.sse == kSseUp);
        CHECK(other.x87 == FE_TONEAREST);
        CHECK(other.sse == 0);
        if (async) CHECK(async_preemptions() > 0);
      },
      cfg);
}
}  // namespace

TEST_CASE("a rounding mode set before a preemption by signal is in force after it, and not in "
          "the goroutine that ran meanwhile on the same thread",
          "[asyncpreempt][preempt][registers]") {
  check_preemption_keeps_rounding(true);
}

TEST_CASE("a rounding mode set before a cooperative preemption is in force after it, and not in "
          "the goroutine that ran meanwhile on the same thread",
          "[preempt][registers]") {
  check_preemption_keeps_rounding(false);
}

// The other half: a switch by yield carries no floating-point state, so the mode a goroutine
// leaves in force when it yields is the thread's, and the next goroutine there runs in it (as
// in Go). Documented in core/src/base/README.md; a goroutine must restore it before blocking.
// With a Boost other than 1.74 the runtime switches with Boost's jump (fiber.hpp), which
// keeps a mode per goroutine. No preemption by signal: one between the spawn and the yield
// would hand the thread on in the defaults.
TEST_CASE("a rounding mode left in force across a yield is the next goroutine's on that thread",
          "[preempt][registers]") {
  nugo::Config cfg = procs(1);
  cfg.async_preempt = false;
  nugo::run(
      [&] {
        std::atomic<bool> other_ran{false};
        int setter_tid = 0;
        Rounding other;
        nugo::WaitGroup wg;
        wg.add(2);
        nugo::go([&] {
          std::fesetround(FE_UPWARD);
          setter_tid = thread_id();
          nugo::go([&] {
            other.look();
            other_ran = true;
            wg.done();
          });
          while (!other_ran) nugo::yield();
          std::fesetround(FE_TONEAREST);
          wg.done();
        });
        wg.wait();
        CHECK(other.tid == setter_tid);  // one P: one thread ran both
#if NUGO_OWN_JUMP
        CHECK(other.x87 == FE_UPWARD);
        CHECK(other.sse == kSseUp);
#else
        CHECK(other.x87 == FE_TONEAREST);
        CHECK(other.sse == 0);
#endif
      },
      cfg);
}

TEST_CASE("errno set before a spin survives preemption and migration", "[asyncpreempt][preempt]") {
  int migrations = 0;
  for (int round = 0; round < 50 && migrations == 0; ++round) {
    nugo::run(
        [&] {
          constexpr int kSpinners = 4;
          std::atomic<int> moved{0}, kept{0};
          nugo::WaitGroup wg;
          wg.add(kSpinners);
          for (int g = 0; g < kSpinners; ++g) {
            nugo::go([&, g] {
              set_errno(1000 + g);
              int tid = thread_id();  // may clobber errno only on failure; gettid cannot fail
              set_errno(1000 + g);
              volatile std::uint64_t sink = 0;
              for (std::uint64_t i = 0; i < 50'000'000; ++i) sink = sink + i;
              int after = get_errno();
              if (thread_id() != tid) moved.fetch_add(1);
              if (after == 1000 + g) kept.fetch_add(1);
              wg.done();
            });
          }
          wg.wait();
          CHECK(kept.load() == kSpinners);
          migrations += moved.load();
        },
        procs(2, 200us));
  }
  CHECK(migrations > 0);
}

// Leaving a system call may resume the goroutine on another thread; an exception thrown by
// the call's body must still be thrown and caught on one thread (the C++ runtime counts the
// exceptions in flight per thread), so nugo::syscall carries it out of the call.
TEST_CASE("an exception thrown inside nugo::syscall is caught by the goroutine, on whatever "
          "thread it resumes", "[preempt][syscall]") {
  nugo::run(
      [] {
        std::atomic<bool> stop{false};
        nugo::WaitGroup busy;
        busy.add(4);  // they take the P each call hands off: the caller comes back elsewhere
        for (int i = 0; i < 4; ++i)
          nugo::go([&] {
            while (!stop.load(std::memory_order_relaxed)) nugo::yield();
            busy.done();
          });
        std::atomic<int> caught{0}, wrong{0};
        nugo::WaitGroup wg;
        wg.add(8);
        for (int i = 0; i < 8; ++i)
          nugo::go([&] {
            for (int k = 0; k < 10; ++k) {
              try {
                if (k % 2)
                  nugo::blocking_syscall([] { throw std::runtime_error("from a blocking call"); });
                else
                  (void)nugo::syscall([]() -> int { throw std::runtime_error("from a call"); });
              } catch (const std::runtime_error&) {
                ++caught;
              }
              if (std::uncaught_exceptions() != 0) ++wrong;
              nugo::yield();
              if (std::uncaught_exceptions() != 0) ++wrong;
            }
            wg.done();
          });
        wg.wait();
        stop = true;
        busy.wait();
        CHECK(caught.load() == 80);
        CHECK(wrong.load() == 0);
        CHECK(nugo::syscall([] { return 42; }) == 42);  // and values still come back
      },
      procs(2));
}

TEST_CASE("100 goroutines in 1 ms nanosleep syscalls do not stop a compute goroutine",
          "[preempt][syscall]") {
  nugo::run(
      [] {
        std::atomic<std::uint64_t> work{0};
        std::atomic<bool> stop{false};
        nugo::WaitGroup wg;
        wg.add(1);
        nugo::go([&] {
          while (!stop.load(std::memory_order_relaxed)) work.fetch_add(1, std::memory_order_relaxed);
          wg.done();
        });
        // Its rate alone, then with the sleepers: each sleeper holds an M in the kernel, and
        // only hand-off (sysmon's retake) keeps a P for the compute goroutine.
        nugo::sleep_for(50ms);
        std::uint64_t w0 = work.load();
        nugo::sleep_for(200ms);
        std::uint64_t solo = work.load() - w0;

        std::atomic<bool> sleepers_stop{false};
        wg.add(100);
        for (int i = 0; i < 100; ++i) {
          nugo::go([&] {
            while (!sleepers_stop.load()) nugo::sys::nanosleep(1ms);
            wg.done();
          });
        }
        nugo::sleep_for(50ms);
        std::uint64_t w1 = work.load();
        int threads = threads_in_process();
        nugo::sleep_for(200ms);
        std::uint64_t stormy = work.load() - w1;
        sleepers_stop = true;
        stop = true;
        wg.wait();
        // Progress, not a fair share: on 2 cores the storm's ~100k sleeps and wake-ups a
        // second, each leaving a P in `syscall` until sysmon's next tick, take most of the
        // machine (this test measures 7-9% of the solo rate on a quiet 2-vCPU VM).
        INFO("solo " << solo << ", among sleepers " << stormy << ", threads " << threads);
        CHECK(stormy * 100 >= solo);
        CHECK(threads > 2 + nugo::gomaxprocs());
      },
      procs(2));
}

TEST_CASE("a syscall storm grows threads, and idle extra threads leave afterwards",
          "[preempt][syscall]") {
  nugo::run(
      [] {
        nugo::WaitGroup wg;
        constexpr int kSleepers = 50;
        std::atomic<int> peak{0};
        wg.add(kSleepers);
        for (int i = 0; i < kSleepers; ++i) {
          nugo::go([&] {
            nugo::blocking_syscall([] { std::this_thread::sleep_for(100ms); });
            int t = threads_in_process();
            for (int p = peak.load(); t > p && !peak.compare_exchange_weak(p, t);) {
            }
            wg.done();
          });
        }
        wg.wait();
        INFO("peak threads " << peak.load());
        CHECK(peak.load() >= kSleepers / 2);
        // Idle Ms beyond gomaxprocs exit after a second without work.
        int after = 0;
        for (int i = 0; i < 50; ++i) {
          nugo::sleep_for(100ms);
          after = threads_in_process();
          if (after <= nugo::gomaxprocs() + 3) break;
        }
        INFO("threads after the storm " << after);
        CHECK(after <= nugo::gomaxprocs() + 3);  // Ms, sysmon, run()'s caller, slack of one
      },
      procs(2));
}

TEST_CASE("errno set by the call survives exitsyscall", "[syscall]") {
  nugo::run(
      [] {
        nugo::WaitGroup wg;
        wg.add(20);
        for (int i = 0; i < 20; ++i) {
          nugo::go([&] {
            char c;
            ssize_t n = nugo::sys::read(-1, &c, 1);
            int e = get_errno();
            CHECK(n == -1);
            CHECK(e == EBADF);
            wg.done();
          });
        }
        wg.wait();
      },
      procs(2));
}

TEST_CASE("waitpid and pipe I/O through the syscall wrappers", "[syscall]") {
  nugo::run(
      [] {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        nugo::Chan<std::string> got;
        nugo::go([&] {
          char buf[16] = {};
          ssize_t n = nugo::blocking_syscall([&] { return ::read(fds[0], buf, sizeof buf - 1); });
          got.send(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0));
        });
        nugo::sleep_for(5ms);  // the reader blocks in the kernel; we still run
        CHECK(nugo::sys::write(fds[1], "hello", 5) == 5);
        CHECK(*got.recv() == "hello");
        ::close(fds[0]);
        ::close(fds[1]);

        pid_t child = ::fork();
        if (child == 0) {
          ::usleep(20'000);
          ::_exit(7);
        }
        int status = 0;
        CHECK(nugo::sys::waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 7);
      },
      procs(1));
}

TEST_CASE("a locked goroutine runs only on its thread, which runs nothing else",
          "[lockosthread]") {
  nugo::run(
      [] {
        nugo::Chan<int> locked_tid(1);
        nugo::Chan<bool> others_done;
        nugo::Chan<bool> locked_done(1);
        std::vector<int> locked_seen;
        nugo::go([&] {
          nugo::lock_os_thread();
          nugo::lock_os_thread();  // nested
          nugo::unlock_os_thread();  // still locked once
          int tid = thread_id();
          locked_tid.send(tid);
          for (int i = 0; i < 50; ++i) {
            nugo::yield();
            nugo::sleep_for(100us);
            locked_seen.push_back(thread_id());
          }
          others_done.recv();  // blocks: the thread hands its P to another
          locked_seen.push_back(thread_id());
          nugo::unlock_os_thread();
          locked_done.send(true);  // locked_seen is complete: main may read it
        });
        int tid = *locked_tid.recv();
        std::vector<int> others;
        nugo::WaitGroup wg;
        std::atomic<int> clash{0};
        wg.add(8);
        for (int g = 0; g < 8; ++g) {
          nugo::go([&] {
            for (int i = 0; i < 200; ++i) {
              if (thread_id() == tid) clash.fetch_add(1);
              nugo::yield();
            }
            wg.done();
          });
        }
        wg.wait();
        others_done.send(true);
        locked_done.recv();
        CHECK(clash.load() == 0);
        for (int seen : locked_seen) CHECK(seen == tid);
      },
      procs(2));
}

TEST_CASE("a goroutine that exits while locked takes its thread with it", "[lockosthread]") {
  nugo::run(
      [] {
        nugo::Chan<int> tid_chan(1);
        nugo::go([&] {
          nugo::lock_os_thread();
          tid_chan.send(thread_id());
        });
        int tid = *tid_chan.recv();
        std::string task = "/proc/self/task/" + std::to_string(tid);
        bool gone = false;
        for (int i = 0; i < 500 && !gone; ++i) {
          nugo::sleep_for(10ms);
          gone = !std::ifstream(task + "/stat").good();
        }
        CHECK(gone);
      },
      procs(2));
  CHECK_THROWS_AS(nugo::lock_os_thread(), std::logic_error);
}

TEST_CASE("preempt_point yields once the slice is over, and asyncpreemptoff relies on it",
          "[preempt]") {
  nugo::Config cfg = procs(1, 1ms);
  cfg.async_preempt = false;
  nugo::run(
      [] {
        std::atomic<bool> stop{false};
        nugo::go([&] {
          while (!stop.load(std::memory_order_relaxed)) nugo::preempt_point();
        });
        nugo::yield();
        nugo::sleep_for(2ms);  // returns only because the spinner checks preempt_point
        stop = true;
        CHECK(async_preemptions() == 0);
      },
      cfg);
}

TEST_CASE("beside a CPU hog at 1 P, a ping-pong pair gets about half of the CPU "
          "(BenchmarkPingPongHog)", "[preempt][sched]") {
  // Whole slices alternate: the pair shares one (runnext inherits it), the hog has the next.
  // Each side sums its own time on the CPU: the gaps between its successive clock reads that
  // are shorter than a quarter slice. A longer gap is the other side's slice, or the OS
  // running another thread, and counts for neither. The hog checks preempt_point, Go's
  // prologue check, so that the test needs no signal (it runs under TSan too).
  static constexpr std::chrono::nanoseconds kSlice = 2ms;
  static constexpr std::chrono::nanoseconds kShort = kSlice / 4;
  nugo::run(
      [] {
        std::atomic<bool> stop{false};
        std::chrono::nanoseconds hog_ns{0}, pair_ns{0};
        long rounds = 0;
        nugo::Chan<int> ping, pong;
        nugo::WaitGroup done;
        done.add(3);
        nugo::go([&] {  // the hog
          auto last = nugo::Clock::now();
          while (!stop.load(std::memory_order_relaxed)) {
            nugo::preempt_point();
            auto now = nugo::Clock::now();
            if (now - last < kShort) hog_ns += now - last;
            last = now;
          }
          done.done();
        });
        nugo::go([&] {  // the server: counts the pair's time, one round trip at a time
          auto last = nugo::Clock::now();
          for (bool more = true; more;) {
            more = !stop.load(std::memory_order_relaxed);
            ping.send(more ? 1 : 0);
            pong.recv();
            auto now = nugo::Clock::now();
            if (now - last < kShort) pair_ns += now - last;
            last = now;
            ++rounds;
          }
          done.done();
        });
        nugo::go([&] {
          while (*ping.recv() != 0) pong.send(1);
          pong.send(0);
          done.done();
        });
        nugo::sleep_for(400ms);
        stop = true;
        done.wait();
        double share = static_cast<double>(pair_ns.count()) /
                       static_cast<double>((pair_ns + hog_ns).count());
        INFO("pair " << pair_ns.count() / 1000 << " us, hog " << hog_ns.count() / 1000
                     << " us, " << rounds << " round trips");
        CHECK(rounds > 100);
        CHECK(share > 0.35);  // 0.5 expected; 2:1 either way fails
        CHECK(share < 0.65);
      },
      procs(1, kSlice));
}

TEST_CASE("a goroutine in the global queue runs beside a chain of preempted goroutines that "
          "keeps runnext full", "[preempt][sched]") {
  // Each link spawns the next (into runnext) and then computes until it is preempted, so the
  // local queue never runs dry and schedtick moves only by preemptions. The global queue's
  // 1-in-61 turn is then the only way for X, queued there by a plain thread, to run. (Skipping
  // the tick after every preemption would switch that turn off for good here; proc.cpp,
  // new_slice_after_preemption.) 10 s is a bound for a hang, not a timing: X is expected after
  // about 61 slices of 1 ms.
  static constexpr auto kGiveUp = 10s;
  nugo::run(
      [] {
        std::atomic<bool> x_ran{false}, gave_up{false};
        nugo::WaitGroup chain_done;
        chain_done.add(1);
        auto start = nugo::Clock::now();
        struct Link {
          static void run(std::atomic<bool>* x_ran, std::atomic<bool>* gave_up,
                          nugo::WaitGroup* done, nugo::Clock::time_point start) {
            if (x_ran->load() || nugo::Clock::now() - start > kGiveUp) {
              if (!x_ran->load()) gave_up->store(true);
              done->done();
              return;
            }
            nugo::go([=] { run(x_ran, gave_up, done, start); });
            // Two slices of computing: preempted at least once on the way.
            auto t0 = nugo::Clock::now();
            while (nugo::Clock::now() - t0 < 2ms && !x_ran->load()) nugo::preempt_point();
          }
        };
        nugo::go([&] { Link::run(&x_ran, &gave_up, &chain_done, start); });
        std::thread([&] { nugo::go([&] { x_ran = true; }); }).join();
        chain_done.wait();
        CHECK(x_ran.load());
        CHECK_FALSE(gave_up.load());
      },
      procs(1, 1ms));
}

TEST_CASE("a hog that lives in runtime calls yields as it leaves one (the signal's deferred "
          "request)", "[asyncpreempt][preempt]") {
  // The hog spins on a non-blocking receive: nearly every signal lands inside runtime code
  // (G::locks != 0), where it is declined. The request is kept (kPreemptAtExit) and the hog
  // yields at the end of that call, as a Go goroutine does at its next function prologue.
  // The sleeper's 20 wake-ups need the hog preempted about 20 times.
  auto exit_preemptions = [] { return nugo::detail::sched->exit_preemptions.load(); };
  nugo::run(
      [&] {
        std::uint64_t before = exit_preemptions();
        std::atomic<bool> stop{false};
        nugo::Chan<int> never;
        nugo::WaitGroup done;
        done.add(1);
        nugo::go([&] {
          while (!stop.load(std::memory_order_relaxed)) (void)never.try_recv();
          done.done();
        });
        nugo::yield();
        for (int i = 0; i < 20; ++i) nugo::sleep_for(100us);
        stop = true;
        done.wait();
        CHECK(exit_preemptions() > before);
      },
      procs(1, 1ms));
}

TEST_CASE("NUGO_TIMESLICE, NUGO_PREEMPT_SIGNAL and asyncpreemptoff are parsed and checked",
          "[preempt][config]") {
  setenv("NUGO_TIMESLICE", "200us", 1);
  setenv("NUGO_PREEMPT_SIGNAL", "SIGUSR2", 1);
  setenv("NUGO_DEBUG", "asyncpreemptoff=1", 1);
  nugo::Config cfg = nugo::Config::from_env();
  CHECK(cfg.timeslice == 200us);
  CHECK(cfg.preempt_signal == SIGUSR2);
  CHECK_FALSE(cfg.async_preempt);
  setenv("NUGO_PREEMPT_SIGNAL", "urg", 1);
  CHECK(nugo::Config::from_env().preempt_signal == SIGURG);
  for (const char* bad : {"10", "fast", "5us", "20s", "-1ms"}) {
    setenv("NUGO_TIMESLICE", bad, 1);
    INFO(bad);
    CHECK_THROWS_WITH(nugo::Config::from_env(), Catch::Contains("NUGO_TIMESLICE"));
  }
  setenv("NUGO_TIMESLICE", "1ms", 1);
  for (const char* bad : {"SIGSEGV", "9", "SIGNOPE", ""}) {
    setenv("NUGO_PREEMPT_SIGNAL", bad, 1);
    INFO(bad);
    CHECK_THROWS_WITH(nugo::Config::from_env(), Catch::Contains("NUGO_PREEMPT_SIGNAL"));
  }
  unsetenv("NUGO_TIMESLICE");
  unsetenv("NUGO_PREEMPT_SIGNAL");
  unsetenv("NUGO_DEBUG");
}

namespace {
std::atomic<int> user_handler_calls{0};
void user_handler(int) { user_handler_calls.fetch_add(1); }
}  // namespace

TEST_CASE("a user's handler for the preemption signal is still called", "[asyncpreempt][preempt]") {
  struct sigaction sa {}, old {};
  sa.sa_handler = user_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, &old);
  nugo::Config cfg = procs(1, 200us);
  cfg.preempt_signal = SIGUSR2;
  nugo::run(
      [] {
        std::atomic<bool> stop{false};
        nugo::go([&] { spin_atomic(&stop); });
        nugo::yield();
        nugo::sleep_for(5ms);
        stop = true;
        CHECK(async_preemptions() > 0);
      },
      cfg);
  CHECK(user_handler_calls.load() > 0);
  sigaction(SIGUSR2, &old, nullptr);
}

// ---- What is preemptible (core/README.md): the program's own code, nothing else.

extern "C" __attribute__((noinline)) int nugo_test_marked_function(int x) {
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}
__attribute__((noinline)) int program_function(int x) {
  __asm__ volatile("" : "+r"(x));
  return x * 3;
}

namespace {
const void* code(auto* f) { return reinterpret_cast<const void*>(f); }
}  // namespace

TEST_CASE("only the program's own code is preemptible: libc, libstdc++, hwloc and other shared objects are not",
          "[asyncpreempt]") {
  CHECK_FALSE(nugo::preemptible_code(code(&program_function)));  // no run()
  bool program = false, libc = true, cxx = true, hwloc = true, section = true;
  nugo::run(
      [&] {
        program = nugo::preemptible_code(code(&program_function));
        libc = nugo::preemptible_code(code(&memcpy)) || nugo::preemptible_code(code(&malloc));
        cxx = nugo::preemptible_code(code(&abi::__cxa_demangle));
        hwloc = nugo::preemptible_code(code(&hwloc_get_api_version));
        section = nugo::preemptible_code(code(&nugo::detail::current_thread_locks));
      },
      procs(2));
  CHECK(program);
  CHECK_FALSE(libc);
  CHECK_FALSE(cxx);
  CHECK_FALSE(hwloc);
  CHECK_FALSE(section);
  CHECK_FALSE(nugo::preemptible_code(code(&program_function)));  // run() is over
}

TEST_CASE("a goroutine inside std::sort is preempted like any of the program's code", "[asyncpreempt]") {
  // The program's own instantiations of std:: templates, local clones among them (GCC's .isra
  // and .constprop copies, the instantiations over a lambda), are the program's code. One P:
  // the main goroutine's sleep returns while the sort still runs only if the signal stopped
  // the sorter inside it (the data is made before, so the sort is all the sorter does).
  std::vector<std::uint32_t> v(std::size_t{1} << 23);
  std::uint32_t x = 12345;
  for (auto& e : v) e = x = x * 1664525u + 1013904223u;
  std::atomic<bool> sorted{true};
  nugo::run(
      [&] {
        nugo::WaitGroup wg;
        wg.add(1);
        std::atomic<bool> done{false};
        nugo::go([&] {
          std::sort(v.begin(), v.end(), [](std::uint32_t a, std::uint32_t b) { return (a ^ 0x5a5a5a5a) < (b ^ 0x5a5a5a5a); });
          done = true;
          wg.done();
        });
        nugo::sleep_for(1ms);  // back only when the sorter gives the P up
        sorted = done.load();
        wg.wait();
      },
      procs(1, 1ms));
  CHECK_FALSE(sorted.load());
}

TEST_CASE("the C and C++ runtimes and nugo cannot be named preemptible", "[config]") {
  for (const char* name : {"libc", "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "libstdc++", "libgcc_s",
                           "ld-linux-x86-64.so.2", "libnugo", "linux-vdso.so.1"}) {
    nugo::Config cfg;
    cfg.preemptible_libraries = {name};
    CHECK_THROWS_AS(cfg.validate(), nugo::ConfigError);
  }
  nugo::Config ok;
  ok.preemptible_libraries = {"libcrypto", "libmimalloc", "libm2"};  // not libc or libm
  CHECK_NOTHROW(ok.validate());
}

TEST_CASE("without the signal, preempt_point under a lock of the thread yields at the unlock",
          "[realtime]") {
  // One P: the main goroutine runs again only if the looping one yields, which it can do
  // only where its unlock brings the thread's lock count back to zero (threadlocks.hpp).
  nugo::Config cfg = procs(1, 1ms);
  cfg.async_preempt = false;
  std::atomic<bool> stop{false}, starved{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 300 && !stop.load(); ++i) std::this_thread::sleep_for(100ms);
    if (!stop.load()) {
      starved = true;
      stop = true;
    }
  });
  std::uint64_t rounds = 0;
  nugo::run(
      [&] {
        nugo::WaitGroup wg;
        wg.add(1);
        nugo::go([&] {
          std::mutex mu;
          while (!stop.load(std::memory_order_relaxed)) {
            std::lock_guard lock(mu);
            nugo::preempt_point();  // deferred: the lock is held
            ++rounds;
          }
          wg.done();
        });
        nugo::yield();  // to the loop; back here only when it yields
        stop = true;
        wg.wait();
      },
      cfg);
  watchdog.join();
  CHECK_FALSE(starved);
  CHECK(rounds > 0);
}
