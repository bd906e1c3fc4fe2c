// The network poller and nugo::net / nugo::io: many concurrent connections, idle connections
// that hold no thread, deadlines, close and half-close, refused and reset connections, IPv6,
// UDP, and waiting on descriptors the caller owns. Bounds are generous: these tests check
// behaviour, not speed.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nugo/nugo.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using nugo::io::Errc;

namespace {

// The environment's settings (a NUMA-mode ctest configuration sets NUGO_MODE and
// NUGO_TOPOLOGY), at the P count the test needs.
template <class F>
void run_procs(int procs, F f) {
  nugo::Config cfg = nugo::Config::from_env();
  cfg.procs = procs;
  nugo::run(f, cfg);
}

int threads_in_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::uint64_t fnv1a(const unsigned char* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Echoes every connection the listener accepts until it is closed.
void serve_echo(nugo::net::Listener& ln, nugo::WaitGroup& wg) {
  wg.add(1);
  nugo::go([&ln, &wg] {
    for (;;) {
      auto c = ln.accept();
      if (!c) break;
      nugo::go([conn = std::move(*c)]() mutable {
        char buf[16384];
        for (;;) {
          auto r = conn.read(buf, sizeof buf);
          if (!r) break;
          if (!conn.write_all(buf, r.n)) break;
        }
      });
    }
    wg.done();
  });
}

}  // namespace

TEST_CASE("echo round trips across 1,000 concurrent connections, random sizes, checksums") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    nugo::WaitGroup server;
    serve_echo(*ln, server);
    constexpr int kConns = 1000, kRounds = 3;
    std::atomic<int> ok{0}, failed{0};
    nugo::WaitGroup clients;
    clients.add(kConns);
    for (int i = 0; i < kConns; ++i) {
      nugo::go([&, i] {
        auto c = nugo::net::dial("127.0.0.1", ln->port());
        if (!c) {
          failed.fetch_add(1);
          clients.done();
          return;
        }
        std::mt19937 rng(i);
        bool good = true;
        for (int round = 0; round < kRounds && good; ++round) {
          std::vector<unsigned char> out(1 + rng() % 65536), in(out.size());
          for (auto& b : out) b = static_cast<unsigned char>(rng());
          // Written by another goroutine: the echo comes back while we are still writing.
          nugo::Chan<bool> wrote(1);
          nugo::go([&] { wrote.send(static_cast<bool>(c->write_all(out.data(), out.size()))); });
          auto r = c->read_full(in.data(), in.size());
          good = wrote.recv() && r && r.n == in.size() &&
                 fnv1a(in.data(), in.size()) == fnv1a(out.data(), out.size());
        }
        (good ? ok : failed).fetch_add(1);
        clients.done();
      });
    }
    clients.wait();
    CHECK(failed.load() == 0);
    CHECK(ok.load() == kConns);
    CHECK(!ln->close());
    server.wait();
  });
}

TEST_CASE("10,000 idle connections are held with a handful of threads and no busy CPU", "[manygoroutines]") {
  constexpr int kConns = 10000;
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  REQUIRE(rl.rlim_cur >= kConns + 100);  // the server's side; the clients live in a child
  int port_pipe[2], done_pipe[2];
  REQUIRE(pipe(port_pipe) == 0);
  REQUIRE(pipe(done_pipe) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // plain blocking clients, no runtime
    close(port_pipe[1]);
    close(done_pipe[1]);
    std::uint16_t port = 0;
    if (read(port_pipe[0], &port, sizeof port) != sizeof port) _exit(3);
    std::vector<int> fds;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < kConns; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) _exit(4);
      fds.push_back(fd);
    }
    char b;
    [[maybe_unused]] ssize_t r = read(done_pipe[0], &b, 1);  // until the parent has looked
    _exit(0);  // closes every connection
  }
  close(port_pipe[0]);
  close(done_pipe[0]);
  run_procs(2, [&] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    std::uint16_t port = ln->port();
    REQUIRE(write(port_pipe[1], &port, sizeof port) == sizeof port);
    std::atomic<int> accepted{0}, ended{0};
    nugo::WaitGroup readers;
    for (int i = 0; i < kConns; ++i) {
      auto c = ln->accept();
      REQUIRE(c);
      accepted.fetch_add(1);
      readers.add(1);
      nugo::go([&, conn = std::move(*c)]() mutable {
        char b;
        auto r = conn.read(&b, 1);  // parks in the poller until the client goes away
        if (r.err == Errc::eof) ended.fetch_add(1);
        readers.done();
      });
    }
    CHECK(accepted.load() == kConns);
    nugo::sleep_for(200ms);  // every reader has parked
    double cpu0 = cpu_seconds();
    auto wall0 = std::chrono::steady_clock::now();
    nugo::sleep_for(1s);
    double cpu = cpu_seconds() - cpu0;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    int threads = threads_in_process();
    INFO("threads " << threads << ", cpu " << cpu << " s over " << wall << " s");
    // Main thread, sysmon, and gomaxprocs Ms plus a spare or two: not one per connection.
    CHECK(threads <= 8);
    CHECK(cpu < 0.25 * wall);
    REQUIRE(write(done_pipe[1], "x", 1) == 1);
    readers.wait();
    CHECK(ended.load() == kConns);
  });
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  close(port_pipe[1]);
  close(done_pipe[1]);
}

