// A TCP echo server and a load-generating client, on nugo::net. The Go twin is
// experiments/baselines/go/apps/echo.
//
//   nugo-echo server [--addr A] [--port P]
//       echoes every connection (one goroutine each); prints "listening on A:P" when ready.
//   nugo-echo client --port P [--addr A] [--conns N] [--msgs M] [--size S]
//       N connections, each sending M messages of S bytes and reading each echo back
//       (checked byte for byte); prints round trips per second as "rtt/s: X".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "nugo-echo: %s\nusage: nugo-echo server [--addr A] [--port P]\n"
               "       nugo-echo client --port P [--addr A] [--conns N] [--msgs M] [--size S]\n",
               why);
  std::exit(2);
}

long number(const char* flag, const char* text, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < lo || v > hi) {
    std::fprintf(stderr, "nugo-echo: %s: '%s' is not a number in [%ld, %ld]\n", flag, text, lo, hi);
    std::exit(2);
  }
  return v;
}

struct Options {
  std::string mode, addr = "127.0.0.1";
  long port = 0, conns = 100, msgs = 1000, size = 64;
};

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) usage("missing mode");
  o.mode = argv[1];
  if (o.mode != "server" && o.mode != "client") usage(("unknown mode '" + o.mode + "'").c_str());
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--addr") o.addr = v;
    else if (flag == "--port") o.port = number("--port", v, 0, 65535);
    else if (flag == "--conns") o.conns = number("--conns", v, 1, 100000);
    else if (flag == "--msgs") o.msgs = number("--msgs", v, 1, 1L << 30);
    else if (flag == "--size") o.size = number("--size", v, 1, 1 << 24);
    else usage(("unknown flag " + flag).c_str());
  }
  if (o.mode == "client" && o.port == 0) usage("client needs --port");
  return o;
}

int server(const Options& o) {
  auto ln = nugo::net::listen(o.addr, static_cast<std::uint16_t>(o.port));
  if (!ln) {
    std::fprintf(stderr, "nugo-echo: listen %s:%ld: %s\n", o.addr.c_str(), o.port, ln.error().message().c_str());
    return 1;
  }
  std::printf("listening on %s\n", ln->local_endpoint().to_string().c_str());
  std::fflush(stdout);
  for (;;) {
    auto c = ln->accept();
    if (!c) {
      std::fprintf(stderr, "nugo-echo: accept: %s\n", c.error().message().c_str());
      return 1;
    }
    nugo::go([conn = std::move(*c)]() mutable {
      char buf[16384];
      for (;;) {
        auto r = conn.read(buf, sizeof buf);
        if (!r || !conn.write_all(buf, r.n)) return;
      }
    });
  }
}

int client(const Options& o) {
  std::atomic<long> failures{0};
  nugo::WaitGroup wg;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < o.conns; ++i) {
    wg.add(1);
    nugo::go([&, i] {
      auto c = nugo::net::dial(o.addr, static_cast<std::uint16_t>(o.port), std::chrono::seconds(10));
      if (!c) {
        std::fprintf(stderr, "nugo-echo: dial: %s\n", c.error().message().c_str());
        failures.fetch_add(1);
        wg.done();
        return;
      }
      std::vector<char> out(o.size), in(o.size);
      for (long m = 0; m < o.msgs; ++m) {
        for (long k = 0; k < o.size; ++k) out[k] = static_cast<char>(i + m + k);
        if (!c->write_all(out.data(), out.size()) || !c->read_full(in.data(), in.size()) ||
            std::memcmp(in.data(), out.data(), in.size()) != 0) {
          failures.fetch_add(1);
          break;
        }
      }
      wg.done();
    });
  }
  wg.wait();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failures.load()) {
    std::fprintf(stderr, "nugo-echo: %ld connections failed\n", failures.load());
    return 1;
  }
  std::printf("rtt/s: %.0f\n", o.conns * o.msgs / secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  return nugo::run([&] { return o.mode == "server" ? server(o) : client(o); });
}
