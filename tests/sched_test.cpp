// Scheduler tests through the public API. ctest runs each at NUGO_PROCS 1, 2 and 8
// (tests/CMakeLists.txt), so every test reads its P count from the environment.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nugo/nugo.hpp>
#include <set>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

TEST_CASE("run returns main's result and the main goroutine is goroutine 1", "[sched]") {
  CHECK(nugo::run([] { return 7; }) == 7);
  std::int64_t main_id = 0;
  nugo::run([&] { main_id = nugo::this_g::id(); });
  CHECK(main_id == 1);
  CHECK(nugo::this_g::id() == 0);
  CHECK(nugo::gomaxprocs() == 0);
}

TEST_CASE("the runtime has NUGO_PROCS Ps", "[sched]") {
  const nugo::Config cfg = nugo::Config::from_env();
  int procs = nugo::run([] { return nugo::gomaxprocs(); });
  if (cfg.procs > 0) CHECK(procs == cfg.procs);
  CHECK(procs >= 1);
}

TEST_CASE("goroutines run, have distinct ids, and the WaitGroup joins them", "[sched]") {
  constexpr int kN = 10000;
  std::vector<std::int64_t> ids(kN, 0);
  nugo::run([&] {
    nugo::WaitGroup wg;
    wg.add(kN);
    for (int i = 0; i < kN; ++i)
      nugo::go([&, i] {
        ids[i] = nugo::this_g::id();
        wg.done();
      });
    wg.wait();
  });
  std::set<std::int64_t> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == kN);
  CHECK(*distinct.begin() > 1);
}

TEST_CASE("all Ps run goroutines at the same time (TestGoroutineParallelism)", "[sched][asyncpreempt]") {
  // P goroutines take turns on a shared counter without ever yielding: this deadlocks unless
  // every P really runs one of them at once. [asyncpreempt]: a wake-up that waits for its
  // submitter's P (core/README.md, "Models") is ended by the preemption signal, which a TSan
  // build does not have.
  nugo::run([] {
    const int procs = nugo::gomaxprocs();
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::atomic<std::uint32_t> x{0};
      nugo::WaitGroup wg;
      wg.add(procs);
      for (int p = 0; p < procs; ++p)
        nugo::go([&, p] {
          for (int i = 0; i < 3; ++i) {
            auto expected = static_cast<std::uint32_t>(procs * i + p);
            while (x.load() != expected) {}
            x.store(expected + 1);
          }
          wg.done();
        });
      wg.wait();
      REQUIRE(x.load() == static_cast<std::uint32_t>(3 * procs));
    }
  });
}

TEST_CASE("yielding goroutines make progress (TestYieldProgress)", "[sched]") {
  nugo::run([] {
    std::atomic<bool> stop{false}, acked{false};
    std::atomic<long> spins{0};
    nugo::go([&] {
      while (!stop.load()) {
        spins.fetch_add(1);
        nugo::yield();
      }
      acked = true;
    });
    // Main yields until the other goroutine has run: progress, not speed. (This waited a
    // fixed 10 ms and then checked; under TSan beside another test process, the thread that
    // had stolen the goroutine was once descheduled for longer than that.) 10 s bounds a hang.
    auto until = Clock::now() + std::chrono::seconds(10);
    while (spins.load() == 0 && Clock::now() < until) nugo::yield();
    CHECK(spins.load() > 0);
    stop = true;
    while (!acked.load()) nugo::yield();
  });
}

TEST_CASE("yield round-robins runnable goroutines through the global queue", "[sched]") {
  // Two goroutines that yield in turns, on however many Ps: each must keep making progress.
  nugo::run([] {
    std::atomic<long> a{0}, b{0};
    std::atomic<bool> stop{false};
    nugo::WaitGroup wg;
    wg.add(2);
    nugo::go([&] { while (!stop) { ++a; nugo::yield(); } wg.done(); });
    nugo::go([&] { while (!stop) { ++b; nugo::yield(); } wg.done(); });
    while (a.load() < 1000 || b.load() < 1000) nugo::yield();
    stop = true;
    wg.wait();
  });
}

// Goroutines here wait for a plain thread that has not called into nugo yet, which the
// deadlock report cannot see (core/README.md): it is turned off, as users are told to.
nugo::Config without_deadlock_report() {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.detect_deadlock = false;
  return cfg;
}

TEST_CASE("goroutines spawned from a foreign thread run", "[sched]") {
  nugo::run([] {
    nugo::WaitGroup wg;
    constexpr int kN = 1000;
    wg.add(kN);
    std::atomic<int> ran{0};
    std::thread foreign([&] {
      CHECK(nugo::this_g::id() == 0);
      for (int i = 0; i < kN; ++i)
        nugo::go([&] {
          ran.fetch_add(1);
          wg.done();
        });
    });
    wg.wait();
    foreign.join();
    CHECK(ran.load() == kN);
  }, without_deadlock_report());
}

TEST_CASE("one million goroutines are spawned and run", "[sched][scale]") {
  constexpr int kN = 1000000;
  std::atomic<long> sum{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    wg.add(kN);
    for (int i = 0; i < kN; ++i)
      nugo::go([&, i] {
        sum.fetch_add(i, std::memory_order_relaxed);
        wg.done();
      });
    wg.wait();
  });
  CHECK(sum.load() == static_cast<long>(kN) * (kN - 1) / 2);
}