TEST_CASE("a read deadline fires, and the connection stays usable") {
  for (int procs : {1, 2}) {
    run_procs(procs, [] {
      auto ln = nugo::net::listen("127.0.0.1", 0);
      REQUIRE(ln);
      nugo::WaitGroup server;
      serve_echo(*ln, server);
      auto c = nugo::net::dial("127.0.0.1", ln->port());
      REQUIRE(c);
      char buf[8];
      // The read may not end before its deadline. (Measured from a start taken after the
      // deadline was computed, the check failed when the thread was descheduled between the
      // two: the deadline was kept, the measurement started late.)
      const auto deadline = nugo::io::Clock::now() + 30ms;
      c->set_read_deadline(deadline);
      auto r = c->read(buf, sizeof buf);
      CHECK(r.err == Errc::timeout);
      CHECK(nugo::io::Clock::now() >= deadline);
      // A deadline already passed fails at once, without waiting.
      r = c->read(buf, sizeof buf);
      CHECK(r.err == Errc::timeout);
      c->set_read_deadline(nugo::net::no_deadline);
      REQUIRE(c->write_all("ping", 4));
      r = c->read_full(buf, 4);
      CHECK(r);
      CHECK(std::string(buf, 4) == "ping");
      // A deadline set while a read is blocked applies to that read.
      nugo::go([&] {
        nugo::sleep_for(20ms);
        c->set_deadline(nugo::io::Clock::now());
      });
      CHECK(c->read(buf, sizeof buf).err == Errc::timeout);
      ln->close();
      server.wait();
    });
  }
}

TEST_CASE("a write deadline fires while the peer does not read") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    REQUIRE(c);
    auto peer = ln->accept();  // never reads
    REQUIRE(peer);
    c->set_write_deadline(nugo::io::Clock::now() + 100ms);
    std::vector<char> chunk(1 << 20, 'x');
    nugo::io::IoResult r;
    std::size_t total = 0;
    for (int i = 0; i < 512 && !r.err; ++i) {
      r = c->write_all(chunk.data(), chunk.size());
      total += r.n;
    }
    CHECK(r.err == Errc::timeout);
    CHECK(total > 0);
  });
}

// As Go's pollDesc.prepare, a call whose deadline has passed fails with a
// timeout without touching the socket, even when the socket could do it at once.
TEST_CASE("reads, writes and accepts with a deadline in the past fail at once with a timeout") {
  for (int procs : {1, 2}) {
    run_procs(procs, [] {
      auto ln = nugo::net::listen("127.0.0.1", 0);
      REQUIRE(ln);
      auto c = nugo::net::dial("127.0.0.1", ln->port());
      REQUIRE(c);
      auto peer = ln->accept();
      REQUIRE(peer);
      REQUIRE(peer->write_all("data", 4));  // readable now

      c->set_write_deadline(nugo::io::Clock::now() - 1s);
      auto w = c->write("x", 1);
      CHECK(w.err == Errc::timeout);
      CHECK(w.n == 0);
      CHECK(c->write_all("xy", 2).err == Errc::timeout);
      c->set_read_deadline(nugo::io::Clock::time_point{} + 1ns);  // just after the epoch
      char buf[4];
      auto r = c->read(buf, sizeof buf);
      CHECK(r.err == Errc::timeout);
      CHECK(r.n == 0);

      // Nothing was sent: the peer sees no byte once the deadline is lifted and we close.
      c->set_deadline(nugo::net::no_deadline);
      CHECK(c->read_full(buf, 4));  // the data was left where it was
      CHECK(std::string(buf, 4) == "data");
      c->close();
      CHECK(peer->read(buf, sizeof buf).err == Errc::eof);

      auto waiting = nugo::net::dial("127.0.0.1", ln->port());  // queued for accept
      REQUIRE(waiting);
      ln->set_deadline(nugo::io::Clock::now() - 1ms);
      CHECK(ln->accept().error() == Errc::timeout);
      ln->set_deadline(nugo::net::no_deadline);
      CHECK(ln->accept());
    });
  }
}

