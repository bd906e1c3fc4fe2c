// The library as a C++ program uses it: nugo::Context after Go's context package
// tests (context_test.go: cancellation, propagation to children, deadlines), its bridge to
// std::stop_token, num_goroutines, and WaitGroup::wait on a plain thread. Run at NUGO_PROCS
// 1, 2 and 8 like every scheduler test.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nugo/nugo.hpp>
#include <mutex>
#include <shared_mutex>
#include <stop_token>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

// Waits (parked) until ctx is cancelled; true if it was within `limit`.
bool cancelled_within(const nugo::Context& ctx, std::chrono::milliseconds limit) {
  return nugo::select(nugo::on_recv(ctx.done()), nugo::on_recv(nugo::after(limit))) == 0;
}

// Waits until n goroutines exist; false after 10 s (a leak).
bool goroutines_settle_to(int n) {
  for (int i = 0; i < 10000; ++i) {
    if (nugo::num_goroutines() == n) return true;
    nugo::sleep_for(1ms);
  }
  return false;
}

}  // namespace

TEST_CASE("background is never cancelled and its done channel is never ready", "[sched][context]") {
  nugo::run([] {
    nugo::Context bg = nugo::Context::background();
    CHECK_FALSE(bg.err());
    CHECK_FALSE(bg.deadline());
    CHECK(nugo::select(nugo::on_recv(bg.done()), nugo::on_default()) == 1);
    CHECK(bg == nugo::Context());
  });
}

TEST_CASE("cancel closes done, sets err and wakes every waiter (TestWithCancel)", "[sched][context]") {
  nugo::run([] {
    auto [ctx, cancel] = nugo::with_cancel(nugo::Context::background());
    CHECK_FALSE(ctx.err());
    CHECK(nugo::select(nugo::on_recv(ctx.done()), nugo::on_default()) == 1);
    constexpr int kWaiters = 20;
    std::atomic<int> woken{0};
    nugo::WaitGroup wg;
    wg.add(kWaiters);
    for (int i = 0; i < kWaiters; ++i)
      nugo::go([&, c = ctx] {
        // Catch's assertions are not thread-safe: count, and check on the main goroutine.
        if (!c.done().recv() && c.err() == nugo::ContextErrc::canceled) ++woken;  // closed
        wg.done();
      });
    nugo::yield();
    cancel();
    cancel();  // a second call does nothing
    wg.wait();
    CHECK(woken.load() == kWaiters);
    CHECK(ctx.err() == nugo::ContextErrc::canceled);
    CHECK(ctx.err().message() == "context canceled");
  });
}

TEST_CASE("cancelling a parent cancels its whole subtree, not its parent (TestParentFinishesChild)",
          "[sched][context]") {
  nugo::run([] {
    auto [root, cancel_root] = nugo::with_cancel({});
    auto [parent, cancel_parent] = nugo::with_cancel(root);
    auto [child, cancel_child] = nugo::with_cancel(parent);
    auto [grandchild, cancel_grandchild] = nugo::with_cancel(child);
    auto [sibling, cancel_sibling] = nugo::with_cancel(root);
    cancel_parent();
    CHECK(parent.err() == nugo::ContextErrc::canceled);
    CHECK(child.err() == nugo::ContextErrc::canceled);
    CHECK(grandchild.err() == nugo::ContextErrc::canceled);
    CHECK(cancelled_within(grandchild, 1000ms));
    CHECK_FALSE(root.err());
    CHECK_FALSE(sibling.err());
    // A child of a cancelled context is born cancelled, with the parent's error.
    auto [late, cancel_late] = nugo::with_cancel(child);
    CHECK(late.err() == nugo::ContextErrc::canceled);
    cancel_root();
    CHECK(sibling.err() == nugo::ContextErrc::canceled);
    cancel_child();  // harmless after the fact
    cancel_grandchild();
    cancel_sibling();
    cancel_late();
  });
}

TEST_CASE("a child cancelled on its own leaves its parent live (TestChildFinishesFirst)",
          "[sched][context]") {
  nugo::run([] {
    auto [parent, cancel_parent] = nugo::with_cancel({});
    for (int i = 0; i < 100; ++i) {
      auto [child, cancel_child] = nugo::with_cancel(parent);
      cancel_child();
      CHECK(child.err() == nugo::ContextErrc::canceled);
    }
    {  // dropped without cancel: it unlinks itself when its last handle goes
      auto dropped = nugo::with_cancel(parent);
    }
    CHECK_FALSE(parent.err());
    cancel_parent();
  });
}

