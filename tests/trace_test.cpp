// The execution tracer's interface (nugo/trace.hpp): start and stop from goroutines while the
// scheduler runs, the errors, the cap, discard. The whole-run traces are checked against the
// statistics by scripts/check/trace_check.py (tests/CMakeLists.txt); here the files get the checks
// a C++ test can make without a JSON parser: the frame, and a begin for every end; and the
// temporary file's records on their own.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nugo/nugo.hpp>
#include <nugo/trace.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "trace_file.hpp"  // the records, tested without a runtime at the end

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nugo-trace-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The frame of a finished trace, and as many slice ends as begins.
void check_trace_file(const std::string& path) {
  std::string text = slurp(path);
  INFO(path);
  REQUIRE(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0) == 0);
  REQUIRE(text.size() > 3);
  CHECK(text.substr(text.size() - 3) == "}}\n");
  CHECK(count(text, "\"generator\":\"nugo\"") == 1);
  CHECK(count(text, "\"ph\":\"B\"") == count(text, "\"ph\":\"E\""));
}

nugo::Config procs(int n) {
  nugo::Config cfg;
  cfg.procs = n;
  cfg.mode = nugo::Mode::flat;
  return cfg;
}

// Goroutines that keep the scheduler busy (channels, creation, yields) until stop is set.
void churn(std::atomic<bool>& stop, nugo::WaitGroup& wg, int workers) {
  wg.add(workers);
  for (int w = 0; w < workers; ++w)
    nugo::go([&stop, &wg] {
      {  // c is gone before wg.done(): main may return and abandon this goroutine right after
        nugo::Chan<int> c(1);
        while (!stop.load(std::memory_order_relaxed)) {
          nugo::WaitGroup inner;
          inner.add(1);
          nugo::go([&inner, c]() mutable {
            c.send(1);
            inner.done();
          });
          c.recv();
          inner.wait();
          nugo::yield();
        }
      }
      wg.done();
    });
}

}  // namespace

TEST_CASE("trace::start and stop record part of a run while goroutines run", "[trace]") {
  const std::string first = temp_path("first.json"), second = temp_path("second.json");
  nugo::run([&] {
    std::atomic<bool> stop{false};
    nugo::WaitGroup wg;
    churn(stop, wg, 3);
    CHECK_FALSE(nugo::trace::active());
    CHECK_FALSE(nugo::trace::stop());  // nothing to stop
    nugo::trace::start(first);
    CHECK(nugo::trace::active());
    nugo::sleep_for(std::chrono::milliseconds(20));
    CHECK(nugo::trace::stop());
    CHECK_FALSE(nugo::trace::active());
    CHECK_FALSE(nugo::trace::stop());
    nugo::trace::start(second);  // a second trace in the same run
    nugo::sleep_for(std::chrono::milliseconds(10));
    CHECK(nugo::trace::stop());
    stop = true;
    wg.wait();
  }, procs(2));
  check_trace_file(first);
  check_trace_file(second);
  CHECK(count(slurp(first), "\"ph\":\"B\"") > 10);  // it saw the goroutines run
  fs::remove(first);
  fs::remove(second);
}

// Stop takes every M's buffer while the Ms record (trace.cpp, "Stopping while Ms run"): many
// short traces, each stopped in the middle of the churn, must each come out whole.
TEST_CASE("traces stopped again and again in the middle of scheduling come out whole", "[trace]") {
  const std::string path = temp_path("repeat.json");
  nugo::run([&] {
    std::atomic<bool> stop{false};
    nugo::WaitGroup wg;
    churn(stop, wg, 4);
    for (int i = 0; i < 20; ++i) {
      nugo::trace::start(path);
      nugo::sleep_for(std::chrono::milliseconds(1));
      REQUIRE(nugo::trace::stop());
      check_trace_file(path);
    }
    stop = true;
    wg.wait();
  }, procs(2));
  fs::remove(path);
}

