// Virtual time (core/src/vtime/README.md), in the virtual-time build only: the
// clock, timers and sleeps move in virtual time; many virtual CPUs share this machine's; a
// blocking system call is charged its real time; the statistics say which clock they are on.
// Bounds are generous and no assertion is on real time beyond "much less than the virtual time
// it stands for": the clock under test is virtual, but it is made of this machine's CPU time.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <nugo/nugo.hpp>
#include <vector>

using namespace std::chrono_literals;

namespace {

nugo::Config virtual_config(int procs, const char* topology = nullptr) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.virtual_time.on = true;
  cfg.procs = procs;
  if (topology) cfg.topology = topology;
  return cfg;
}

long fib(int n) {
  if (n < 2) return n;
  long a = 0;
  nugo::WaitGroup wg;
  wg.add(1);
  nugo::go([&] {
    a = fib(n - 1);
    wg.done();
  });
  long b = fib(n - 2);
  wg.wait();
  return a + b;
}

// fib(n)'s time on nugo::Clock (virtual or real, as cfg says): the least of `repeats` runs.
std::chrono::nanoseconds time_fib(const nugo::Config& cfg, int n, int repeats) {
  auto best = std::chrono::nanoseconds::max();
  for (int r = 0; r < repeats; ++r)
    nugo::run(
        [&] {
          auto t0 = nugo::Clock::now();
          CHECK(fib(n) > 0);
          best = std::min(best, std::chrono::nanoseconds(nugo::Clock::now() - t0));
        },
        cfg);
  return best;
}

}  // namespace

TEST_CASE("an hour of virtual sleep takes the clock an hour ahead, in seconds of real time",
          "[virtual]") {
  auto real0 = std::chrono::steady_clock::now();
  std::chrono::nanoseconds slept{};
  nugo::run(
      [&] {
        auto t0 = nugo::Clock::now();
        nugo::sleep_for(1h);
        slept = nugo::Clock::now() - t0;
      },
      virtual_config(2));
  auto real = std::chrono::steady_clock::now() - real0;
  CHECK(slept >= 1h);
  CHECK(slept < 1h + 100ms);  // it woke at its timer, give or take a quantum and a wake-up
  CHECK(real < 60s);
  nugo::Stats s = nugo::stats();
  CHECK(s.clock.virtual_time);
  CHECK(s.clock.elapsed_ns >= std::chrono::nanoseconds(1h).count());
}

