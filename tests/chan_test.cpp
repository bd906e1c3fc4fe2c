// Channels and select, after Go's runtime/chan_test.go and the programs in test/chan. Run at
// NUGO_PROCS 1, 2 and 8 like every scheduler test.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <nugo/nugo.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("channels: blocking, buffering, FIFO and close (TestChan)", "[sched][chan][realtime]") {
  nugo::run([] {
    for (std::size_t cap = 0; cap < 8; ++cap) {
      INFO("capacity " << cap);
      {  // a receive blocks until something is sent
        nugo::Chan<int> c(cap);
        std::atomic<bool> received{false};
        nugo::WaitGroup wg;
        wg.add(1);
        nugo::go([&] {
          auto v = c.recv();
          received = true;
          CHECK(v == 0);
          wg.done();
        });
        nugo::sleep_for(2ms);
        CHECK_FALSE(received.load());
        c.send(0);
        wg.wait();
      }
      {  // a send blocks once the buffer is full (2 ms for the sender to fill it: [realtime])
        nugo::Chan<int> c(cap);
        std::atomic<int> sent{0};
        nugo::WaitGroup wg;
        wg.add(1);
        nugo::go([&] {
          for (std::size_t i = 0; i <= cap; ++i) {
            c.send(static_cast<int>(i));
            ++sent;
          }
          wg.done();
        });
        nugo::sleep_for(2ms);
        CHECK(sent.load() == static_cast<int>(cap));
        CHECK(c.recv() == 0);
        wg.wait();
      }
      {  // FIFO, len and cap
        nugo::Chan<int> c(cap);
        nugo::go([=] {
          for (int i = 0; i < 100; ++i) c.send(i);
        });
        for (int i = 0; i < 100; ++i) REQUIRE(c.recv() == i);
        CHECK(c.cap() == cap);
        CHECK(c.len() == 0);
      }
      {  // close: the buffered values are still received, then empty; try_recv agrees
        nugo::Chan<int> c(cap);
        nugo::go([=] {
          for (std::size_t i = 0; i < cap; ++i) c.send(static_cast<int>(i));
          c.close();
        });
        std::vector<int> got;
        for (int v : c) got.push_back(v);
        CHECK(got.size() == cap);
        CHECK_FALSE(c.recv().has_value());
        auto t = c.try_recv();
        CHECK(t.ready);
        CHECK_FALSE(t.value.has_value());
      }
    }
  });
}

TEST_CASE("non-blocking operations never block and never lie", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> unbuffered;
    CHECK_FALSE(unbuffered.try_send(1));
    CHECK_FALSE(unbuffered.try_recv().ready);
    nugo::Chan<int> buffered(1);
    CHECK(buffered.try_send(1));
    CHECK_FALSE(buffered.try_send(2));
    auto r = buffered.try_recv();
    CHECK(r.ready);
    CHECK(r.value == 1);
  });
}

TEST_CASE("a non-blocking receive on a ready channel succeeds (TestNonblockRecvRace)",
          "[sched][chan]") {
  nugo::run([] {
    for (int i = 0; i < 2000; ++i) {
      nugo::Chan<int> c(1);
      c.send(1);
      nugo::WaitGroup wg;
      wg.add(1);
      std::atomic<bool> ok{true};
      nugo::go([&] {
        int chosen = nugo::select(nugo::on_recv(c), nugo::on_default());
        if (chosen != 0) ok = false;
        wg.done();
      });
      c.close();
      wg.wait();
      REQUIRE(ok.load());
    }
  });
}

TEST_CASE("move-only values travel through channels and select", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<std::unique_ptr<int>> c(2);
    c.send(std::make_unique<int>(7));
    nugo::go([=] { c.send(std::make_unique<int>(8)); });
    CHECK(**c.recv() == 7);
    nugo::select(nugo::on_recv(c, [](std::optional<std::unique_ptr<int>> v) { CHECK(**v == 8); }));
  });
}