TEST_CASE("a deadline cancels with deadline_exceeded, and so does the parent's (TestDeadline)",
          "[sched][context]") {
  nugo::run([] {
    auto start = nugo::Clock::now();
    auto [ctx, cancel] = nugo::with_timeout(nugo::Context::background(), 20ms);
    REQUIRE(ctx.deadline());
    CHECK(*ctx.deadline() >= start + 20ms);
    CHECK(cancelled_within(ctx, 10000ms));
    CHECK(nugo::Clock::now() >= start + 20ms);  // not before its time
    CHECK(ctx.err() == nugo::ContextErrc::deadline_exceeded);
    CHECK(ctx.err().message() == "context deadline exceeded");
    cancel();  // after the deadline: keeps deadline_exceeded
    CHECK(ctx.err() == nugo::ContextErrc::deadline_exceeded);

    // A child inherits the earlier deadline of its parent, and its error.
    auto [parent, cancel_parent] = nugo::with_timeout(nugo::Context::background(), 20ms);
    auto [child, cancel_child] = nugo::with_timeout(parent, std::chrono::hours(1));
    auto [plain, cancel_plain] = nugo::with_cancel(parent);
    CHECK(child.deadline() == parent.deadline());
    CHECK(plain.deadline() == parent.deadline());
    // Each is waited for: the parent cancels its children one after another (in the order
    // they attached), and a goroutine woken by the first may look at the second before its turn.
    CHECK(cancelled_within(child, 10000ms));
    CHECK(child.err() == nugo::ContextErrc::deadline_exceeded);
    CHECK(cancelled_within(plain, 10000ms));
    CHECK(plain.err() == nugo::ContextErrc::deadline_exceeded);

    // A deadline already past cancels at once.
    auto [past, cancel_past] = nugo::with_deadline({}, nugo::Clock::now() - 1s);
    CHECK(past.err() == nugo::ContextErrc::deadline_exceeded);
    cancel_parent();
    cancel_child();
    cancel_plain();
    cancel_past();
  });
}

TEST_CASE("cancel before the deadline stops the timer, and many timed contexts leak nothing",
          "[sched][context]") {
  nugo::run([] {
    int before = nugo::num_goroutines();
    for (int i = 0; i < 1000; ++i) {
      auto [ctx, cancel] = nugo::with_timeout({}, std::chrono::hours(1));
      cancel();
      CHECK(ctx.err() == nugo::ContextErrc::canceled);
    }
    // Timed contexts dropped uncancelled (their timers fire later) and ones that race their
    // deadline with cancel, from several goroutines.
    nugo::WaitGroup wg;
    std::atomic<int> not_cancelled{0};
    for (int g = 0; g < 8; ++g) {
      wg.add(1);
      nugo::go([&] {
        for (int i = 0; i < 200; ++i) {
          auto [ctx, cancel] = nugo::with_timeout({}, std::chrono::microseconds(i % 50));
          if (i % 2) cancel();
          (void)ctx.done().recv();
          if (!ctx.err()) ++not_cancelled;
        }
        wg.done();
      });
    }
    wg.wait();
    CHECK(not_cancelled.load() == 0);
    CHECK(goroutines_settle_to(before));
  });
}

TEST_CASE("a worker pool stops at its context's deadline", "[sched][context]") {
  nugo::run([] {
    auto [ctx, cancel] = nugo::with_timeout({}, 50ms);
    nugo::Chan<int> jobs;
    std::atomic<long> done_jobs{0};
    nugo::WaitGroup wg;
    for (int w = 0; w < 4; ++w) {
      wg.add(1);
      nugo::go([&, ctx = ctx] {
        for (;;) {
          bool stop = nugo::select_value(
              nugo::on_recv(ctx.done(), [](auto) { return true; }),
              nugo::on_recv(jobs, [&](std::optional<int> j) {
                if (j) ++done_jobs;
                return !j;
              }));
          if (stop) break;
        }
        wg.done();
      });
    }
    for (int i = 0;; ++i) {
      if (nugo::select(nugo::on_send(jobs, i), nugo::on_recv(ctx.done())) == 1) break;
    }
    wg.wait();
    CHECK(ctx.err() == nugo::ContextErrc::deadline_exceeded);
    CHECK(done_jobs.load() > 0);
    cancel();
  });
}

