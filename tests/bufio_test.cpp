// nugo::bufio over connections and pipes (partial reads, "\r\n", the end of the stream,
// max_line, deadlines, buffering and sticky write errors), and io::Result's std::expected
// shape. Deadlines are generous and the assertions are on outcomes, never on how long
// anything took.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <nugo/nugo.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>

using namespace std::chrono_literals;
using nugo::io::Errc;
using nugo::io::Result;

namespace {

template <class F>
void run_procs(int procs, F f) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = procs;
  nugo::run(f, cfg);
}

// Both ends of a loopback TCP connection.
struct ConnPair {
  nugo::net::Conn client, server;
};

ConnPair connect_pair() {
  auto ln = nugo::net::listen("127.0.0.1", 0);
  REQUIRE(ln);
  auto client = nugo::net::dial("127.0.0.1", ln->port());
  REQUIRE(client);
  auto server = ln->accept();
  REQUIRE(server);
  return {std::move(*client), std::move(*server)};
}

// The line, or the error's message, so that a failed CHECK says which it got.
std::string text(const Result<std::string>& r) {
  return r ? *r : "<error: " + r.error().message() + ">";
}

nugo::io::Deadline from_now(std::chrono::milliseconds d) { return nugo::io::Clock::now() + d; }

}  // namespace

// ---- Reader ----

TEST_CASE("bufio read_line reassembles lines a peer sends one byte at a time", "[bufio]") {
  run_procs(2, [] {
    ConnPair p = connect_pair();
    nugo::WaitGroup sender;
    sender.add(1);
    nugo::go([&] {
      for (char ch : std::string_view("hello\nworld\n")) {
        (void)p.server.write_all(&ch, 1);
        nugo::sleep_for(2ms);  // each byte arrives alone: every read is partial
      }
      (void)p.server.shutdown_write();
      sender.done();
    });
    nugo::bufio::Reader in(p.client);
    CHECK(text(in.read_line()) == "hello");
    CHECK(text(in.read_line()) == "world");
    CHECK(in.read_line().error() == Errc::eof);
    sender.wait();
  });
}

TEST_CASE("bufio read_line strips CR LF and returns a last line without newline before eof",
          "[bufio]") {
  run_procs(1, [] {
    ConnPair p = connect_pair();
    REQUIRE(p.server.write_all("a\r\nb\r\n\r\nx\ry\nlast"));
    REQUIRE(!p.server.shutdown_write());
    nugo::bufio::Reader in(p.client);
    CHECK(text(in.read_line()) == "a");
    CHECK(text(in.read_line()) == "b");
    CHECK(text(in.read_line()) == "");
    CHECK(text(in.read_line()) == "x\ry");  // only a \r before the \n goes
    CHECK(text(in.read_line()) == "last");
    CHECK(in.read_line().error() == Errc::eof);
    CHECK(in.read_line().error() == Errc::eof);
  });
}

TEST_CASE("bufio read_until keeps the delimiter and returns the partial rest before eof",
          "[bufio]") {
  run_procs(1, [] {
    ConnPair p = connect_pair();
    REQUIRE(p.server.write_all("k1=v1;k2=v2;tail"));
    REQUIRE(!p.server.shutdown_write());
    nugo::bufio::Reader in(p.client);
    CHECK(text(in.read_until(';')) == "k1=v1;");
    CHECK(text(in.read_until(';')) == "k2=v2;");
    CHECK(text(in.read_until(';')) == "tail");
    CHECK(in.read_until(';').error() == Errc::eof);
  });
}