TEST_CASE("100k goroutines are alive at once, each blocked on its own stack", "[sched][manygoroutines]") {
  constexpr int kN = 100000;
  nugo::run([&] {
    nugo::WaitGroup started, gate, finished;
    gate.add(1);
    started.add(kN);
    finished.add(kN);
    for (int i = 0; i < kN; ++i)
      nugo::go([&] {
        started.done();
        gate.wait();  // parks: every one of them holds a stack until the gate opens
        finished.done();
      });
    started.wait();
    gate.done();
    finished.wait();
  });
}

TEST_CASE("goroutines spawning goroutines (a chain, like BenchmarkCreateGoroutines)", "[sched]") {
  constexpr int kN = 100000;
  std::atomic<int> reached{0};
  nugo::run([&] {
    nugo::WaitGroup wg;
    wg.add(1);
    struct Chain {
      static void step(int n, nugo::WaitGroup* wg, std::atomic<int>* reached) {
        reached->fetch_add(1);
        if (n == 0)
          wg->done();
        else
          nugo::go([=] { step(n - 1, wg, reached); });
      }
    };
    nugo::go([&] { Chain::step(kN, &wg, &reached); });
    wg.wait();
  });
  CHECK(reached.load() == kN + 1);
}

TEST_CASE("the runtime starts and stops 100 times in one process", "[sched]") {
  for (int round = 0; round < 100; ++round) {
    int r = nugo::run([round] {
      nugo::WaitGroup wg;
      std::atomic<int> n{0};
      wg.add(10);
      for (int i = 0; i < 10; ++i)
        nugo::go([&] {
          n.fetch_add(1);
          nugo::yield();
          wg.done();
        });
      wg.wait();
      return n.load() + round;
    });
    REQUIRE(r == 10 + round);
  }
}

TEST_CASE("goroutines left blocked when main returns are abandoned and their closures freed",
          "[sched]") {
  auto token = std::make_shared<int>(1);
  nugo::run([token] {
    static nugo::WaitGroup gate;  // never opened: outlives the goroutines parked on it
    gate.add(1);
    for (int i = 0; i < 100; ++i) nugo::go([token] { gate.wait(); });
    for (int i = 0; i < 100; ++i) nugo::go([token] {});  // possibly never started
    nugo::yield();
  });
  CHECK(token.use_count() == 1);
}

TEST_CASE("go and run misuse are reported", "[sched]") {
  CHECK_THROWS_AS(nugo::go([] {}), std::logic_error);
  nugo::run([] {
    CHECK_THROWS_AS(nugo::run([] {}), std::logic_error);
  });
}

TEST_CASE("a pair readying each other through runnext does not starve the P", "[sched]") {
  // Each of A and B readies the other into runnext, which inherits the time slice, so the
  // pair alone would keep schedtick still and the P forever. C waits on the global queue
  // (it yields) and must still run: the inherited slice ends after 10 ms.
  nugo::run([] {
    nugo::WaitGroup a_turn, b_turn, done;
    std::atomic<bool> stop{false}, b_stop{false};
    std::atomic<long> rounds{0};
    a_turn.add(1);
    b_turn.add(1);
    done.add(3);
    // Each re-arms its own turn before releasing the other, so no counter goes below zero.
    nugo::go([&] {
      for (;;) {
        a_turn.wait();
        a_turn.add(1);
        ++rounds;
        if (stop) b_stop = true;
        b_turn.done();
        if (b_stop) break;
      }
      done.done();
    });
    nugo::go([&] {
      for (;;) {
        b_turn.wait();
        b_turn.add(1);
        if (b_stop) break;
        a_turn.done();
      }
      done.done();
    });
    nugo::go([&] {
      while (rounds.load() < 1000) nugo::yield();
      stop = true;
      done.done();
    });
    a_turn.done();  // start the ping-pong
    done.wait();
  });
}

TEST_CASE("a WaitGroup may be destroyed as soon as wait returns, by any waiter", "[sched]") {
  // Main and a helper both wait; the helper may arrive after the counter reached zero while
  // the waker is still releasing main. Whoever returns last frees the WaitGroup.
  nugo::run([] {
    for (int round = 0; round < 2000; ++round) {
      auto* wg = new nugo::WaitGroup;
      std::atomic<int> returned{0};
      nugo::WaitGroup joined;
      wg->add(1);
      joined.add(1);
      auto leave = [&] {
        if (returned.fetch_add(1) == 1) delete wg;
      };
      nugo::go([&] { wg->done(); });
      nugo::go([&] {
        wg->wait();
        leave();
        joined.done();
      });
      wg->wait();
      leave();
      joined.wait();
    }
  });
}

TEST_CASE("a foreign thread's done() may race with run() returning", "[sched]") {
  for (int round = 0; round < 200; ++round) {
    std::thread foreign;
    nugo::run([&] {
      nugo::WaitGroup wg;
      wg.add(1);
      foreign = std::thread([&] { wg.done(); });  // readies main, then returns from wakep
      wg.wait();
    }, without_deadlock_report());
    foreign.join();
  }
}
