// The random-program interpreter (program.hpp). Each goroutine of a program runs `node`
// below on its own stream of choices; the environment holds what the invariants need.
#include "program.hpp"

#include "counted.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <nugo/nugo.hpp>
#include <nugo/stats.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace program {
namespace {

using namespace std::chrono_literals;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

// ---- choices ----

// A stream of choices: splitmix64 from a seed, or the fuzzer's bytes (zeros once they run
// out). Small, so that a goroutine's closure holds its own stream inside the G.
class Choices {
 public:
  explicit Choices(std::uint64_t seed) : state_(seed) {}
  Choices(const std::uint8_t* data, std::size_t size)
      : data_(data), left_(static_cast<std::uint32_t>(std::min<std::size_t>(size, UINT32_MAX))) {}

  // A choice in [0, bound), bound >= 1.
  std::uint32_t next(std::uint32_t bound) {
    if (!data_) {
      std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return static_cast<std::uint32_t>((z ^ (z >> 31)) % bound);
    }
    std::uint32_t v = 0;
    for (int i = bound <= 256 ? 1 : bound <= 65536 ? 2 : 4; i > 0; --i) v = v << 8 | byte();
    return v % bound;
  }
  bool exhausted() const { return data_ && left_ == 0; }
  // The stream of a child goroutine: a fresh seed, or the next bytes (the first byte says how
  // many).
  Choices split() {
    if (!data_) return Choices(state_ * 31 + next(UINT32_MAX));
    std::uint32_t len = std::min<std::uint32_t>(byte(), left_);
    Choices child(data_, len);
    data_ += len;
    left_ -= len;
    return child;
  }