TEST_CASE("bufio read, read_byte and buffered hand out what read_line left", "[bufio]") {
  run_procs(1, [] {
    ConnPair p = connect_pair();
    REQUIRE(p.server.write_all("xyz\nrest"));
    REQUIRE(!p.server.shutdown_write());
    nugo::bufio::Reader in(p.client);
    CHECK(text(in.read_line()) == "xyz");
    auto b = in.read_byte();
    REQUIRE(b);
    CHECK(*b == 'r');
    std::string rest;
    char buf[64];
    nugo::io::IoResult r;
    while ((r = in.read(buf, sizeof buf))) rest.append(buf, r.n);
    CHECK(r.err == Errc::eof);
    CHECK(rest == "est");
    CHECK(in.buffered() == 0);
    CHECK(in.read_byte().error() == Errc::eof);
  });
}

TEST_CASE("bufio a line longer than max_line fails with too_long and the reader can skip it",
          "[bufio]") {
  run_procs(1, [] {
    ConnPair p = connect_pair();
    REQUIRE(p.server.write_all(std::string(31, 'b') + "\n" + std::string(100, 'a') + "\nok\n"));
    REQUIRE(!p.server.shutdown_write());
    nugo::bufio::Reader in(p.client, 16, 32);  // the buffer grows from 16 to 32 bytes, no more
    CHECK(text(in.read_line()) == std::string(31, 'b'));  // 32 bytes with its newline: fits
    CHECK(in.read_line().error() == Errc::too_long);
    CHECK(in.read_until('\n').error() == Errc::too_long);  // again: the bytes are still there
    CHECK(in.buffered() <= 32);
    int skipped = 0;
    for (auto c = in.read_byte(); c && *c != '\n'; c = in.read_byte()) ++skipped;
    CHECK(skipped == 100);
    CHECK(text(in.read_line()) == "ok");
    CHECK(in.read_line().error() == Errc::eof);
  });
}

TEST_CASE("bufio reads lines from a non-blocking pipe through the poller", "[bufio]") {
  run_procs(2, [] {
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    nugo::WaitGroup sender;
    sender.add(1);
    nugo::go([&] {
      for (std::string_view piece : {"one\ntw", "o\nthr", "ee"}) {
        (void)!::write(fds[1], piece.data(), piece.size());
        nugo::sleep_for(10ms);  // the reader parks in the poller meanwhile
      }
      ::close(fds[1]);  // never waited on: nothing to evict
      sender.done();
    });
    nugo::bufio::Reader in(fds[0]);
    CHECK(text(in.read_line()) == "one");
    CHECK(text(in.read_line()) == "two");
    CHECK(text(in.read_line()) == "three");
    CHECK(in.read_line().error() == Errc::eof);
    sender.wait();
    nugo::io::evict(fds[0]);
    ::close(fds[0]);
  });
}

TEST_CASE("bufio reads lines from a blocking pipe through nugo::sys::read", "[bufio]") {
  for (int procs : {1, 2}) {
    run_procs(procs, [] {
      int fds[2];
      REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
      // A plain thread writes, as another process would.
      std::thread sender([&] {
        for (std::string_view piece : {"al", "pha\nbeta\r", "\ngam", "ma\n"}) {
          (void)!::write(fds[1], piece.data(), piece.size());
          std::this_thread::sleep_for(10ms);
        }
        ::close(fds[1]);
      });
      nugo::bufio::Reader in(fds[0]);
      CHECK(text(in.read_line()) == "alpha");
      CHECK(text(in.read_line()) == "beta");
      CHECK(text(in.read_line()) == "gamma");
      CHECK(in.read_line().error() == Errc::eof);
      sender.join();
      ::close(fds[0]);
    });
  }
}

TEST_CASE("bufio a read deadline over a Conn times out and the line continues after a later one",
          "[bufio]") {
  run_procs(2, [] {
    ConnPair p = connect_pair();
    nugo::bufio::Reader in(p.client);
    REQUIRE(p.server.write_all("hel"));
    in.set_deadline(from_now(100ms));  // the Conn's read deadline
    CHECK(in.read_line().error() == Errc::timeout);
    CHECK(in.read_line().error() == Errc::timeout);  // still passed: fails at once
    REQUIRE(p.server.write_all("lo\n"));
    in.set_deadline(from_now(10s));
    CHECK(text(in.read_line()) == "hello");  // "hel" was kept
  });
}

