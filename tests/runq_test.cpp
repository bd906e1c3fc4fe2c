// White-box tests of the local run queue and the steal order, after Go's
// TestSchedLocalQueue, TestSchedLocalQueueSteal, TestSchedLocalQueueEmpty, TestStealOrder.
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "sched.hpp"

using namespace nugo::detail;

namespace {

// A P with a domain, as runqputslow needs one; no runtime is running.
struct TestP {
  Domain domain;
  P p;
  TestP() {
    p.domain = &domain;
    domain.ps.push_back(&p);
  }
};

}  // namespace

// Library code finds a goroutine's GHead without seeing G's layout (link.hpp, head()).
TEST_CASE("head() finds the GHead of a G whose layout library code does not see", "[runq]") {
  std::vector<G> gs(3);
  for (G& g : gs) {
    CHECK(head(&g) == static_cast<GHead*>(&g));
    head(&g)->locks = 7;
    CHECK(g.locks == 7);
  }
}

TEST_CASE("local run queue is FIFO at every fill level below its capacity", "[runq]") {
  TestP tp;
  std::vector<G> gs(kRunqSize);
  for (std::uint32_t i = 0; i < kRunqSize; ++i) {
    REQUIRE(runqget(&tp.p).gp == nullptr);
    for (std::uint32_t j = 0; j < i; ++j) runqput(&tp.p, &gs[j], false);
    for (std::uint32_t j = 0; j < i; ++j) {
      auto r = runqget(&tp.p);
      REQUIRE(r.gp == &gs[j]);
      REQUIRE_FALSE(r.inherit_time);
    }
    REQUIRE(runqget(&tp.p).gp == nullptr);
  }
}

TEST_CASE("runnext runs first and inherits the time slice, and the old runnext goes to the tail",
          "[runq]") {
  TestP tp;
  G a, b, c;
  runqput(&tp.p, &a, false);
  runqput(&tp.p, &b, true);
  runqput(&tp.p, &c, true);  // kicks b to the ring, behind a
  auto r = runqget(&tp.p);
  CHECK(r.gp == &c);
  CHECK(r.inherit_time);
  CHECK(runqget(&tp.p).gp == &a);
  CHECK(runqget(&tp.p).gp == &b);
  CHECK(runqget(&tp.p).gp == nullptr);
}

TEST_CASE("a steal takes half, and every G is seen exactly once", "[runq]") {
  TestP p1, p2;
  std::vector<G> gs(kRunqSize);
  for (std::uint32_t i = 0; i < kRunqSize; ++i) {
    std::vector<int> seen(i, 0);
    auto see = [&](G* gp) { ++seen[gp - gs.data()]; };
    for (std::uint32_t j = 0; j < i; ++j) runqput(&p1.p, &gs[j], false);
    std::uint32_t stolen = 0;
    if (G* gp = runqsteal(&p2.p, &p1.p, true)) {
      ++stolen;
      see(gp);
    }
    while (G* gp = runqget(&p2.p).gp) {
      ++stolen;
      see(gp);
    }
    while (G* gp = runqget(&p1.p).gp) see(gp);
    for (std::uint32_t j = 0; j < i; ++j) REQUIRE(seen[j] == 1);
    REQUIRE((stolen == i / 2 || stolen == i / 2 + 1));
  }
}

TEST_CASE("overflow moves half the ring plus the new G to the global queue in one batch",
          "[runq]") {
  TestP tp;
  std::vector<G> gs(kRunqSize + 1);
  for (auto& g : gs) runqput(&tp.p, &g, false);
  CHECK(runqlen(&tp.p) == kRunqSize / 2);
  CHECK(tp.domain.runqsize.load() == static_cast<int>(kRunqSize / 2 + 1));
  // Order is kept: the oldest half went first, then the new G.
  std::vector<G*> global;
  for (std::uint32_t i = 0; i < tp.domain.runq.size(); ++i) global.push_back(tp.domain.runq[i].gp());
  REQUIRE(global.size() == kRunqSize / 2 + 1);
  for (std::uint32_t i = 0; i < kRunqSize / 2; ++i) CHECK(global[i] == &gs[i]);
  CHECK(global.back() == &gs[kRunqSize]);
  CHECK(runqget(&tp.p).gp == &gs[kRunqSize / 2]);
}