TEST_CASE("closing a connection wakes its blocked reader, writer and acceptor with Errc::closed") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    auto r = nugo::net::dial("127.0.0.1", ln->port());  // its peer never writes
    REQUIRE(r);
    auto r_peer = ln->accept();
    auto w = nugo::net::dial("127.0.0.1", ln->port());  // its peer never reads
    REQUIRE(w);
    auto w_peer = ln->accept();
    REQUIRE((r_peer && w_peer));
    nugo::Chan<std::error_code> results(3);
    nugo::go([&] {
      char b;
      results.send(r->read(&b, 1).err);
    });
    nugo::go([&] {  // fills the socket buffers, then blocks
      std::vector<char> chunk(1 << 20, 'y');
      nugo::io::IoResult res;
      while (!res.err) res = w->write_all(chunk.data(), chunk.size());
      results.send(res.err);
    });
    nugo::go([&] { results.send(ln->accept().error()); });
    nugo::sleep_for(50ms);
    CHECK(!r->close());
    CHECK(!w->close());
    CHECK(!ln->close());
    for (int i = 0; i < 3; ++i) CHECK(results.recv() == Errc::closed);
    CHECK(r->close() == Errc::closed);  // a second close
    char b;
    CHECK(r->read(&b, 1).err == Errc::closed);
    CHECK(r->fd() == -1);
    // The peers see the closes as the end of their streams.
    CHECK(r_peer->read(&b, 1).err == Errc::eof);
  });
}

TEST_CASE("half-close: the peer reads EOF and can still answer") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    nugo::go([&] {
      auto s = ln->accept();
      if (!s) return;
      std::string all;
      char buf[64];
      for (;;) {
        auto r = s->read(buf, sizeof buf);
        all.append(buf, r.n);
        if (r.err) break;  // EOF after the client's shutdown_write
      }
      (void)s->write_all("got:" + all);
    });
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    REQUIRE(c);
    REQUIRE(c->write_all("hello"));
    CHECK(!c->shutdown_write());
    char buf[64];
    auto r = c->read_full(buf, 9);
    CHECK(r);
    CHECK(std::string(buf, r.n) == "got:hello");
    CHECK(c->read(buf, sizeof buf).err == Errc::eof);
    auto partial = c->read_full(buf, 1);
    CHECK(partial.err == Errc::eof);
  });
}

TEST_CASE("read_full reports a stream that ends early as unexpected_eof") {
  run_procs(1, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    nugo::go([&] {
      auto s = ln->accept();
      if (s) (void)s->write_all("abc");
    });  // s closes when the goroutine ends
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    REQUIRE(c);
    char buf[8];
    auto r = c->read_full(buf, 8);
    CHECK(r.n == 3);
    CHECK(r.err == Errc::unexpected_eof);
  });
}

TEST_CASE("dialing a port nobody listens on is refused") {
  run_procs(1, [] {
    std::uint16_t port;
    {
      auto ln = nugo::net::listen("127.0.0.1", 0);
      REQUIRE(ln);
      port = ln->port();
    }  // closed: nobody listens there now
    auto c = nugo::net::dial("127.0.0.1", port);
    REQUIRE(!c);
    CHECK(c.error() == std::errc::connection_refused);
  });
}