TEST_CASE("bufio a read deadline over a non-blocking pipe times out and the reader stays usable",
          "[bufio]") {
  run_procs(2, [] {
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    nugo::bufio::Reader in(fds[0]);
    REQUIRE(::write(fds[1], "hel", 3) == 3);
    in.set_deadline(from_now(100ms));
    CHECK(in.read_line().error() == Errc::timeout);
    CHECK(in.read_line().error() == Errc::timeout);
    REQUIRE(::write(fds[1], "lo\n", 3) == 3);
    in.set_deadline(from_now(10s));
    CHECK(text(in.read_line()) == "hello");
    nugo::io::evict(fds[0]);
    ::close(fds[0]);
    ::close(fds[1]);
  });
}

// ---- Writer ----

TEST_CASE("bufio Writer keeps writes until flush", "[bufio]") {
  run_procs(2, [] {
    ConnPair p = connect_pair();
    nugo::bufio::Writer out(p.client, 64);
    auto w = out.write("hello");
    CHECK(w);
    CHECK(w.n == 5);
    CHECK(out.buffered() == 5);
    CHECK(out.available() == 59);
    char buf[16];
    p.server.set_read_deadline(from_now(100ms));
    CHECK(p.server.read(buf, sizeof buf).err == Errc::timeout);  // nothing was sent
    CHECK(!out.flush());
    CHECK(out.buffered() == 0);
    p.server.set_read_deadline(nugo::io::no_deadline);
    auto r = p.server.read_full(buf, 5);
    REQUIRE(r);
    CHECK(std::string(buf, 5) == "hello");
  });
}