TEST_CASE("with_deadline outside a running runtime is refused", "[sched][context]") {
  CHECK_THROWS_AS(nugo::with_timeout({}, 1s), std::logic_error);
  auto [ctx, cancel] = nugo::with_cancel({});  // needs no timer: fine anywhere
  cancel();
  CHECK(ctx.err() == nugo::ContextErrc::canceled);
}

TEST_CASE("a stop request cancels a context made from its token", "[sched][context][stop_token]") {
  nugo::run([] {
    std::stop_source source;
    auto [ctx, cancel] = nugo::with_stop_token({}, source.get_token());
    auto [child, cancel_child] = nugo::with_cancel(ctx);
    CHECK_FALSE(ctx.err());
    nugo::go([source]() mutable { source.request_stop(); });
    CHECK(cancelled_within(ctx, 10000ms));
    CHECK(ctx.err() == nugo::ContextErrc::canceled);
    CHECK(child.err() == nugo::ContextErrc::canceled);

    // From a plain thread (std::jthread's own token), and with the stop already requested.
    std::stop_source stopped;
    stopped.request_stop();
    auto [born_cancelled, cancel2] = nugo::with_stop_token({}, stopped.get_token());
    CHECK(born_cancelled.err() == nugo::ContextErrc::canceled);
    cancel();
    cancel_child();
    cancel2();
  });
}

// [outside]: a plain thread's real-time sleep races a goroutine's timer, which virtual time
// reaches as soon as nothing else is due (not run in virtual time, tests/CMakeLists.txt).
TEST_CASE("a stop requested by a plain thread wakes a goroutine waiting in select",
          "[sched][context][stop_token][outside]") {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.detect_deadlock = false;  // main waits for a plain thread
  nugo::run([] {
    std::stop_source source;
    std::jthread requester([source](std::stop_token) mutable {
      std::this_thread::sleep_for(5ms);
      source.request_stop();
    });
    bool stopped = false;
    int r = nugo::select(nugo::on_stop(source.get_token(), [&] { stopped = true; }),
                         nugo::on_recv(nugo::after(10s)));
    CHECK(r == 0);
    CHECK(stopped);
    nugo::blocking_syscall([&] { requester.join(); });
    // A token that can never be stopped is a case that is never ready; one already stopped
    // is ready at once, and select_value carries the handler's result.
    CHECK(nugo::select(nugo::on_stop(std::stop_token{}), nugo::on_default()) == 1);
    CHECK(nugo::select_value(nugo::on_stop(source.get_token(), [] { return 7; }),
                             nugo::on_default([] { return 0; })) == 7);
  }, cfg);
}

TEST_CASE("num_goroutines counts live goroutines, as Go's NumGoroutine", "[sched][context]") {
  CHECK(nugo::num_goroutines() == 0);  // no runtime
  nugo::run([] {
    int base = nugo::num_goroutines();
    CHECK(base == 1);  // main: each run() starts afresh
    nugo::Chan<int> gate;
    for (int i = 0; i < 50; ++i) nugo::go([gate] { (void)gate.recv(); });
    CHECK(nugo::num_goroutines() == base + 50);
    std::thread outside([&] { CHECK(nugo::num_goroutines() == base + 50); });
    nugo::blocking_syscall([&] { outside.join(); });
    gate.close();
    CHECK(goroutines_settle_to(base));
  });
}

TEST_CASE("WaitGroup::wait on a plain thread returns at zero and waits for goroutines",
          "[sched][waitgroup]") {
  nugo::WaitGroup idle;
  idle.wait();  // zero: returns at once, as Go's
  idle.add(1);
  idle.done();
  idle.wait();
  nugo::run([] {
    nugo::WaitGroup wg;
    std::atomic<int> finished{0};
    wg.add(10);
    std::thread waiter([&] {
      wg.wait();
      CHECK(finished.load() == 10);
    });
    for (int i = 0; i < 10; ++i)
      nugo::go([&] {
        nugo::sleep_for(1ms);
        ++finished;
        wg.done();
      });
    nugo::blocking_syscall([&] { waiter.join(); });
  });
}