TEST_CASE("a peer's reset is reported as connection_reset") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    REQUIRE(c);
    auto s = ln->accept();
    REQUIRE(s);
    nugo::Chan<std::error_code> got(1);
    nugo::go([&] {
      char b;
      got.send(c->read(&b, 1).err);
    });
    nugo::sleep_for(20ms);  // the reader is parked in the poller
    linger lg{1, 0};        // close with RST instead of FIN
    REQUIRE(setsockopt(s->fd(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
    s->close();
    CHECK(got.recv() == std::errc::connection_reset);
  });
}

TEST_CASE("IPv6 loopback: listen, dial, echo") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("::1", 0);
    REQUIRE(ln);
    CHECK(ln->local_endpoint().family() == AF_INET6);
    nugo::WaitGroup server;
    serve_echo(*ln, server);
    auto c = nugo::net::dial("[::1]", ln->port());
    REQUIRE(c);
    CHECK(c->remote_endpoint().to_string() == "[::1]:" + std::to_string(ln->port()));
    REQUIRE(c->write_all("six"));
    char buf[3];
    CHECK(c->read_full(buf, 3));
    CHECK(std::string(buf, 3) == "six");
    ln->close();
    server.wait();
  });
}

TEST_CASE("UDP: datagrams both ways over IPv4 and IPv6, and a receive deadline") {
  for (const char* addr : {"127.0.0.1", "::1"}) {
    run_procs(2, [addr] {
      auto a = nugo::net::listen_udp(addr, 0);
      auto b = nugo::net::listen_udp(addr, 0);
      REQUIRE(a);
      REQUIRE(b);
      nugo::go([&] {  // b answers each datagram with its reverse
        char buf[64];
        nugo::net::Endpoint from;
        for (;;) {
          auto r = b->read_from(buf, sizeof buf, &from);
          if (!r) return;
          std::string s(buf, r.n);
          std::string rev(s.rbegin(), s.rend());
          (void)b->write_to(rev.data(), rev.size(), from);
        }
      });
      for (std::string msg : {"abc", "hello udp"}) {
        REQUIRE(a->write_to(msg.data(), msg.size(), b->local_endpoint()));
        char buf[64];
        nugo::net::Endpoint from;
        auto r = a->read_from(buf, sizeof buf, &from);
        REQUIRE(r);
        CHECK(std::string(buf, r.n) == std::string(msg.rbegin(), msg.rend()));
        CHECK(from.port() == b->local_endpoint().port());
      }
      a->set_read_deadline(nugo::io::Clock::now() + 20ms);
      char buf[8];
      CHECK(a->read_from(buf, sizeof buf).err == Errc::timeout);
      b->close();
    });
  }
}

TEST_CASE("io::wait_readable and wait_writable on descriptors the caller owns") {
  run_procs(2, [] {
    int p[2];
    REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    // Timeout on an empty pipe.
    CHECK(nugo::io::wait_readable(p[0], nugo::io::Clock::now() + 20ms) == Errc::timeout);
    // A write from another goroutine wakes the waiter.
    nugo::go([&] {
      nugo::sleep_for(10ms);
      REQUIRE(write(p[1], "z", 1) == 1);
    });
    CHECK(!nugo::io::wait_readable(p[0]));
    // Level at the time of the wait: still readable, reported at once.
    CHECK(!nugo::io::wait_readable(p[0], nugo::io::Clock::now() + 1s));
    char b;
    REQUIRE(read(p[0], &b, 1) == 1);
    CHECK(!nugo::io::wait_writable(p[1]));
    // A second waiter for the same direction is refused; evict wakes the first.
    nugo::Chan<std::error_code> first(1);
    nugo::go([&] { first.send(nugo::io::wait_readable(p[0])); });
    nugo::sleep_for(20ms);
    CHECK(nugo::io::wait_readable(p[0], nugo::io::Clock::now() + 10ms) ==
          std::errc::device_or_resource_busy);
    nugo::io::evict(p[0]);
    CHECK(first.recv() == Errc::closed);
    close(p[0]);
    close(p[1]);
    // The number may come back as another descriptor; it works as a new one.
    int q[2];
    REQUIRE(pipe2(q, O_NONBLOCK | O_CLOEXEC) == 0);
    REQUIRE(write(q[1], "w", 1) == 1);
    CHECK(!nugo::io::wait_readable(q[0], nugo::io::Clock::now() + 1s));
    nugo::io::evict(q[0]);
    close(q[0]);
    close(q[1]);
  });
}