TEST_CASE("send on a closed channel and closing twice panic in the goroutine", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> c(1);
    c.close();
    CHECK_THROWS_AS(c.send(1), nugo::Panic);
    CHECK_THROWS_AS(c.close(), nugo::Panic);
    CHECK_THROWS_AS(nugo::select(nugo::on_send(c, 1)), nugo::Panic);
    // A sender blocked when the channel is closed panics too.
    nugo::Chan<int> d;
    nugo::WaitGroup wg;
    wg.add(1);
    std::atomic<bool> panicked{false};
    nugo::go([&] {
      try {
        d.send(1);
      } catch (const nugo::Panic&) {
        panicked = true;
      }
      wg.done();
    });
    nugo::sleep_for(1ms);
    d.close();
    wg.wait();
    CHECK(panicked.load());
  });
}

TEST_CASE("goroutines selecting on one channel never receive their own send (TestSelfSelect)",
          "[sched][chan]") {
  nugo::run([] {
    for (std::size_t cap : {0, 1}) {
      nugo::Chan<int> c(cap);
      nugo::WaitGroup wg;
      std::atomic<bool> self_receive{false};
      wg.add(2);
      for (int p = 0; p < 2; ++p) {
        nugo::go([&, p] {
          for (int i = 0; i < 1000; ++i) {
            if (p == 0 || i % 2 == 0) {
              nugo::select(nugo::on_send(c, p), nugo::on_recv(c, [&](std::optional<int> v) {
                             if (cap == 0 && v == p) self_receive = true;
                           }));
            } else {
              nugo::select(nugo::on_recv(c, [&](std::optional<int> v) {
                             if (cap == 0 && v == p) self_receive = true;
                           }),
                           nugo::on_send(c, p));
            }
          }
          wg.done();
        });
      }
      wg.wait();
      CHECK_FALSE(self_receive.load());
    }
  });
}

TEST_CASE("concurrent selects over overlapping channels lose nothing (TestSelectStress)",
          "[sched][chan]") {
  nugo::run([] {
    constexpr int kN = 10000;
    nugo::Chan<int> c[4] = {nugo::Chan<int>(0), nugo::Chan<int>(0), nugo::Chan<int>(2),
                            nugo::Chan<int>(3)};
    nugo::WaitGroup wg;
    wg.add(10);
    // Plain senders and receivers on each channel.
    for (int k = 0; k < 4; ++k) {
      nugo::go([&, k] {
        for (int i = 0; i < kN; ++i) c[k].send(i);
        wg.done();
      });
      nugo::go([&, k] {
        for (int i = 0; i < kN; ++i) c[k].recv();
        wg.done();
      });
    }
    // A select sender and a select receiver over all four, taking each out once it has done
    // its share.
    nugo::go([&] {
      int n[4] = {};
      nugo::Chan<int> cs[4] = {c[0], c[1], c[2], c[3]};
      for (int i = 0; i < 4 * kN; ++i) {
        int k = nugo::select(nugo::on_send(cs[3], 0), nugo::on_send(cs[2], 0),
                             nugo::on_send(cs[0], 0), nugo::on_send(cs[1], 0));
        int idx = k == 0 ? 3 : k == 1 ? 2 : k == 2 ? 0 : 1;
        if (++n[idx] == kN) cs[idx] = nugo::Chan<int>::nil();
      }
      wg.done();
    });
    nugo::go([&] {
      int n[4] = {};
      nugo::Chan<int> cs[4] = {c[0], c[1], c[2], c[3]};
      for (int i = 0; i < 4 * kN; ++i) {
        int k = nugo::select(nugo::on_recv(cs[0]), nugo::on_recv(cs[3]), nugo::on_recv(cs[1]),
                             nugo::on_recv(cs[2]));
        int idx = k == 0 ? 0 : k == 1 ? 3 : k == 2 ? 1 : 2;
        if (++n[idx] == kN) cs[idx] = nugo::Chan<int>::nil();
      }
      wg.done();
    });
    wg.wait();
  });
}

TEST_CASE("many consumers of one channel see every value once (TestMultiConsumer)",
          "[sched][chan]") {
  nugo::run([] {
    constexpr int kWorkers = 10, kItems = 10000;
    nugo::Chan<int> q(1), r(1);
    nugo::WaitGroup wg;
    wg.add(kWorkers);
    for (int w = 0; w < kWorkers; ++w)
      nugo::go([&] {
        for (int v : q) r.send(v);
        wg.done();
      });
    long expect = 0;
    nugo::go([&] {
      for (int i = 0; i < kItems; ++i) q.send(i);
      q.close();
      wg.wait();
      r.close();
    });
    for (int i = 0; i < kItems; ++i) expect += i;
    long sum = 0, n = 0;
    for (int v : r) {
      sum += v;
      ++n;
    }
    CHECK(n == kItems);
    CHECK(sum == expect);
  });
}