TEST_CASE("trace::start refuses a second trace, a path it cannot write, a tiny cap, and calls "
          "outside run", "[trace]") {
  CHECK_THROWS_AS(nugo::trace::start(temp_path("outside.json")), std::logic_error);
  CHECK_THROWS_AS(nugo::trace::stop(), std::logic_error);
  const std::string path = temp_path("refuse.json");
  nugo::run([&] {
    // Busy goroutines take the P that each call below hands off: the caller comes back on
    // another thread, which is what the last check is about.
    std::atomic<bool> stop{false};
    nugo::WaitGroup busy;
    busy.add(4);
    for (int i = 0; i < 4; ++i)
      nugo::go([&] {
        while (!stop.load(std::memory_order_relaxed)) nugo::yield();
        busy.done();
      });
    nugo::trace::start(path);
    CHECK_THROWS_AS(nugo::trace::start(temp_path("other.json")), std::logic_error);
    CHECK(nugo::trace::stop());
    try {
      nugo::trace::start("/nonexistent-dir/trace.json");
      FAIL("start accepted a path in a directory that does not exist");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("/nonexistent-dir/trace.json") != std::string::npos);
    }
    CHECK_FALSE(nugo::trace::active());
    CHECK_THROWS_AS(nugo::trace::start(path, 1000), std::invalid_argument);
    CHECK_FALSE(nugo::trace::active());
    // The errors come out of a blocking system call, after which the goroutine may run on
    // another thread: each exception must still be thrown and caught on one thread, or the
    // threads' counts of exceptions in flight go wrong for every goroutine after.
    std::atomic<int> wrong{0};
    nugo::WaitGroup wg;
    wg.add(20);
    for (int i = 0; i < 20; ++i)
      nugo::go([&] {
        for (int k = 0; k < 5; ++k) {
          if (std::uncaught_exceptions() != 0) ++wrong;
          nugo::yield();
        }
        wg.done();
      });
    wg.wait();
    CHECK(wrong.load() == 0);
    CHECK(std::uncaught_exceptions() == 0);
    stop = true;
    busy.wait();
  }, procs(2));
  check_trace_file(path);
  fs::remove(path);
}

TEST_CASE("trace::discard stops recording and leaves no file", "[trace]") {
  const std::string path = temp_path("discard.json");
  nugo::run([&] {
    nugo::trace::start(path);
    CHECK(fs::exists(path));
    nugo::go([] {});
    nugo::yield();
    CHECK(nugo::trace::discard());
    CHECK_FALSE(nugo::trace::discard());
  }, procs(1));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("a trace stops at NUGO_TRACE_MAX with a message, and the file stays whole and below it",
          "[trace]") {
  const std::string path = temp_path("capped.json");
  ChildResult r = run_child_process("NUGO_PROCS=2 NUGO_TRACE_MAX=64k NUGO_TRACE=" + path,
                                    NUGO_TEST_CHILD " trace-workload");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("NUGO_TRACE_MAX") != std::string::npos);
  check_trace_file(path);
  CHECK(fs::file_size(path) <= 64 * 1024);
  CHECK(count(slurp(path), "\"truncated\":true") == 1);
  fs::remove(path);
}

TEST_CASE("NUGO_TRACE and NUGO_TRACE_MAX: bad values are named, with exit 2", "[trace]") {
  ChildResult r = run_child_process("NUGO_TRACE=/nonexistent-dir/t.json", NUGO_TEST_CHILD " run");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("NUGO_TRACE=\"/nonexistent-dir/t.json\"") != std::string::npos);
  CHECK(r.output.find("ran") == std::string::npos);  // refused before anything ran

  for (const char* bad : {"abc", "1k", "-5"}) {
    ChildResult m = run_child_process(std::string("NUGO_TRACE_MAX=") + bad, NUGO_TEST_CHILD " run");
    INFO(bad << ": " << m.output);
    CHECK(m.exit_code == 2);
    CHECK(m.output.find("NUGO_TRACE_MAX") != std::string::npos);
  }
}

// ---- the temporary file's records (obs/trace_file.hpp), without a runtime ----


namespace {

using nugo::detail::ChunkReader;
using nugo::detail::Ev;
using nugo::detail::Event;
using nugo::detail::TraceBuf;

bool same(const Event& a, const Event& b) {
  return a.ts == b.ts && a.kind == b.kind && a.b == b.b && a.p == b.p && a.x == b.x &&
         a.g == b.g && a.arg == b.arg;
}

}  // namespace