TEST_CASE("runqempty never reports empty while runnext and the ring race", "[runq]") {
  // One thread moves a G from runnext to the ring and back while another asks runqempty;
  // the queue always holds at least one G, so "empty" is always wrong.
  TestP tp;
  G gs[2];
  constexpr int kIters = 20000;
  std::atomic<int> phase{0};
  std::atomic<bool> wrong{false};
  std::thread checker([&] {
    for (int i = 0; i < kIters; ++i) {
      while (phase.load() != 2 * i + 1) {}
      if (runqempty(&tp.p)) wrong = true;
      phase.store(2 * i + 2);
    }
  });
  for (int i = 0; i < kIters; ++i) {
    bool next0 = (i & 1) == 0, next1 = (i & 2) == 0;
    runqput(&tp.p, &gs[0], next0);
    phase.store(2 * i + 1);
    runqput(&tp.p, &gs[1], next1);
    runqget(&tp.p);
    while (phase.load() != 2 * i + 2) {}
    runqget(&tp.p);
  }
  checker.join();
  CHECK_FALSE(wrong.load());
  CHECK(runqempty(&tp.p));
}

TEST_CASE("every steal enumeration is a permutation, for 1 to 64 Ps", "[runq]") {
  StealOrder order;
  for (std::uint32_t procs = 1; procs <= 64; ++procs) {
    order.reset(procs);
    for (std::uint32_t rnd = 0; rnd < procs * 70; rnd += 7) {
      std::vector<bool> visited(procs, false);
      auto e = order.start(rnd);
      for (std::uint32_t k = 0; k < procs; ++k) {
        REQUIRE_FALSE(e.done());
        REQUIRE_FALSE(visited[e.position()]);
        visited[e.position()] = true;
        e.next();
      }
      REQUIRE(e.done());
    }
  }
}

TEST_CASE("concurrent thieves and the owner lose and duplicate nothing", "[runq]") {
  TestP owner, t1, t2;
  constexpr int kN = 200000;
  std::vector<G> gs(kN);
  std::vector<std::atomic<int>> seen(kN);
  std::atomic<bool> done{false};
  auto thief = [&](TestP& me) {
    while (!done.load()) {
      if (G* gp = runqsteal(&me.p, &owner.p, false)) {
        ++seen[gp - gs.data()];
        while (G* more = runqget(&me.p).gp) ++seen[more - gs.data()];
      }
    }
  };
  std::thread a(thief, std::ref(t1)), b(thief, std::ref(t2));
  for (int i = 0; i < kN; ++i) {
    runqput(&owner.p, &gs[i], i % 3 == 0);
    if (i % 5 == 0)
      if (G* gp = runqget(&owner.p).gp) ++seen[gp - gs.data()];
  }
  while (G* gp = runqget(&owner.p).gp) ++seen[gp - gs.data()];
  done = true;
  a.join();
  b.join();
  for (std::uint32_t i = 0; i < owner.domain.runq.size(); ++i)
    ++seen[owner.domain.runq[i].gp() - gs.data()];
  for (int i = 0; i < kN; ++i) REQUIRE(seen[i].load() == 1);
}

TEST_CASE("the global queue's ring keeps FIFO order through wrap-around, growth and shrinking",
          "[runq]") {
  Domain::EntryRing ring;
  std::vector<G> gs(10000);
  std::uint32_t next_in = 0, next_out = 0;
  auto put = [&](std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i, ++next_in)
      ring.push_back({&gs[next_in % gs.size()], static_cast<int>(next_in % 7) - 1});
  };
  auto take = [&](std::uint32_t n) {
    REQUIRE(ring.size() >= n);
    for (std::uint32_t i = 0; i < n; ++i) {
      CHECK(ring[i].gp() == &gs[(next_out + i) % gs.size()]);
      CHECK(ring[i].node() == static_cast<int>((next_out + i) % 7) - 1);
    }
    ring.pop_front(n);
    next_out += n;
  };
  // Around the first ring many times, never full.
  for (int round = 0; round < 100; ++round) {
    put(200);
    take(150);
    take(50);
  }
  CHECK(ring.empty());
  // Half full, then past several doublings with the head in the middle of the ring.
  put(100);
  take(60);
  put(9000);
  CHECK(ring.size() == 9040);
  CHECK(ring.front().gp() == &gs[next_out % gs.size()]);
  take(4000);
  put(500);
  take(5540);
  CHECK(ring.empty());
  // Drained after a burst: back to the first size, and still in order.
  put(300);
  take(1);
  take(299);
  CHECK(ring.empty());
  CHECK(next_in == next_out);
}
