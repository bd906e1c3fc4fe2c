// A TCP server with deadlines and a graceful shutdown, and the clients that check it.
//
// The server answers each line with the line in upper case. A connection idle for longer
// than kIdle is told "bye: idle" and closed (a read deadline). Shutdown is graceful: the
// listener closes, so no new connection is accepted; each open connection finishes the line
// it is serving, is told "bye: shutting down" and closed; and shutdown returns once every
// handler has ended. Its trigger is a nugo::Context, as a Go server's would be.
//
// The clients: 20 that each send 5 lines and check every answer, one that stays silent and
// must be told it was idle, and one that keeps talking until it is told about the shutdown.
// Exit status 0 and "tcp_server: ok" only if all of that happened, and no goroutine is left.
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <nugo/nugo.hpp>
#include <set>
#include <string>

using namespace std::chrono_literals;
namespace net = nugo::net;

namespace {

constexpr auto kIdle = 1s;
std::atomic<int> failures{0};

void fail(const std::string& what) {
  std::printf("FAILED: %s\n", what.c_str());
  ++failures;
}

class Server {
 public:
  explicit Server(net::Listener ln) : ln_(std::move(ln)) {}
  std::uint16_t port() const { return ln_.port(); }

  // Accepts until the listener is closed by shutdown().
  void serve(const nugo::Context& ctx) {
    for (;;) {
      auto conn = ln_.accept();
      if (!conn) {
        if (ctx.err()) return;  // shutting down: accept failed with io::Errc::closed
        fail("accept: " + conn.error().message());
        continue;
      }
      handlers_.add(1);
      nugo::go([this, ctx, c = std::move(*conn)]() mutable {
        handle(ctx, c);
        handlers_.done();
      });
    }
  }

  // Stops accepting, wakes every connection's reader (a deadline of now), and waits for the
  // handlers, which see the context cancelled and say goodbye.
  void shutdown(const nugo::CancelFunc& cancel) {
    cancel();
    (void)ln_.close();
    {
      std::lock_guard lock(mu_);  // nugo::Mutex is a standard Lockable
      for (net::Conn* c : open_) c->set_read_deadline(nugo::io::Clock::now());
    }
    handlers_.wait();
  }

 private:
  void handle(const nugo::Context& ctx, net::Conn& conn) {
    {
      std::lock_guard lock(mu_);
      if (ctx.err()) return;  // accepted just as shutdown began
      open_.insert(&conn);
    }
    nugo::bufio::Reader in(conn);
    nugo::bufio::Writer out(conn);
    for (;;) {
      conn.set_read_deadline(nugo::io::Clock::now() + kIdle);
      auto line = in.read_line();
      if (ctx.err()) {
        (void)out.write("bye: shutting down\n");
      } else if (!line && line.error() == nugo::io::Errc::timeout) {
        (void)out.write("bye: idle\n");
      } else if (line) {
        std::string upper = *line;
        for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        (void)out.write(upper + "\n");
        if (!out.flush()) continue;
      }
      (void)out.flush();
      break;  // said goodbye, or the client left (eof) or broke the connection
    }
    std::lock_guard lock(mu_);
    open_.erase(&conn);
  }

  net::Listener ln_;
  nugo::WaitGroup handlers_;
  nugo::Mutex mu_;
  std::set<net::Conn*> open_;  // guarded by mu_
};

// Reads one line and checks it.
void expect(nugo::bufio::Reader& in, const std::string& want, const std::string& who) {
  auto got = in.read_line();
  if (!got)
    fail(who + ": expected \"" + want + "\", got " + got.error().message());
  else if (*got != want)
    fail(who + ": expected \"" + want + "\", got \"" + *got + "\"");
}

void talker(std::uint16_t port, int id) {
  auto conn = net::dial("127.0.0.1", port);
  if (!conn) return fail("dial: " + conn.error().message());
  nugo::bufio::Reader in(*conn);
  for (int i = 0; i < 5; ++i) {
    std::string line = "hello " + std::to_string(id) + " line " + std::to_string(i);
    if (!conn->write_all(line + "\n")) return fail("write");
    expect(in, "HELLO " + std::to_string(id) + " LINE " + std::to_string(i), "talker");
  }
}

void silent(std::uint16_t port) {
  auto conn = net::dial("127.0.0.1", port);
  if (!conn) return fail("dial: " + conn.error().message());
  nugo::bufio::Reader in(*conn);
  expect(in, "bye: idle", "silent client");
  if (auto end = in.read_line(); end || end.error() != nugo::io::Errc::eof)
    fail("silent client: the server did not close the connection");
}

// Talks every 100 ms until told about the shutdown; `talking` is done once it has been
// answered, so that main shuts down with this connection open.
void chatty(std::uint16_t port, nugo::WaitGroup& talking) {
  auto conn = net::dial("127.0.0.1", port);
  if (!conn) {
    talking.done();
    return fail("dial: " + conn.error().message());
  }
  nugo::bufio::Reader in(*conn);
  bool answered = false;
  for (;;) {
    if (!conn->write_all("ping\n")) return fail("chatty client: write");
    auto got = in.read_line();
    if (got && *got == "PING") {
      if (!answered) talking.done();
      answered = true;
      nugo::sleep_for(100ms);
      continue;
    }
    if (!got || *got != "bye: shutting down") fail("chatty client: no goodbye");
    return;
  }
}

}  // namespace

int main() {
  return nugo::run([] {
    auto ln = net::listen("127.0.0.1", 0);
    if (!ln) {
      std::printf("listen: %s\n", ln.error().message().c_str());
      return 1;
    }
    int goroutines_before = nugo::num_goroutines();
    Server server(std::move(*ln));
    auto [ctx, cancel] = nugo::with_cancel(nugo::Context::background());
    nugo::WaitGroup serving, clients, talking;
    serving.add(1);
    nugo::go([&, ctx = ctx] {
      server.serve(ctx);
      serving.done();
    });

    // The talkers and the silent client first: the silent one must be told it was idle,
    // which takes kIdle, before the shutdown could tell it anything else.
    clients.add(21);
    for (int id = 0; id < 20; ++id)
      nugo::go([&, id] {
        talker(server.port(), id);
        clients.done();
      });
    nugo::go([&] {
      silent(server.port());
      clients.done();
    });
    nugo::WaitGroup chatty_done;
    chatty_done.add(1);
    talking.add(1);
    nugo::go([&] {
      chatty(server.port(), talking);
      chatty_done.done();
    });

    clients.wait();
    talking.wait();  // the chatty client has a live connection: shut down under it
    server.shutdown(cancel);
    chatty_done.wait();
    serving.wait();

    // Goroutines that have called done() may still be on their way out: give them time.
    for (int i = 0; i < 5000 && nugo::num_goroutines() != goroutines_before; ++i)
      nugo::sleep_for(1ms);
    if (nugo::num_goroutines() != goroutines_before)
      fail("goroutines left behind: " + std::to_string(nugo::num_goroutines() - goroutines_before));
    if (failures.load() != 0) return 1;
    std::puts("tcp_server: ok, 22 clients served, 1 idle connection closed, graceful shutdown");
    return 0;
  });
}