TEST_CASE("timers fire while the poller blocks for I/O, at 1 P") {
  run_procs(1, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    REQUIRE(c);
    nugo::go([&] {
      char b;
      (void)c->read(&b, 1);  // parked in the poller for the whole test
    });
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) nugo::sleep_for(5ms);
    CHECK(std::chrono::steady_clock::now() - t0 >= 100ms);
    c->close();
  });
}

TEST_CASE("sockets work from plain threads too (poll(2) on the thread)") {
  run_procs(2, [] {
    auto ln = nugo::net::listen("127.0.0.1", 0);
    REQUIRE(ln);
    nugo::WaitGroup server;
    serve_echo(*ln, server);
    std::uint16_t port = ln->port();
    std::string got;
    std::error_code deadline_err;
    std::thread t([&] {
      auto c = nugo::net::dial("127.0.0.1", port);
      if (!c) return;
      (void)c->write_all("thread");
      char buf[6];
      if (c->read_full(buf, 6)) got.assign(buf, 6);
      c->set_read_deadline(nugo::io::Clock::now() + 20ms);
      deadline_err = c->read(buf, 1).err;
    });
    nugo::blocking_syscall([&] { t.join(); });
    CHECK(got == "thread");
    CHECK(deadline_err == Errc::timeout);
    ln->close();
    server.wait();
  });
}

TEST_CASE("bad addresses and closed sockets give clear errors") {
  run_procs(1, [] {
    auto a = nugo::net::listen("not-an-address", 0);
    REQUIRE(!a);
    CHECK(a.error() == Errc::bad_address);
    CHECK(a.error().message() == "not a numeric IP address");
    CHECK(nugo::net::dial("300.1.1.1", 80).error() == Errc::bad_address);
    CHECK_THROWS_AS(a.value(), std::system_error);
    nugo::net::Conn none;
    char b;
    CHECK(none.read(&b, 1).err == Errc::closed);
    CHECK(none.write_all("x").err == Errc::closed);
    CHECK(none.close() == Errc::closed);
    auto ln = nugo::net::listen("localhost", 0);
    REQUIRE(ln);
    CHECK(ln->local_endpoint().address() == "127.0.0.1");
    ln->close();
    CHECK(ln->accept().error() == Errc::closed);
  });
}

TEST_CASE("an evicted waiter that runs late does not disturb the descriptor's next owner") {
  run_procs(1, [] {
    int p[2];
    REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    nugo::Chan<std::error_code> first(1);
    nugo::go([&] { first.send(nugo::io::wait_readable(p[0])); });
    nugo::sleep_for(10ms);
    // At 1 P the evicted waiter is readied but runs only once main parks below, after the
    // number has been closed, reused and waited on again.
    nugo::io::evict(p[0]);
    close(p[0]);
    close(p[1]);
    int q[2];
    REQUIRE(pipe2(q, O_NONBLOCK | O_CLOEXEC) == 0);
    nugo::go([&] {
      nugo::sleep_for(20ms);
      REQUIRE(write(q[1], "n", 1) == 1);
    });
    CHECK(!nugo::io::wait_readable(q[0], nugo::io::Clock::now() + 5s));
    CHECK(first.recv() == Errc::closed);
    nugo::io::evict(q[0]);
    close(q[0]);
    close(q[1]);
  });
}

TEST_CASE("a goroutine abandoned while waiting on a descriptor leaves nothing to the next run") {
  int p[2];
  REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
  run_procs(2, [&] {
    nugo::go([&] { (void)nugo::io::wait_readable(p[0]); });  // still waiting when main returns
    nugo::sleep_for(20ms);
  });
  run_procs(2, [&] {
    // The direction is free again, and a readiness report readies nobody from the old run.
    CHECK(nugo::io::wait_readable(p[0], nugo::io::Clock::now() + 20ms) == Errc::timeout);
    REQUIRE(write(p[1], "r", 1) == 1);
    CHECK(!nugo::io::wait_readable(p[0], nugo::io::Clock::now() + 5s));
    nugo::io::evict(p[0]);
  });
  close(p[0]);
  close(p[1]);
}