TEST_CASE("select chooses uniformly among ready cases (TestSelectFairness)", "[sched][chan]") {
  nugo::run([] {
    constexpr int kTrials = 10000;
    nugo::Chan<int> c1(kTrials + 1), c2(kTrials + 1);
    for (int i = 0; i < kTrials + 1; ++i) {
      c1.send(1);
      c2.send(2);
    }
    nugo::Chan<int> c3 = nugo::Chan<int>::nil(), c4 = nugo::Chan<int>::nil();
    int counts[2] = {};
    for (int i = 0; i < kTrials; ++i) {
      int k = nugo::select(nugo::on_recv(c1), nugo::on_recv(c2), nugo::on_recv(c3),
                           nugo::on_recv(c4));
      REQUIRE(k < 2);
      ++counts[k];
    }
    // Go's bound: |r - 0.5| <= 4.891676 / (2 sqrt(N)), a 1e-6 false positive rate.
    double r = static_cast<double>(counts[0]) / kTrials;
    double e = std::abs(r - 0.5);
    INFO("c1 chosen " << counts[0] << " of " << kTrials);
    CHECK(e <= 4.891676 / (2 * std::sqrt(static_cast<double>(kTrials))));
  });
}

TEST_CASE("a hog pair and a light pair both progress on one P (TestPingPongHog)",
          "[speed][sched][chan]") {
  // Meaningful at 1 P; at more Ps it still must not hang.
  nugo::run([] {
    nugo::Chan<bool> done, hog, light;
    std::atomic<long> hog_count{0}, light_count{0};
    nugo::WaitGroup wg;
    // wake by reference: a goroutine past wg.done() must own no channel, or main may return
    // and abandon it with the handle in its frame, which LeakSanitizer reports (CI, ASan, 8 Ps).
    auto run = [&](long limit, std::atomic<long>* counter, const nugo::Chan<bool>& wake) {
      for (bool stop = false; !stop;) {
        nugo::select(nugo::on_recv(done, [&](auto) { stop = true; }),
                     nugo::on_recv(wake, [&](auto) {
                       volatile long local = 0;
                       for (long i = 0; i < limit; ++i) local = local + 1;
                       counter->fetch_add(limit, std::memory_order_relaxed);
                       wake.send(true);
                     }));
      }
      wg.done();
    };
    wg.add(4);
    for (int i = 0; i < 2; ++i) nugo::go([&] { run(1'000'000, &hog_count, hog); });
    for (int i = 0; i < 2; ++i) nugo::go([&] { run(1'000, &light_count, light); });
    hog.send(true);
    light.send(true);
    nugo::sleep_for(100ms);
    done.close();
    hog.recv();
    light.recv();
    wg.wait();
    long h = hog_count.load(), l = light_count.load();
    INFO("hog " << h << ", light " << l);
    constexpr long kFactor = 20;
    CHECK(h / kFactor <= l);
    CHECK(l / kFactor <= h);
  });
}

TEST_CASE("a timer fires amid busy channel traffic (TestTimerFairness)", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<bool> done, c;
    nugo::WaitGroup wg;
    wg.add(2);
    for (int i = 0; i < 2; ++i)
      nugo::go([&] {
        for (bool stop = false; !stop;)
          nugo::select(nugo::on_send(c, true), nugo::on_recv(done, [&](auto) { stop = true; }));
        wg.done();
      });
    auto timer = nugo::after(20ms);
    for (bool fired = false; !fired;)
      nugo::select(nugo::on_recv(c), nugo::on_recv(timer, [&](auto) { fired = true; }));
    done.close();
    wg.wait();
  });
}

TEST_CASE("the prime sieve of test/chan/sieve1.go", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> ch;
    nugo::go([=] {
      for (int i = 2;; ++i) ch.send(i);
    });
    std::vector<int> primes;
    nugo::Chan<int> in = ch;
    for (int i = 0; i < 100; ++i) {
      int prime = *in.recv();
      primes.push_back(prime);
      nugo::Chan<int> out;
      nugo::go([in, out, prime] {
        for (;;) {
          int v = *in.recv();
          if (v % prime != 0) out.send(v);
        }
      });
      in = out;
    }
    CHECK(primes.front() == 2);
    CHECK(primes[9] == 29);
    CHECK(primes.back() == 541);  // the 100th prime
  });
}

