// A program the tests run as a child process, for behaviour that ends the process: bad
// configuration, a panicking goroutine, a stack overflow.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nugo/nugo.hpp>
#include <nugo/trace.hpp>
#include <stdexcept>

namespace {

// Recurses until the stack runs out, on purpose.
#pragma GCC diagnostic ignored "-Winfinite-recursion"
int recurse(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0];
}

int fib(int n) {
  if (n < 2) return n;
  int a = 0;
  nugo::WaitGroup wg;
  wg.add(1);
  nugo::go([&] {
    a = fib(n - 1);
    wg.done();
  });
  int b = fib(n - 2);
  wg.wait();
  return a + b;
}

// A little of everything the tracer records (trace_test.cpp, tests/CMakeLists.txt): fork-join
// goroutines (creates, runs, steals, unblocks), a channel ping-pong, sleeps (timers), system
// calls that sysmon takes the P from and one that hands it off at once, and a goroutine that
// spins until the preemption signal stops it.
void trace_workload() {
  nugo::WaitGroup wg;
  wg.add(4);
  nugo::go([&] {
    if (fib(14) != 377) std::abort();
    wg.done();
  });
  nugo::go([&] {
    nugo::Chan<int> ping, pong;
    nugo::go([=]() mutable {
      for (int i = 0; i < 200; ++i) pong.send(*ping.recv() + 1);
    });
    for (int i = 0; i < 200; ++i) {
      ping.send(i);
      if (*pong.recv() != i + 1) std::abort();
    }
    wg.done();
  });
  nugo::go([&] {
    for (int i = 0; i < 3; ++i) {
      nugo::sleep_for(std::chrono::milliseconds(2));
      nugo::syscall([] { usleep(30'000); });  // outlasts a sysmon tick: the P is retaken
    }
    nugo::blocking_syscall([] { usleep(1000); });
    wg.done();
  });
  nugo::go([&] {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
    std::atomic<long> spins{0};
    while (std::chrono::steady_clock::now() < until) spins.fetch_add(1, std::memory_order_relaxed);
    wg.done();
  });
  wg.wait();
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "run") == 0) {
    return nugo::run([] {
      std::puts("ran");
      return 0;
    });
  }
  if (std::strcmp(mode, "trace-workload") == 0) {
    return nugo::run([] {
      trace_workload();
      return 0;
    });
  }
  if (std::strcmp(mode, "trace-sleep") == 0) {
    // Quiet for 150 ms: main asleep, one goroutine blocked on a channel (schedtrace_test).
    return nugo::run([] {
      nugo::Chan<int> c;
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([c, &wg]() mutable {
        c.recv();
        wg.done();
      });
      nugo::sleep_for(std::chrono::milliseconds(150));
      c.close();
      wg.wait();
      return 0;
    });
  }
  if (std::strcmp(mode, "panic") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([] { throw std::runtime_error("boom from a goroutine"); });
      wg.wait();
    });
  }
  if (std::strcmp(mode, "overflow") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([&] {
        recurse(0);
        wg.done();
      });
      wg.wait();
    });
  }
  if (std::strcmp(mode, "negative-waitgroup") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.done();
    });
  }
  if (std::strcmp(mode, "deadlock") == 0) {
    return nugo::run([] {
      nugo::Mutex mu;
      mu.lock();
      nugo::go([&] { mu.lock(); });  // blocks on the mutex forever
      nugo::Chan<int> never;
      never.recv();  // and main on a channel nobody sends to
    });
  }
  if (std::strcmp(mode, "timer-not-deadlock") == 0) {
    return nugo::run([] {
      // Everything is blocked, but a timer is pending: not a deadlock.
      nugo::Chan<int> later;
      nugo::go([=] {
        nugo::sleep_for(std::chrono::milliseconds(300));
        later.send(7);
      });
      std::printf("got %d\n", *later.recv());
      return 0;
    });
  }
  std::fprintf(stderr, "usage: nugo_test_child run|panic|overflow|negative-waitgroup|deadlock|"
                       "timer-not-deadlock\n");
  return 64;
}