TEST_CASE("sleeping goroutines wake in the order of their deadlines, in virtual time",
          "[virtual]") {
  // In real time on a loaded 2-CPU machine deadlines 5 ms apart can come out of order; in
  // virtual time the timers fire by their deadlines. (Not whatever the machine does: a thread
  // that the host deschedules while it holds the turn and reads the clock is charged that
  // time, so the tests of this binary run alone, RUN_SERIAL.)
  std::vector<int> order;
  std::mutex mu;
  nugo::run(
      [&] {
        nugo::WaitGroup wg;
        for (int i = 63; i >= 0; --i) {
          wg.add(1);
          nugo::go([&, i] {
            nugo::sleep_for(std::chrono::milliseconds(10 + 5 * i));
            std::lock_guard lock(mu);
            order.push_back(i);
            wg.done();
          });
        }
        wg.wait();
      },
      virtual_config(8));
  REQUIRE(order.size() == 64);
  CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("16 virtual CPUs run fork-join in less virtual time than one", "[virtual]") {
  const char* machine = "synthetic:pack:2 numa:1 core:8 pu:1";
  auto one = time_fib(virtual_config(1, machine), 22, 3);
  auto sixteen = time_fib(virtual_config(16, machine), 22, 3);
  INFO("fib(22): " << one.count() / 1000 << " us on 1 virtual CPU, " << sixteen.count() / 1000
                   << " us on 16");
  CHECK(sixteen * 2 < one);  // measured: 5-7x; a machine folded onto 2 CPUs without virtual
                             // time shows at most 2x
  nugo::Stats s = nugo::stats();
  CHECK(s.procs == 16);
  CHECK(s.clock.threads >= 3);  // more than the two Ms a 2-CPU run would need
}

TEST_CASE("at 1 and 2 virtual CPUs on this machine, fib's virtual time is its real time, "
          "within a factor of two", "[virtual]") {
  // The validation's first item at a small size (scripts/pipeline/virtual.py measures it at the
  // workloads' sizes, with intervals): the same process, the same machine, the clock switched.
  for (int procs : {1, 2}) {
    nugo::Config real_cfg = nugo::Config::from_env();
    real_cfg.procs = procs;
    auto real = time_fib(real_cfg, 23, 5);
    nugo::Config virt_cfg = virtual_config(procs);
    virt_cfg.virtual_time.line = virt_cfg.virtual_time.remote_line = 0ns;  // the clock alone
    auto virt = time_fib(virt_cfg, 23, 5);
    INFO(procs << " P: real " << real.count() / 1000 << " us, virtual " << virt.count() / 1000
               << " us");
    CHECK(virt < real * 2);
    CHECK(real < virt * 2);
  }
}

TEST_CASE("a blocking system call is charged the real time it took", "[virtual]") {
  std::chrono::nanoseconds took{};
  nugo::run(
      [&] {
        auto t0 = nugo::Clock::now();
        nugo::blocking_syscall([] { ::usleep(20'000); });
        took = nugo::Clock::now() - t0;
      },
      virtual_config(2));
  CHECK(took >= 20ms);
}

TEST_CASE("the statistics of a virtual run say so, with its parameters, and count exactly",
          "[virtual]") {
  nugo::Config cfg = virtual_config(4);
  cfg.virtual_time.quantum = 100us;
  cfg.virtual_time.wake = 3us;
  constexpr int kGoroutines = 500;
  nugo::run(
      [] {
        nugo::WaitGroup wg;
        for (int i = 0; i < kGoroutines; ++i) {
          wg.add(1);
          nugo::go([&] {
            nugo::yield();
            wg.done();
          });
        }
        wg.wait();
      },
      cfg);
  nugo::Stats s = nugo::stats();
  CHECK(s.clock.virtual_time);
  CHECK(s.clock.quantum_ns == 100'000);
  CHECK(s.clock.wake_ns == 3'000);
  CHECK(s.clock.elapsed_ns > 0);
  CHECK(s.totals.created + s.created_foreign == kGoroutines + 1);
  std::string json = nugo::to_json(s);
  CHECK(json.find("\"clock\": {\"kind\": \"virtual\", \"quantum_ns\": 100000") != std::string::npos);
}

TEST_CASE("the cost model charges a cache line by distance for every steal, and nothing when off",
          "[virtual]") {
  // Two nodes of 4 CPUs; a line within a node costs nothing, one across 10 us, so that the
  // steal charges are exact multiples of it: (2 + ceil(n / 8)) lines per steal across nodes.
  nugo::Config cfg = virtual_config(8, "synthetic:pack:2 numa:1 core:4 pu:1");
  cfg.mode = nugo::Mode::flat;  // Go's stealing, which crosses nodes freely
  cfg.virtual_time.line = 0ns;
  cfg.virtual_time.remote_line = 10us;
  time_fib(cfg, 20, 1);
  nugo::Stats s = nugo::stats();
  INFO(nugo::to_json(s));
  CHECK(s.clock.line_ns == 0);
  CHECK(s.clock.remote_line_ns == 10'000);
  CHECK(s.clock.charged_steal_ns % 10'000 == 0);
  CHECK(s.clock.charged_steal_ns >= static_cast<std::int64_t>(s.totals.steals_remote) * 30'000);
  CHECK((s.clock.charged_steal_ns == 0) == (s.totals.steals_remote == 0));
  CHECK(s.clock.charged_migrate_ns % 40'000 == 0);  // four lines a goroutine
  // A goroutine moved across nodes and back before it ran is not charged, and one readied
  // on another node is: moves and charges need not match one to one. But a thief runs what
  // it stole at once, and in fib that goroutine was almost always made on its victim (only one
  // stolen twice before it ran could have last run on the thief's node): of several remote
  // steals, some are charged.
  if (s.totals.steals_remote >= 4) CHECK(s.clock.charged_migrate_ns > 0);
  CHECK(s.clock.charged_program_ns == 0);

  cfg.virtual_time.remote_line = 0ns;  // costs=off
  time_fib(cfg, 20, 1);
  s = nugo::stats();
  CHECK(s.clock.charged_steal_ns + s.clock.charged_queue_ns + s.clock.charged_migrate_ns +
            s.clock.charged_wake_ns == 0);
}

TEST_CASE("charge_virtual_time adds a program's modelled cost to its virtual CPU's clock",
          "[virtual]") {
  bool charged = false;
  std::chrono::nanoseconds took{};
  nugo::run(
      [&] {
        auto t0 = nugo::Clock::now();
        charged = nugo::charge_virtual_time(3ms);
        took = nugo::Clock::now() - t0;
      },
      virtual_config(2));
  CHECK(charged);
  CHECK(took >= 3ms);
  CHECK(nugo::stats().clock.charged_program_ns == 3'000'000);
  // Outside a virtual run nothing is charged: the caller spends the time itself.
  CHECK_FALSE(nugo::charge_virtual_time(3ms));
}

TEST_CASE("a run without virtual time in the virtual-time build is on the real clock",
          "[virtual]") {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.virtual_time.on = false;
  cfg.procs = 2;
  std::chrono::nanoseconds slept{};
  auto real0 = std::chrono::steady_clock::now();
  nugo::run(
      [&] {
        auto t0 = nugo::Clock::now();
        nugo::sleep_for(20ms);
        slept = nugo::Clock::now() - t0;
      },
      cfg);
  CHECK(slept >= 20ms);
  CHECK(std::chrono::steady_clock::now() - real0 >= 20ms);
  nugo::Stats s = nugo::stats();
  CHECK_FALSE(s.clock.virtual_time);
  CHECK(nugo::to_json(s).find("\"clock\": {\"kind\": \"real\"}") != std::string::npos);
}

TEST_CASE("no thread of a virtual run gets a turn before the runtime has made its main goroutine "
          "and first M", "[virtual]") {
  // sysmon is made first. Granted the turn at once, it ran alone, in no real time, for as long
  // as run()'s thread took to make the main goroutine and the M: where sysmon stood in its
  // cycle when the M arrived depended on that real time. With the turn opened once both exist,
  // the first turn is granted among both (sysmon, the older, first), at one clock.
  for (int run = 0; run < 3; ++run) {
    nugo::run([] {}, virtual_config(2));
    INFO("run " << run);
    CHECK(nugo::stats().clock.first_turn_threads == 2);
  }
}

TEST_CASE("the statistics of a virtual run end at main's return, and carry the seed and the "
          "schedule's fingerprints", "[virtual]") {
  nugo::Config cfg = virtual_config(2);
  cfg.seed = 12345;
  nugo::run([&] { CHECK(fib(12) > 0); }, cfg);
  nugo::Stats s = nugo::stats();
  CHECK(s.seed == 12345);
  CHECK(s.clock.fingerprint != 0);
  CHECK(s.clock.order_fingerprint != 0);
  const std::string json = nugo::to_json(s);
  CHECK(json.find("\"seed\": 12345") != std::string::npos);
  CHECK(json.find("\"fingerprint\": \"") != std::string::npos);
  // The teardown is not counted: once the Ms have left, sysmon sleeps alone, each of its waits
  // timing out in no real time until run()'s thread ends it (up to 2,000 of them here). A run
  // whose main goroutine returns at once reports only its start: a turn or three, and a wait
  // or two.
  for (int run = 0; run < 3; ++run) {
    nugo::run([] {}, cfg);
    s = nugo::stats();
    INFO(nugo::to_json(s));
    CHECK(s.clock.turns <= 3);
    CHECK(s.clock.timed_out <= 5);
  }
}

TEST_CASE("with one seed, the main goroutine of fib on 16 virtual CPUs of the 2-socket shape "
          "starts on the same node, wherever run()'s thread is", "[virtual]") {
  nugo::Config cfg = virtual_config(16, "xml:" NUGO_MACHINES_DIR "/xeon-2socket-2node-32pu.xml");
  cfg.mode = nugo::Mode::numa;
  cfg.seed = 3;
  const nugo::topo::Topology t = nugo::topo::Topology::load(cfg.topology);
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  std::vector<int> homes;
  for (int node = 0; node < 2; ++node) {
    // run()'s thread on the real CPU that this node's first PU folds onto.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(t.real_cpu(t.nodes[node].pus.front()), &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    int home = -2;
    nugo::run(
        [&] {
          home = nugo::this_g::node();
          CHECK(fib(18) > 0);
        },
        cfg);
    homes.push_back(home);
    CHECK(nugo::stats().seed == 3);
  }
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK(homes == std::vector<int>{t.nodes[0].os_index, t.nodes[0].os_index});
}

TEST_CASE("the cost model's remote charges add what it says on a program whose remote traffic is "
          "known by construction", "[virtual]") {
  // Two nodes of two CPUs; a line within a node costs nothing, across 10 us. The main goroutine
  // (home: node 0) starts kGoroutines goroutines on node 1 (go_on: its pinned queue, which only
  // node 1's Ps take) and waits for them all. Each was made on a P of node 0 and runs once, on a
  // P of node 1: one pinned take from node 0's P (kPinnedTakeLines) and one move of its state
  // (kMovedLines), each line across nodes. Only the main goroutine may move besides (readied by
  // the last of them, on node 1): one move more, at most one more back.
  nugo::Config cfg = virtual_config(4, "synthetic:pack:2 numa:1 core:2 pu:1");
  cfg.mode = nugo::Mode::numa;
  cfg.virtual_time.line = 0ns;
  cfg.virtual_time.remote_line = 10us;
  constexpr std::int64_t kGoroutines = 200, kLine = 10'000;
  constexpr std::int64_t kPinnedTakeLines = 1, kMovedLines = 4;  // vtime/costs.hpp
  std::atomic<int> on_node1{0};
  nugo::run(
      [&] {
        nugo::WaitGroup wg;
        for (int i = 0; i < kGoroutines; ++i) {
          wg.add(1);
          nugo::go_on(1, [&] {
            if (nugo::this_g::node() == 1) on_node1.fetch_add(1);
            wg.done();
          });
        }
        wg.wait();
      },
      cfg);
  const nugo::Stats s = nugo::stats();
  INFO(nugo::to_json(s));
  REQUIRE(on_node1.load() == kGoroutines);
  CHECK(s.clock.charged_migrate_ns % (kMovedLines * kLine) == 0);
  CHECK(s.clock.charged_migrate_ns >= kGoroutines * kMovedLines * kLine);
  CHECK(s.clock.charged_migrate_ns <= (kGoroutines + 2) * kMovedLines * kLine);
  // The pinned takes: one line each, from node 0; a global queue's takes add theirs on top.
  CHECK(s.clock.charged_queue_ns >= kGoroutines * kPinnedTakeLines * kLine);
}