 private:
  std::uint8_t byte() {
    if (left_ == 0) return 0;
    --left_;
    return *data_++;
  }
  std::uint64_t state_ = 0;
  const std::uint8_t* data_ = nullptr;  // nullptr: seeded
  std::uint32_t left_ = 0;
};

using testing_counted::counted;

// ---- computations ----

// noipa: a call whose result is unused must still compute (noinline alone lets GCC drop a
// call it proves pure). Clang has no noipa; optnone keeps its callers from inferring that.
#if defined(__clang__)
#define PROGRAM_NOIPA noinline, optnone
#else
#define PROGRAM_NOIPA noinline, noipa
#endif

__attribute__((PROGRAM_NOIPA)) std::uint64_t compute(std::uint64_t x, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) void spin_for(nanoseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Float kernels, long enough (0.1 to 1 ms) that a short slice ends inside them: the x87
// stack, SSE2 scalars, AVX2 and AVX-512 vectors. Compared bit for bit with a plain thread's.
__attribute__((noinline)) long double x87_kernel(std::uint32_t n) {
  long double s = 0;
  for (std::uint32_t i = 1; i <= n; ++i) s += 1.0L / static_cast<long double>(i);
  return s;
}

__attribute__((noinline)) double sse_kernel(std::uint32_t n) {
  double s = 0, x = 0.5;
  for (std::uint32_t i = 1; i <= n; ++i) {
    x = x * 1.0000001 + 1e-9;
    s += std::sqrt(x) / static_cast<double>(i);
  }
  return s;
}

using v4d = double __attribute__((vector_size(32)));
using v8d = double __attribute__((vector_size(64)));

__attribute__((noinline, target("avx2,fma"))) double avx2_kernel(std::uint32_t n) {
  v4d acc = {0, 0, 0, 0}, x = {1.0, 1.5, 2.0, 2.5}, k = {1.0000001, 0.9999999, 1.0000002, 0.9999998};
  for (std::uint32_t i = 0; i < n; ++i) {
    x = x * k;
    acc += x / (x + 1.0);
  }
  return acc[0] + acc[1] + acc[2] + acc[3];
}

__attribute__((noinline, target("avx512f"))) double avx512_kernel(std::uint32_t n) {
  v8d acc = {0, 0, 0, 0, 0, 0, 0, 0}, x = {1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75};
  v8d k = {1.0000001, 0.9999999, 1.0000002, 0.9999998, 1.0000003, 0.9999997, 1.0000004, 0.9999996};
  for (std::uint32_t i = 0; i < n; ++i) {
    x = x * k;
    acc += x / (x + 1.0);
  }
  double s = 0;
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

constexpr int kKernelSizes = 4;
constexpr std::uint32_t kKernelN[kKernelSizes] = {40'000, 90'000, 150'000, 220'000};

struct Reference {
  long double x87[kKernelSizes];
  double sse[kKernelSizes], avx2[kKernelSizes], avx512[kKernelSizes];
  bool has_avx2 = false, has_avx512 = false;
};

// Computed once, on a plain thread, before the first program runs.
const Reference& reference() {
  static const Reference ref = [] {
    Reference r;
    std::thread([&r] {
      r.has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
      r.has_avx512 = __builtin_cpu_supports("avx512f");
      for (int i = 0; i < kKernelSizes; ++i) {
        r.x87[i] = x87_kernel(kKernelN[i]);
        r.sse[i] = sse_kernel(kKernelN[i]);
        if (r.has_avx2) r.avx2[i] = avx2_kernel(kKernelN[i]);
        if (r.has_avx512) r.avx512[i] = avx512_kernel(kKernelN[i]);
      }
    }).join();
    return r;
  }();
  return ref;
}

// Function-local statics whose initializers take 200 us: goroutines wanting one wait on its
// guard, a lock owned by the initializing thread, while the initializer may be preempted.
template <int N>
__attribute__((noinline)) int slow_static() {
  static const int value = [] {
    spin_for(200us);
    return N + 1;
  }();
  return value;
}

template <int... Ns>
int slow_static_at(int i, std::integer_sequence<int, Ns...>) {
  int v = 0;
  ((i == Ns ? (v = slow_static<Ns>(), 0) : 0), ...);
  return v;
}

// ---- the environment ----

struct Env {
  nugo::WaitGroup wg;
  std::atomic<int> goroutines{1};  // main
  std::atomic<std::int64_t> tokens{0};
  nugo::Chan<int> shared{4};
  nugo::Mutex mu;
  std::int64_t guarded = 0;
  nugo::RWMutex rw;
  std::int64_t rw_a = 0, rw_b = 0;  // a writer keeps them equal outside its critical section
  nugo::Once once;
  std::atomic<int> once_runs{0};
  std::atomic<bool> once_called{false};
  std::mutex thread_mu;  // owned by the thread that locks it
  std::shared_mutex thread_rw;
  std::int64_t thread_guarded = 0;  // holders of thread_mu
  std::int64_t thread_rw_guarded = 0;  // holders of thread_rw
  std::vector<int> nodes;  // the OS nodes go_on accepts

  std::mutex failure_mu;
  std::string failure;  // the first broken invariant

  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::lock_guard lock(failure_mu);
    if (failure.empty()) failure = buf;
  }
};

void node(Env* env, Choices ch, int depth, int home);

void spawn(Env* env, Choices& ch, int depth) {
  env->goroutines.fetch_add(1);
  Choices child = ch.split();
  if (env->nodes.size() > 1 && ch.next(2)) {
    int home = env->nodes[ch.next(static_cast<std::uint32_t>(env->nodes.size()))];
    nugo::go_on(home, counted(env->wg, [env, child, depth, home] { node(env, child, depth + 1, home); }));
  } else {
    nugo::go(counted(env->wg, [env, child, depth] { node(env, child, depth + 1, -1); }));
  }
}

// A channel closed while senders and receivers are blocked on it: each value is received
// once or its send panics (and is taken back from the balance).
void close_while_blocked(Env* env, Choices& ch) {
  nugo::Chan<int> c(ch.next(3));
  int senders = 1 + static_cast<int>(ch.next(4)), receivers = static_cast<int>(ch.next(3));
  nugo::Chan<int> finished(senders + receivers);
  for (int s = 0; s < senders; ++s) {
    int v = 1 + static_cast<int>(ch.next(1000));
    bool by_select = ch.next(2);
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [env, c, finished, v, by_select]() mutable {
      env->tokens.fetch_add(v);
      try {
        if (by_select)
          nugo::select(nugo::on_send(c, v, [] {}));
        else
          c.send(v);
      } catch (const nugo::Panic&) {
        env->tokens.fetch_sub(v);  // it was never sent
      }
      finished.send(1);
    }));
  }
  for (int r = 0; r < receivers; ++r) {
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [env, c, finished]() mutable {
      while (auto v = c.recv()) env->tokens.fetch_sub(*v);
      finished.send(1);
    }));
  }
  if (ch.next(2)) nugo::sleep_for(microseconds(ch.next(200)));
  else nugo::yield();
  c.close();
  for (int i = 0; i < senders + receivers; ++i) finished.recv();
  for (auto v = c.try_recv(); v.ready && v.value; v = c.try_recv()) env->tokens.fetch_sub(*v.value);
}