TEST_CASE("bufio a write larger than the buffer fills it, flushes it, and sends the rest directly",
          "[bufio]") {
  run_procs(2, [] {
    ConnPair p = connect_pair();
    nugo::bufio::Writer out(p.client, 16);
    REQUIRE(out.write("0123456789"));
    std::string big(1000, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    auto w = out.write(big);
    CHECK(w);
    CHECK(w.n == big.size());
    CHECK(out.buffered() == 0);  // Go's order: 6 bytes topped the buffer up, then 994 direct
    std::string got(1010, '\0');
    auto r = p.server.read_full(got.data(), got.size());  // no flush needed
    REQUIRE(r);
    CHECK(got == "0123456789" + big);
  });
}

TEST_CASE("bufio a failed flush to a closed peer is sticky and keeps the unsent bytes", "[bufio]") {
  run_procs(2, [] {
    ConnPair p = connect_pair();
    nugo::bufio::Writer out(p.client, 64);
    linger lg{1, 0};  // the peer resets the connection
    REQUIRE(setsockopt(p.server.fd(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
    p.server.close();
    std::error_code err;
    for (int i = 0; i < 200 && !err; ++i) {
      (void)out.write("data\n");
      err = out.flush();
      if (!err) nugo::sleep_for(5ms);
    }
    REQUIRE(err);
    CHECK(out.error() == err);
    CHECK(out.buffered() == 5);  // the failed flush's bytes
    CHECK(out.flush() == err);
    auto w = out.write("more");
    CHECK(w.err == err);
    CHECK(w.n == 0);
    CHECK(out.buffered() == 5);
  });
}

TEST_CASE("bufio a write deadline on a full pipe is a sticky timeout that clear_error lifts",
          "[bufio]") {
  run_procs(2, [] {
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    std::string big(200000, 'z');  // more than a pipe holds
    nugo::bufio::Writer out(fds[1], 16);
    out.set_deadline(from_now(100ms));
    auto w = out.write(big);
    CHECK(w.err == Errc::timeout);
    CHECK(w.n < big.size());
    CHECK(out.write("x").err == Errc::timeout);
    CHECK(out.flush() == Errc::timeout);

    std::atomic<std::size_t> received{0};
    nugo::WaitGroup drained;
    drained.add(1);
    nugo::go([&] {
      {  // the Reader is gone before done(): main may return, and abandon this goroutine, at once
        nugo::bufio::Reader in(fds[0]);
        char buf[8192];
        for (nugo::io::IoResult r; (r = in.read(buf, sizeof buf));) received += r.n;
      }
      drained.done();
    });
    out.clear_error();
    out.set_deadline(nugo::io::no_deadline);
    auto rest = out.write(big.data() + w.n, big.size() - w.n);
    CHECK(rest);
    CHECK(!out.flush());
    nugo::io::evict(fds[1]);  // the writes above waited on it
    ::close(fds[1]);
    drained.wait();
    CHECK(received.load() == big.size());
    nugo::io::evict(fds[0]);
    ::close(fds[0]);
  });
}

TEST_CASE("bufio Writer and Reader carry 20,000 lines over a non-blocking pipe in order",
          "[bufio]") {
  run_procs(2, [] {
    int fds[2];
    REQUIRE(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    constexpr int kLines = 20000;
    std::atomic<bool> sent{false};
    nugo::WaitGroup sender;
    sender.add(1);
    nugo::go([&] {
      {  // the Writer is gone before done(), as in the test above
        nugo::bufio::Writer out(fds[1]);
        bool ok = true;
        for (int i = 0; i < kLines && ok; ++i)
          ok = static_cast<bool>(out.write("line " + std::to_string(i) + "\n"));
        sent = ok && !out.flush();
      }
      nugo::io::evict(fds[1]);
      ::close(fds[1]);
      sender.done();
    });
    nugo::bufio::Reader in(fds[0]);
    int count = 0;
    for (auto line = in.read_line(); line; line = in.read_line()) {
      if (*line != "line " + std::to_string(count)) break;
      ++count;
    }
    CHECK(count == kLines);
    sender.wait();
    CHECK(sent.load());
    nugo::io::evict(fds[0]);
    ::close(fds[0]);
  });
}

// ---- io::Result ----

namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return std::make_error_code(std::errc::invalid_argument);
  return c - '0';
}

}  // namespace

TEST_CASE("io::Result has std::expected's accessors", "[result]") {
  Result<int> ok = 42;
  Result<int> bad = Errc::timeout;
  CHECK(ok.has_value());
  CHECK(static_cast<bool>(ok));
  CHECK(ok.value() == 42);
  CHECK(*ok == 42);
  CHECK(!ok.error());
  CHECK(!bad.has_value());
  CHECK(bad.error() == Errc::timeout);
  CHECK(ok.value_or(7) == 42);
  CHECK(bad.value_or(7) == 7);

  Result<std::string> s = "abc";  // made from what makes a std::string, as std::expected is
  CHECK(s->size() == 3);
  const Result<std::string>& cs = s;
  CHECK(*cs == "abc");
  Result<std::string> from_code = std::error_code(ECONNRESET, std::system_category());
  CHECK(from_code.error() == std::errc::connection_reset);
}

TEST_CASE("io::Result value and the dereference operators throw std::system_error with the error",
          "[result]") {
  Result<int> bad = Errc::closed;
  try {
    (void)bad.value();
    FAIL("value() did not throw");
  } catch (const std::system_error& e) {
    CHECK(e.code() == Errc::closed);
  }
  CHECK_THROWS_AS(*bad, std::system_error);  // checked, unlike std::expected's
  CHECK_THROWS_AS(std::move(bad).value(), std::system_error);
}

TEST_CASE("io::Result dereferenced or value_or as an rvalue moves the value out", "[result]") {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  static_assert(std::is_same_v<decltype(*std::move(r)), std::unique_ptr<int>&&>);
  std::unique_ptr<int> p = *std::move(r);
  REQUIRE(p);
  CHECK(*p == 5);
  CHECK(r.has_value());
  CHECK(*r == nullptr);  // moved from

  Result<std::unique_ptr<int>> q = std::make_unique<int>(6);
  std::unique_ptr<int> v = std::move(q).value_or(nullptr);
  REQUIRE(v);
  CHECK(*v == 6);
  Result<std::unique_ptr<int>> none = Errc::eof;
  CHECK(std::move(none).value_or(nullptr) == nullptr);
}

TEST_CASE("io::Result and_then and transform chain on values and pass errors through", "[result]") {
  auto twice = [](int v) -> Result<int> { return v * 2; };
  CHECK(parse_digit('4').and_then(twice).value_or(-1) == 8);
  CHECK(parse_digit('x').and_then(twice).error() == std::errc::invalid_argument);
  auto fail = [](int) -> Result<int> { return Errc::timeout; };
  CHECK(Result<int>(3).and_then(fail).error() == Errc::timeout);

  auto as_text = [](int v) { return std::to_string(v); };
  Result<std::string> t = parse_digit('7').transform(as_text);
  CHECK(t.value_or("") == "7");
  CHECK(parse_digit('?').transform(as_text).error() == std::errc::invalid_argument);

  bool called = false;
  Result<void> done = parse_digit('1').transform([&](int) { called = true; });
  CHECK(done);
  CHECK(called);
  called = false;
  Result<void> skipped = parse_digit('-').transform([&](int) { called = true; });
  CHECK(!skipped);
  CHECK(!called);

  // An rvalue Result hands its value over: a move-only value goes through and_then.
  Result<std::unique_ptr<int>> owner = std::make_unique<int>(9);
  auto read_owned = [](std::unique_ptr<int> p) -> Result<int> { return *p; };
  auto unwrapped = std::move(owner).and_then(read_owned);
  CHECK(unwrapped.value_or(0) == 9);
}

TEST_CASE("io::Result or_else and transform_error act on errors only", "[result]") {
  auto recover = [](std::error_code e) -> Result<int> {
    if (e == Errc::timeout) return 0;
    return e;
  };
  CHECK(Result<int>(Errc::timeout).or_else(recover).value_or(-1) == 0);
  CHECK(Result<int>(Errc::closed).or_else(recover).error() == Errc::closed);
  bool called = false;
  auto note_call = [&](std::error_code) -> Result<int> {
    called = true;
    return 0;
  };
  CHECK(Result<int>(5).or_else(note_call).value_or(-1) == 5);
  CHECK(!called);

  auto to_closed = [](std::error_code) { return std::error_code(Errc::closed); };
  CHECK(Result<int>(Errc::eof).transform_error(to_closed).error() == Errc::closed);
  CHECK(Result<int>(8).transform_error(to_closed).value_or(-1) == 8);
}

TEST_CASE("io::Result of void is success or an error", "[result]") {
  Result<void> ok;
  CHECK(ok.has_value());
  CHECK_NOTHROW(ok.value());
  Result<void> from_empty_code = std::error_code();  // an error_code as it is: empty is success
  CHECK(from_empty_code);
  Result<void> bad = Errc::closed;
  CHECK(!bad);
  CHECK(bad.error() == Errc::closed);
  CHECK_THROWS_AS(bad.value(), std::system_error);
  CHECK(ok.and_then([]() -> Result<int> { return 1; }).value_or(0) == 1);
  CHECK(bad.and_then([]() -> Result<int> { return 1; }).error() == Errc::closed);
  CHECK(ok.transform([] { return 2; }).value_or(0) == 2);
  CHECK(bad.or_else([](std::error_code) -> Result<void> { return {}; }));
  auto to_eof = [](std::error_code) { return std::error_code(Errc::eof); };
  CHECK(bad.transform_error(to_eof).error() == Errc::eof);
}