TEST_CASE("trace records: short and long forms come back as written, in one or two slots",
          "[trace]") {
  auto buf = std::make_unique<TraceBuf>();
  const std::uint64_t t0 = 0x1234'5678'9abcull;
  const std::vector<Event> written = {
      {t0, Ev::go_start, 0, 3, 7, 42, 0},                          // short
      {t0, Ev::go_stop, 4, 3, 0xffff, (1ll << 48) - 1, 0},          // short, at its limits
      {t0 + 0xffffffffull, Ev::m_park, 0, -1, 0, 0, 0},             // short: no P, the widest delta
      {t0 + 0xffffffffull, Ev::go_stop, 0, 2, 0, -5, 0},           // a negative g: long
      {t0 + 0x100000005ull, Ev::go_create, 0, -1, 2, 43, 42},      // an arg: long
      {t0 + 0x100000006ull, Ev::go_start, 0, 0, 0x10000, 43, 0},   // x too wide: long
      {t0 + 0x100000007ull, Ev::go_stop, 4, 0, 0, 1ll << 48, 0},    // g too wide: long
      {t0 + 0x200000007ull, Ev::m_park, 0, -1, 0, 0, 0},           // a delta of 2^32: long
      {t0 + 0x200000008ull, Ev::poll, 2, -1, 0xffffffff, 0, ~0ull}, // every bit of x and arg
  };
  const std::uint32_t slots[] = {1, 1, 1, 2, 2, 2, 2, 2, 2};
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < written.size(); ++i) {
    CHECK(buf->put(written[i]) == written[i].ts);
    n += slots[i];
    CHECK(buf->n == n);
  }
  CHECK(buf->records == written.size());
  CHECK(buf->base == t0);
  ChunkReader reader(buf->slot, buf->slot + buf->n, buf->base);
  for (const Event& w : written) {
    REQUIRE(!reader.done());
    Event e{};
    REQUIRE(reader.next(&e));
    INFO("kind " << static_cast<int>(w.kind) << ", g " << w.g);
    CHECK(same(e, w));
  }
  CHECK(reader.done());
}

TEST_CASE("trace records: a clock read earlier than the M's last record is recorded at the last, "
          "in the next chunk too",
          "[trace]") {
  auto read = [](const TraceBuf& b) {
    ChunkReader reader(b.slot, b.slot + b.n, b.base);
    std::vector<std::uint64_t> ts;
    for (Event e{}; !reader.done();) {
      REQUIRE(reader.next(&e));
      ts.push_back(e.ts);
    }
    return ts;
  };
  auto buf = std::make_unique<TraceBuf>();
  CHECK(buf->put({1000, Ev::go_start, 0, 0, 0, 1, 0}) == 1000);
  CHECK(buf->put({990, Ev::go_stop, 0, 0, 0, 1, 0}) == 1000);  // another CPU's lagging counter
  CHECK(buf->put({1010, Ev::go_start, 0, 0, 0, 2, 0}) == 1010);
  CHECK(read(*buf) == std::vector<std::uint64_t>{1000, 1000, 1010});
  // The M's next chunk goes on from the last time (next_buffer, trace.cpp).
  auto next = std::make_unique<TraceBuf>();
  next->last = buf->last;
  CHECK(next->put({1005, Ev::go_stop, 0, 0, 0, 2, 0}) == 1010);
  CHECK(next->put({1020, Ev::go_start, 0, 0, 0, 3, 0}) == 1020);
  CHECK(next->base == 1010);
  CHECK(read(*next) == std::vector<std::uint64_t>{1010, 1020});
}

TEST_CASE("trace records: a buffer is full while a long record might not fit, and a cut-off "
          "record or an unknown kind is refused",
          "[trace]") {
  auto buf = std::make_unique<TraceBuf>();
  std::uint32_t records = 0;
  while (!buf->full()) {
    buf->put({100, Ev::go_create, 0, 0, 0, 5, 4});  // long: two slots each
    ++records;
  }
  CHECK(buf->n <= nugo::detail::kSlots);
  CHECK(buf->n + 2 > nugo::detail::kSlots);
  CHECK(records == nugo::detail::kSlots / 2);

  ChunkReader cut(buf->slot, buf->slot + 1, buf->base);  // the first slot of a long record
  Event e{};
  CHECK_FALSE(cut.next(&e));

  nugo::detail::Slot bad = buf->slot[0];  // a long record's first slot, made short and unknown
  bad.head = (bad.head & ~(std::uint64_t{0xff} << 32)) |
             std::uint64_t{static_cast<std::uint8_t>(nugo::detail::kLastEv) + 1u} << 32;
  ChunkReader unknown(&bad, &bad + 1, 0);
  CHECK_FALSE(unknown.next(&e));
}