// Waiters on a Cond, woken by a goroutine that sets their condition.
void cond_handoff(Env* env, Choices& ch) {
  struct Box {
    nugo::Mutex mu;
    nugo::Cond cond;
    bool ready = false;
  };
  auto box = std::make_shared<Box>();
  int waiters = 1 + static_cast<int>(ch.next(3));
  bool broadcast = waiters > 1 || ch.next(2);
  nugo::Chan<int> woke(waiters);
  auto wait = [](Box* b) {
    std::lock_guard lock(b->mu);
    while (!b->ready) b->cond.wait(b->mu);
  };
  for (int w = 1; w < waiters; ++w) {
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [box, woke, wait]() mutable {
      wait(box.get());
      woke.send(1);
    }));
  }
  std::uint32_t delay = ch.next(100);
  env->goroutines.fetch_add(1);
  nugo::go(counted(env->wg, [box, broadcast, delay] {
    if (delay % 2) nugo::sleep_for(microseconds(delay));
    else nugo::yield();
    {
      std::lock_guard lock(box->mu);
      box->ready = true;
    }
    if (broadcast) box->cond.broadcast();
    else box->cond.signal();
  }));
  wait(box.get());
  for (int w = 1; w < waiters; ++w) woke.recv();
}

// Timer and Ticker operations racing with their firing and with each other.
void timer_race(Env* env, Choices& ch) {
  nugo::Chan<int> finished(1);
  if (ch.next(2)) {
    auto t = std::make_shared<nugo::Timer>(microseconds(ch.next(40)));
    std::uint32_t op = ch.next(2), after = ch.next(40);
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [t, finished, op, after]() mutable {
      if (op) t->reset(microseconds(after));
      else t->stop();
      finished.send(1);
    }));
    switch (ch.next(3)) {
      case 0: t->stop(); break;
      case 1: t->reset(microseconds(ch.next(40))); break;
      case 2: nugo::select(nugo::on_recv(t->c), nugo::on_recv(nugo::after(200us))); break;
    }
    finished.recv();
    // Stopped and drained, it stays quiet: a firing under way when stop() began has
    // delivered by the time stop() returns (Go's deltimer waits for it).
    t->stop();
    while (t->c.try_recv().ready) {
    }
    nugo::sleep_for(60us);
    if (t->c.try_recv().ready) env->fail("a Timer delivered after stop() had returned");
  } else {
    auto tk = std::make_shared<nugo::Ticker>(microseconds(1 + ch.next(20)));
    std::uint32_t delay = ch.next(60);
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [tk, finished, delay]() mutable {
      nugo::sleep_for(microseconds(delay));
      tk->stop();
      finished.send(1);
    }));
    for (int i = 0; i < 3; ++i) nugo::select(nugo::on_recv(tk->c), nugo::on_recv(nugo::after(200us)));
    finished.recv();
    while (tk->c.try_recv().ready) {
    }
    nugo::sleep_for(60us);  // three periods at least
    if (tk->c.try_recv().ready) env->fail("a Ticker ticked after stop() had returned");
  }
}

// Durations from negative to the largest a duration type holds.
void extreme_durations(Env* env, Choices& ch) {
  switch (ch.next(6)) {
    case 0: nugo::sleep_for(nanoseconds(-static_cast<std::int64_t>(ch.next(1'000'000)))); break;
    case 1:
      nugo::sleep_for(nanoseconds::min());
      nugo::sleep_for(std::chrono::hours::min());
      nugo::sleep_for(nanoseconds(0));
      break;
    case 2: {
      nugo::Timer t(std::chrono::hours::max());
      if (!t.stop()) env->fail("a Timer of hours::max() had fired");
      break;
    }
    case 3: {
      nugo::Timer t(std::chrono::seconds::min());  // fires at once
      t.c.recv();
      break;
    }
    case 4: {
      bool took_default = false;
      nugo::select(nugo::on_recv(nugo::after(std::chrono::hours::max())),
                   nugo::on_recv(nugo::after(nanoseconds::max())),
                   nugo::on_default([&] { took_default = true; }));
      if (!took_default) env->fail("an after() of hours::max() was ready");
      break;
    }
    case 5: {
      nugo::Ticker tk(std::chrono::hours::max());
      tk.reset(microseconds(1 + ch.next(50)));
      tk.c.recv();
      tk.reset(nanoseconds::max());
      tk.stop();
      break;
    }
  }
}