TEST_CASE("a chain of 10,000 goroutines passes a value along (test/chan/daisy chain)",
          "[sched][chan][manygoroutines]") {
  nugo::run([] {
    constexpr int kN = 10000;
    nugo::Chan<int> leftmost;
    nugo::Chan<int> left = leftmost;
    for (int i = 0; i < kN; ++i) {
      nugo::Chan<int> right;
      nugo::go([left, right] { left.send(1 + *right.recv()); });
      left = right;
    }
    nugo::go([left] { left.send(1); });
    CHECK(leftmost.recv() == kN + 1);
  });
}

TEST_CASE("a blocking receive from a plain thread is refused and leaves the channel usable",
          "[sched][chan]") {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.detect_deadlock = false;  // main waits for a plain thread
  nugo::run([] {
    nugo::Chan<int> c;
    std::thread plain([&] { CHECK_THROWS_AS(c.recv(), std::logic_error); });
    plain.join();
    nugo::go([=] { c.send(5); });
    CHECK(c.recv() == 5);
  }, cfg);
}

// Go's "makechan: size out of range".
TEST_CASE("a channel whose buffer size overflows or cannot exist is refused", "[sched][chan]") {
  nugo::run([] {
    CHECK_THROWS_AS(nugo::Chan<std::uint64_t>((std::size_t{1} << 61) + 1), std::length_error);
    CHECK_THROWS_AS(nugo::Chan<std::uint64_t>(SIZE_MAX), std::length_error);
    CHECK_THROWS_AS(nugo::Chan<char>(std::size_t{1} << 48), std::length_error);
    CHECK_THROWS_WITH(nugo::Chan<std::uint64_t>(SIZE_MAX / 4), Catch::Contains("out of range"));
    nugo::Chan<std::uint64_t> fine(1 << 20);
    CHECK(fine.cap() == std::size_t{1} << 20);
  });
}

// select_value returns the chosen handler's result as the handlers' common type.
TEST_CASE("select_value returns the value of the chosen receive case", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> a(1), never = nugo::Chan<int>::nil();
    auto next = [&](std::chrono::nanoseconds timeout) {
      return nugo::select_value(
          nugo::on_recv(a, [](std::optional<int> x) { return x.value_or(-1) + 1; }),
          nugo::on_recv(never, [](auto) { return -2; }),
          nugo::on_recv(nugo::after(timeout), [](auto) { return 0; }));
    };
    a.send(41);
    CHECK(next(10s) == 42);
    CHECK(next(1ms) == 0);  // nothing in a: the timeout's handler
    nugo::go([=] { a.send(6); });
    CHECK(next(10s) == 7);  // sent while select_value waits
  });
}

TEST_CASE("select_value returns the value of the chosen send case", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> out;
    nugo::Chan<int> got(1);
    nugo::go([=] { got.send(*out.recv()); });
    std::string what = nugo::select_value(nugo::on_send(out, 7, [] { return std::string("sent"); }),
                                          nugo::on_recv(nugo::after(10s), [](auto) {
                                            return std::string("timed out");
                                          }));
    CHECK(what == "sent");
    CHECK(got.recv() == 7);
  });
}

TEST_CASE("select_value returns the default case's value when nothing is ready",
          "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> out(1), in(1);
    out.send(0);  // full
    auto what = [&] {
      return nugo::select_value(
          nugo::on_send(out, 7, [] { return std::string("sent"); }),
          nugo::on_recv(in, [](std::optional<int> v) { return std::to_string(*v); }),
          nugo::on_default([] { return "busy"; }));  // const char*: the common type is string
    };
    static_assert(std::is_same_v<decltype(what()), std::string>);
    CHECK(what() == "busy");
    in.send(3);
    CHECK(what() == "3");
    CHECK(what() == "busy");
  });
}