TEST_CASE("channels, contexts and stop tokens that abandoned goroutines waited on still work "
          "after run returns", "[sched][context]") {
  // Goroutines still parked when main returns are abandoned and their stacks unmapped. Each
  // of the calls after run() below used to walk the waiters' queues into that memory.
  nugo::Chan<int> empty, unbuffered_send, buffered(1);
  nugo::Chan<nugo::Signal> stopped;
  nugo::WithCancel made = nugo::with_cancel({});  // no structured binding: the lambda below
  nugo::Context ctx = made.ctx;                   // captures it, which clang 14 refuses
  nugo::CancelFunc cancel = made.cancel;
  std::stop_source source;
  // What on_stop does, with the registration held here rather than in an abandoned frame
  // (which would keep it, and LeakSanitizer would say so).
  std::stop_callback close_on_stop(source.get_token(), [stopped] { stopped.close(); });
  nugo::run([&] {
    std::atomic<int> parking{0};
    nugo::go([&, c = empty] { ++parking; (void)c.recv(); });
    nugo::go([&, c = unbuffered_send] { ++parking; c.send(1); });
    nugo::go([&, c = ctx] { ++parking; (void)c.done().recv(); });
    nugo::go([&, s = stopped, b = buffered] {
      ++parking;
      nugo::select(nugo::on_recv(s), nugo::on_recv(b));
    });
    while (parking.load() < 4) nugo::yield();
    nugo::sleep_for(10ms);  // and let them park (were one still running, it is abandoned
                            // runnable, and there is just less to check)
  });
  empty.close();
  CHECK_FALSE(unbuffered_send.try_recv().ready);
  cancel();
  CHECK(ctx.err() == nugo::ContextErrc::canceled);
  source.request_stop();
  buffered.close();
  CHECK(buffered.try_recv().ready);
}

TEST_CASE("nugo::Mutex and RWMutex work with the standard lock wrappers", "[sched][sync]") {
  nugo::run([] {
    nugo::Mutex a, b;
    nugo::RWMutex rw;
    long counter = 0;
    nugo::WaitGroup wg;
    for (int g = 0; g < 8; ++g) {
      wg.add(1);
      nugo::go([&] {
        for (int i = 0; i < 1000; ++i) {
          if (i % 3 == 0) {
            std::lock_guard lock(a);
            ++counter;
          } else if (i % 3 == 1) {
            std::scoped_lock both(a, b);  // std::lock: try_lock and back-off, no deadlock
            ++counter;
          } else {
            std::unique_lock lock(a, std::defer_lock);
            lock.lock();
            ++counter;
          }
          if (i % 100 == 0) {
            std::shared_lock reading(rw);
            nugo::yield();
          }
        }
        wg.done();
      });
    }
    wg.wait();
    CHECK(counter == 8000);
    {
      std::unique_lock held(a);
      std::unique_lock attempt(a, std::try_to_lock);
      CHECK_FALSE(attempt.owns_lock());
    }
    std::lock_guard writing(rw);
    nugo::Cond cond;
    bool ready = false;
    nugo::go([&] {
      std::lock_guard lock(b);
      ready = true;
      cond.signal();
    });
    std::unique_lock lock(b);
    while (!ready) cond.wait(lock);
    CHECK(ready);
  });
}

TEST_CASE("a select readied just as main returns leaves no sudog behind on its other channels",
          "[sched][context]") {
  // The worker's select fires on `jobs` as main returns: readied, it may never run its third
  // pass (which takes its sudog off ctx.done()), and is abandoned runnable. Cancelling the
  // context after run() must not find that sudog, on a stack that is gone.
  for (int round = 0; round < 50; ++round) {
    nugo::WithCancel made = nugo::with_cancel({});
    nugo::Context ctx = made.ctx;
    nugo::Chan<int> jobs;
    nugo::run([&] {
      std::atomic<bool> selecting{false};
      nugo::go([&, c = ctx, j = jobs] {
        selecting = true;
        nugo::select(nugo::on_recv(c.done()), nugo::on_recv(j));
      });
      while (!selecting.load()) nugo::yield();
      nugo::sleep_for(std::chrono::microseconds(round % 5 * 100));
      jobs.send(round);  // fires the select (or waits until it is parked)
    });
    made.cancel();
    CHECK(ctx.err() == nugo::ContextErrc::canceled);
  }
}