void float_check(Env* env, Choices& ch) {
  const Reference& ref = reference();
  int i = static_cast<int>(ch.next(kKernelSizes));
  switch (ch.next(4)) {
    case 0:
      if (long double v = x87_kernel(kKernelN[i]); std::memcmp(&v, &ref.x87[i], 10) != 0)
        env->fail("x87 sum %d: %.21Lg, a plain thread got %.21Lg", i, v, ref.x87[i]);
      break;
    case 1:
      if (double v = sse_kernel(kKernelN[i]); v != ref.sse[i])
        env->fail("SSE sum %d: %.17g, a plain thread got %.17g", i, v, ref.sse[i]);
      break;
    case 2:
      if (!ref.has_avx2) break;
      if (double v = avx2_kernel(kKernelN[i]); v != ref.avx2[i])
        env->fail("AVX2 sum %d: %.17g, a plain thread got %.17g", i, v, ref.avx2[i]);
      break;
    case 3:
      if (!ref.has_avx512) break;
      if (double v = avx512_kernel(kKernelN[i]); v != ref.avx512[i])
        env->fail("AVX-512 sum %d: %.17g, a plain thread got %.17g", i, v, ref.avx512[i]);
      break;
  }
}

// A goroutine that loops without calls until another sets a flag: at 1 P only preemption
// lets the other run.
void hog(Env* env, Choices& ch) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::uint32_t delay = ch.next(300);
  env->goroutines.fetch_add(1);
  nugo::go(counted(env->wg, [flag, delay] {
    nugo::sleep_for(microseconds(delay));
    flag->store(true, std::memory_order_relaxed);
  }));
  // Past the watchdog's limit (the caller's, 60 s by default), which reports a hang with a
  // goroutine dump first; the limit only bounds a run without preemption.
  auto give_up = std::chrono::steady_clock::now() + 300s;
  while (!flag->load(std::memory_order_relaxed))
    if (std::chrono::steady_clock::now() > give_up) {
      env->fail("a hog was not preempted in 300 s");
      break;
    }
}

// Goroutines taking one lock owned by the thread (std::mutex or std::shared_mutex), each
// holding it for about 60 us, across a short slice's end: a goroutine preempted while it
// holds the lock must not let another goroutine block its thread on it.
void thread_lock_party(Env* env, Choices& ch) {
  int n = 2 + static_cast<int>(ch.next(3)), rounds = 1 + static_cast<int>(ch.next(4));
  bool shared = ch.next(2);
  nugo::Chan<int> finished(n);
  for (int i = 0; i < n; ++i) {
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [env, finished, rounds, shared]() mutable {
      for (int r = 0; r < rounds; ++r) {
        if (shared) {
          std::unique_lock lock(env->thread_rw);
          if (++env->thread_rw_guarded != 1) env->fail("std::shared_mutex: two holders");
          compute(r, 200'000);
          --env->thread_rw_guarded;
        } else {
          std::lock_guard lock(env->thread_mu);
          if (++env->thread_guarded != 1) env->fail("std::mutex: two holders");
          compute(r, 200'000);
          --env->thread_guarded;
        }
      }
      finished.send(1);
    }));
  }
  for (int i = 0; i < n; ++i) finished.recv();
}

// Goroutines wanting the same function-local static at once: while one runs its 200 us
// initializer (and may be preempted in it), the others wait on its guard, which belongs to
// the initializing thread. Each static initializes once per process.
constexpr int kStatics = 64;

void static_party(Env* env, Choices& ch) {
  int i = static_cast<int>(ch.next(kStatics)), n = 1 + static_cast<int>(ch.next(3));
  nugo::Chan<int> finished(n);
  auto want = [env, i] {
    if (slow_static_at(i, std::make_integer_sequence<int, kStatics>{}) != i + 1)
      env->fail("function-local static %d: wrong value", i);
  };
  for (int g = 0; g < n; ++g) {
    env->goroutines.fetch_add(1);
    nugo::go(counted(env->wg, [finished, want]() mutable {
      want();
      finished.send(1);
    }));
  }
  want();
  for (int g = 0; g < n; ++g) finished.recv();
}