TEST_CASE("select_value on a closed channel returns what its handler makes of no value",
          "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> c(1);
    c.send(5);
    c.close();
    auto get = [&] {
      return nugo::select_value(nugo::on_recv(c, [](std::optional<int> v) {
        return v.has_value() ? *v : -1;
      }));
    };
    CHECK(get() == 5);  // the buffered value first, as in Go
    CHECK(get() == -1);
    CHECK(get() == -1);
  });
}

TEST_CASE("select_value returns move-only and immovable results, from mutable handlers",
          "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<std::unique_ptr<int>> c(1);
    c.send(std::make_unique<int>(8));
    int calls = 0;
    auto take = [&] {
      return nugo::select_value(
          nugo::on_recv(c, [](std::optional<std::unique_ptr<int>> v) { return std::move(*v); }),
          nugo::on_default([n = 0, &calls]() mutable {
            calls = ++n;
            return std::unique_ptr<int>();
          }));
    };
    std::unique_ptr<int> p = take();
    REQUIRE(p);
    CHECK(*p == 8);
    CHECK_FALSE(take());
    CHECK(calls == 1);

    // Neither copyable nor movable: the handler's result is the result, built once.
    struct Pinned {
      int v;
      explicit Pinned(int x) : v(x) {}
      Pinned(Pinned&&) = delete;
    };
    nugo::Chan<int> ready(1);
    ready.send(2);
    Pinned pin = nugo::select_value(nugo::on_recv(ready, [](auto v) { return Pinned(*v); }),
                                    nugo::on_default([] { return Pinned(0); }));
    CHECK(pin.v == 2);
  });
}

TEST_CASE("select_value converts the handlers' results to their common type", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> c(1);
    auto pick = [&] {
      return nugo::select_value(nugo::on_recv(c, [](std::optional<int> v) { return *v; }),
                                nugo::on_default([] { return 1L << 40; }));
    };
    static_assert(std::is_same_v<decltype(pick()), long>);
    static_assert(std::is_same_v<decltype(nugo::select_value(
                                     nugo::on_recv(c, [](auto) -> const std::string& {
                                       static const std::string s;
                                       return s;
                                     }))),
                                 std::string>);  // decayed: a copy, not a reference
    CHECK(pick() == 1L << 40);
    c.send(-3);
    CHECK(pick() == -3L);
  });
}

TEST_CASE("select still returns the position when handlers return values", "[sched][chan]") {
  nugo::run([] {
    nugo::Chan<int> c(1);
    c.send(1);
    int ran = -1;
    CHECK(nugo::select(nugo::on_default([&] { return ran = 9; }),
                       nugo::on_recv(c, [&](auto) { return ran = 5; })) == 1);
    CHECK(ran == 5);
    CHECK(nugo::select(nugo::on_default([&] { return ran = 9; }),
                       nugo::on_recv(c, [&](auto) { return ran = 5; })) == 0);
    CHECK(ran == 9);
  });
}

TEST_CASE("select's choices come from the run's seed: the same seed chooses the same, another "
          "seed otherwise", "[sched][chan]") {
  // One P, so that one M runs every goroutine and its random stream is the only one drawn from:
  // the choices are a function of the seed, not of where the M or a thread-local was allocated.
  auto choices = [](std::uint64_t seed) {
    nugo::Config cfg = nugo::Config::from_env();
    cfg.procs = 1;
    cfg.seed = seed;
    std::vector<int> picked;
    nugo::run(
        [&] {
          constexpr int kTrials = 64;
          nugo::Chan<int> a(kTrials), b(kTrials);
          for (int i = 0; i < kTrials; ++i) {
            a.send(0);
            b.send(1);
          }
          for (int i = 0; i < kTrials; ++i)
            picked.push_back(nugo::select(nugo::on_recv(a), nugo::on_recv(b)));
        },
        cfg);
    CHECK(nugo::stats().seed == seed);
    return picked;
  };
  const std::vector<int> first = choices(7);
  CHECK(choices(7) == first);
  CHECK(choices(8) != first);  // equal with probability 2^-64
}