// One goroutine of a program. home: the node go_on started it for, or -1.
void node(Env* env, Choices ch, int depth, int home) {
  if (home >= 0 && nugo::this_g::home_node() != home)
    env->fail("go_on(%d): home node %d", home, nugo::this_g::home_node());
  // A helper answers questions over this goroutine's own channels.
  nugo::Chan<int> asks_ch(ch.next(2));
  nugo::Chan<int> replies(1);
  int asks = 1 + static_cast<int>(ch.next(20));
  env->goroutines.fetch_add(1);
  nugo::go(counted(env->wg, [asks_ch, replies, asks]() mutable {
    for (int i = 0; i < asks; ++i) replies.send(*asks_ch.recv() * 2);
  }));
  int asked = 0, children = 0;
  auto ask = [&](int v) {
    asks_ch.send(v);
    env->tokens.fetch_add(*replies.recv() - 2 * v);
    ++asked;
  };
  for (int step = 0; step < 60 && !ch.exhausted(); ++step) {
    switch (ch.next(22)) {
      case 0: nugo::yield(); break;
      case 1: compute(step, ch.next(50'000)); break;
      case 2:
        if (asked < asks) ask(step);
        break;
      case 3: {
        int v = static_cast<int>(ch.next(100));
        nugo::select(nugo::on_send(env->shared, v, [&] { env->tokens.fetch_add(v); }),
                     nugo::on_recv(env->shared, [&](std::optional<int> got) { env->tokens.fetch_sub(*got); }),
                     nugo::on_recv(nugo::after(microseconds(ch.next(200)))));
        break;
      }
      case 4: nugo::sleep_for(microseconds(ch.next(300))); break;
      case 5: nugo::syscall([] { return ::getpid(); }); break;
      case 6: {
        std::lock_guard lock(env->mu);
        if (++env->guarded != 1) env->fail("Mutex: %lld holders", static_cast<long long>(env->guarded));
        compute(step, 500);
        --env->guarded;
        break;
      }
      case 7: {
        nugo::Timer t(microseconds(ch.next(100)));
        if (ch.next(2)) t.stop();
        else t.c.recv();
        break;
      }
      case 8: nugo::syscall([] { timespec ts{0, 20'000}; return ::nanosleep(&ts, nullptr); }); break;
      case 9:
        if (depth < 3 && children < 3) {
          ++children;
          spawn(env, ch, depth);
        }
        break;
      case 10:
        if (ch.next(3)) {
          env->rw.lock_shared();
          if (env->rw_a != env->rw_b) env->fail("RWMutex: a reader saw a writer's half-done update");
          env->rw.unlock_shared();
        } else {
          std::lock_guard lock(env->rw);
          ++env->rw_a;
          compute(step, 300);
          ++env->rw_b;
        }
        break;
      case 11: cond_handoff(env, ch); break;
      case 12:
        env->once_called.store(true);
        env->once.call([env] {
          env->once_runs.fetch_add(1);
          nugo::yield();  // others arrive while it runs
        });
        if (env->once_runs.load() != 1) env->fail("Once: returned before its function had run");
        break;
      case 13: {
        nugo::Ticker tk(microseconds(1 + ch.next(100)));
        for (int n = 1 + static_cast<int>(ch.next(3)); n > 0; --n) tk.c.recv();
        if (ch.next(2)) tk.reset(microseconds(1 + ch.next(100)));
        tk.stop();
        break;
      }
      case 14: close_while_blocked(env, ch); break;
      case 15:
        if (ch.next(3) == 0) hog(env, ch);
        break;
      case 16: float_check(env, ch); break;
      case 17: extreme_durations(env, ch); break;
      case 18: timer_race(env, ch); break;
      case 19: {
        nugo::lock_os_thread();
        long tid = ::syscall(SYS_gettid);
        for (int n = 1 + static_cast<int>(ch.next(3)); n > 0; --n) {
          switch (ch.next(4)) {
            case 0: nugo::sleep_for(microseconds(ch.next(100))); break;
            case 1: nugo::yield(); break;
            case 2: nugo::syscall([] { timespec ts{0, 10'000}; return ::nanosleep(&ts, nullptr); }); break;
            case 3:
              if (asked < asks) ask(step);
              break;
          }
        }
        if (::syscall(SYS_gettid) != tid) env->fail("lock_os_thread: the goroutine changed threads");
        nugo::unlock_os_thread();
        break;
      }
      case 20:
        if (ch.next(2)) {
          thread_lock_party(env, ch);
        } else {
          static_party(env, ch);
        }
        break;
      case 21: {
        int v = static_cast<int>(ch.next(100));
        nugo::select(nugo::on_send(env->shared, v, [&] { env->tokens.fetch_add(v); }),
                     nugo::on_recv(env->shared, [&](std::optional<int> got) { env->tokens.fetch_sub(*got); }),
                     nugo::on_default([] {}));
        break;
      }
    }
  }
  while (asked < asks) ask(asked);  // the helper expects all its questions
}

// The runtime's own counts of the finished run (numa/README.md, "Statistics").
void check_stats(Env& env, int goroutines) {
  nugo::Stats s = nugo::stats();
  const nugo::Counters& t = s.totals;
  if (t.created + s.created_foreign != static_cast<std::uint64_t>(goroutines))
    env.fail("stats: created %llu + created_foreign %llu, the program made %d",
             static_cast<unsigned long long>(t.created), static_cast<unsigned long long>(s.created_foreign),
             goroutines);
  if (t.runs < static_cast<std::uint64_t>(goroutines)) env.fail("stats: fewer runs than goroutines");
  if (t.runs != t.runs_home + t.runs_away) env.fail("stats: runs != runs_home + runs_away");
  if (t.moved_same_node < t.steals_same_node || t.moved_remote < t.steals_remote)
    env.fail("stats: a steal moved no goroutine");
  if (t.idle_ns < 0) env.fail("stats: negative idle time");
  nugo::Counters by_p, by_node;
  for (const auto& p : s.ps) by_p += p;
  for (const auto& n : s.nodes) by_node += n;
  auto same = [](const nugo::Counters& a, const nugo::Counters& b) {
    return a.created == b.created && a.runs == b.runs && a.runs_home == b.runs_home &&
           a.runs_away == b.runs_away && a.steals_same_node == b.steals_same_node &&
           a.steals_remote == b.steals_remote && a.moved_same_node == b.moved_same_node &&
           a.moved_remote == b.moved_remote && a.globrunq_own == b.globrunq_own &&
           a.globrunq_remote == b.globrunq_remote && a.preemptions == b.preemptions;
  };
  if (!same(by_p, t)) env.fail("stats: the Ps' counts do not add up to the totals");
  if (!same(by_node, t)) env.fail("stats: the nodes' counts do not add up to the totals");
}

Outcome run(Choices ch, const nugo::Config& cfg) {
  (void)reference();  // on this plain thread, before any goroutine wants it
  Env env;
  nugo::run(
      [&] {
        for (int n = 0; n < 8; ++n) {  // which nodes go_on accepts
          try {
            nugo::go_on(n, counted(env.wg, [] {}));
            env.goroutines.fetch_add(1);
            env.nodes.push_back(n);
          } catch (const std::invalid_argument&) {
          }
        }
        env.goroutines.fetch_add(1);
        nugo::go(counted(env.wg, [e = &env, ch] { node(e, ch, 0, -1); }));
        env.wg.wait();
        // What is still buffered in `shared` was counted when sent.
        for (auto v = env.shared.try_recv(); v.ready; v = env.shared.try_recv()) env.tokens.fetch_sub(*v.value);
      },
      cfg);
  Outcome out;
  out.goroutines = env.goroutines.load();
  if (env.tokens.load() != 0)
    env.fail("token balance %lld: a value was lost or received twice", static_cast<long long>(env.tokens.load()));
  if (env.guarded != 0 || env.thread_guarded != 0 || env.thread_rw_guarded != 0) env.fail("a lock's count did not return to 0");
  if (env.rw_a != env.rw_b) env.fail("RWMutex: counts differ at the end");
  if (env.once_called.load() && env.once_runs.load() != 1) env.fail("Once ran %d times", env.once_runs.load());
  check_stats(env, out.goroutines);
  out.ok = env.failure.empty();
  out.failure = env.failure;
  return out;
}

}  // namespace

Outcome run_seed(std::uint32_t seed, const nugo::Config& cfg) { return run(Choices(seed), cfg); }

Outcome run_bytes(const std::uint8_t* data, std::size_t size, const nugo::Config& cfg) {
  return run(Choices(data, size), cfg);
}

}  // namespace program
