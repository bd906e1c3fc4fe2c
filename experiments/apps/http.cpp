// A minimal HTTP/1.1 server on nugo::net, modelled on the experiment of the well-known Go
// scheduler article ("Go's work-stealing scheduler": an HTTP server whose /sleep handler
// blocks its thread in a real system call, and GODEBUG=schedtrace showing the threads pile
// up). The Go twin is experiments/baselines/go/apps/http, on net/http.
//
//   GET /echo   200 "hello"
//   GET /sleep  blocks 1 s in nanosleep(2) through nugo::syscall, then 200 "slept"
//   otherwise   404
//
// Keep-alive (HTTP/1.1 by default, HTTP/1.0 with "Connection: keep-alive"), pipelining,
// request bodies by Content-Length (read and dropped); no chunked requests (501).
// The response headers are Go's for the same handler: Date, Content-Length, Content-Type.
//
//   nugo-http [--addr A] [--port P] [--schedtrace MS]
// prints "listening on A:P" when ready; --schedtrace MS is the runtime's schedtrace
// (NUGO_DEBUG=schedtrace=MS, Go's GODEBUG=schedtrace format): a SCHED line on stderr every MS
// milliseconds, with the thread count.
#include <strings.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nugo/nugo.hpp>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "nugo-http: %s\nusage: nugo-http [--addr A] [--port P] [--schedtrace MS]\n", why.c_str());
  std::exit(2);
}

long number(const char* flag, const char* text, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < lo || v > hi) {
    std::fprintf(stderr, "nugo-http: %s: '%s' is not a number in [%ld, %ld]\n", flag, text, lo, hi);
    std::exit(2);
  }
  return v;
}

// The Date header, formatted once per second per connection.
class DateCache {
 public:
  std::string_view get() {
    time_t now = time(nullptr);
    if (now != at_) {
      at_ = now;
      tm t;
      gmtime_r(&now, &t);
      len_ = strftime(buf_, sizeof buf_, "%a, %d %b %Y %H:%M:%S GMT", &t);
    }
    return {buf_, len_};
  }

 private:
  time_t at_ = 0;
  char buf_[64];
  std::size_t len_ = 0;
};

void respond(std::string& out, DateCache& date, int status, std::string_view body, bool keep_alive) {
  out += status == 200 ? "HTTP/1.1 200 OK\r\n" : status == 404 ? "HTTP/1.1 404 Not Found\r\n"
         : status == 400 ? "HTTP/1.1 400 Bad Request\r\n" : "HTTP/1.1 501 Not Implemented\r\n";
  out += "Date: ";
  out += date.get();
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += "\r\nContent-Type: text/plain; charset=utf-8\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
}

bool header_is(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':' ||
      strncasecmp(line.data(), name.data(), name.size()) != 0)
    return false;
  std::string_view v = line.substr(name.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  *value = v;
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

void serve(nugo::net::Conn conn) {
  constexpr std::size_t kMaxHeader = 64 * 1024;
  std::string in, out;
  DateCache date;
  char buf[8192];
  for (;;) {
    // Handle every complete request in the buffer, then send their responses together.
    std::size_t end;
    bool close_after = false;
    while (!close_after && (end = in.find("\r\n\r\n")) != std::string::npos) {
      std::string_view head(in.data(), end);
      std::size_t eol = head.find("\r\n");
      std::string_view request = head.substr(0, eol);
      std::size_t sp1 = request.find(' '), sp2 = request.rfind(' ');
      if (sp1 == std::string_view::npos || sp2 == sp1) {
        respond(out, date, 400, "bad request line\n", false);
        close_after = true;
        break;
      }
      std::string_view method = request.substr(0, sp1), path = request.substr(sp1 + 1, sp2 - sp1 - 1);
      bool http11 = request.substr(sp2 + 1) == "HTTP/1.1";
      bool keep_alive = http11;
      std::size_t body = 0;
      bool chunked = false;
      for (std::size_t pos = eol; pos != std::string_view::npos && pos < head.size();) {
        std::size_t next = head.find("\r\n", pos + 2);
        std::string_view line = head.substr(pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
        std::string_view v;
        if (header_is(line, "Connection", &v))
          keep_alive = iequals(v, "close") ? false : iequals(v, "keep-alive") ? true : keep_alive;
        else if (header_is(line, "Content-Length", &v))
          body = std::strtoul(std::string(v).c_str(), nullptr, 10);
        else if (header_is(line, "Transfer-Encoding", &v))
          chunked = true;
        pos = next;
      }
      if (chunked) {
        respond(out, date, 501, "chunked requests are not supported\n", false);
        close_after = true;
        break;
      }
      if (in.size() < end + 4 + body) break;  // the body is still on its way
      if (method != "GET" && method != "HEAD" && method != "POST") {
        respond(out, date, 501, "method not implemented\n", keep_alive);
      } else if (path == "/echo") {
        respond(out, date, 200, "hello", keep_alive);
      } else if (path == "/sleep") {
        nugo::sys::nanosleep(std::chrono::seconds(1));  // a real system call, holding the thread
        respond(out, date, 200, "slept", keep_alive);
      } else {
        respond(out, date, 404, "404 page not found\n", keep_alive);
      }
      in.erase(0, end + 4 + body);
      close_after = !keep_alive;
    }
    if (!out.empty()) {
      if (!conn.write_all(out)) return;
      out.clear();
    }
    if (close_after) return;
    if (in.size() > kMaxHeader) {
      respond(out, date, 400, "request header too large\n", false);
      (void)conn.write_all(out);
      return;
    }
    auto r = conn.read(buf, sizeof buf);
    if (!r) return;  // EOF, reset, closed
    in.append(buf, r.n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string addr = "127.0.0.1";
  long port = 8080, trace_ms = 0;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") usage("an HTTP/1.1 server with /echo and /sleep");
    if (i + 1 >= argc) usage("missing value for " + flag);
    const char* v = argv[++i];
    if (flag == "--addr") addr = v;
    else if (flag == "--port") port = number("--port", v, 0, 65535);
    else if (flag == "--schedtrace") trace_ms = number("--schedtrace", v, 1, 3'600'000);
    else usage("unknown flag " + flag);
  }
  // The environment's settings, as nugo::run(main) would read them, plus the trace: a program
  // that reads the configuration itself reports a bad NUGO_* variable the same way.
  nugo::Config cfg;
  try {
    cfg = nugo::Config::from_env();
  } catch (const nugo::ConfigError& e) {
    std::fprintf(stderr, "nugo-http: %s\n", e.what());
    return 2;
  }
  if (trace_ms > 0) cfg.schedtrace = std::chrono::milliseconds(trace_ms);
  try {
  return nugo::run([&] {
    auto ln = nugo::net::listen(addr, static_cast<std::uint16_t>(port));
    if (!ln) {
      std::fprintf(stderr, "nugo-http: listen %s:%ld: %s\n", addr.c_str(), port, ln.error().message().c_str());
      return 1;
    }
    std::printf("listening on %s\n", ln->local_endpoint().to_string().c_str());
    std::fflush(stdout);
    for (;;) {
      auto c = ln->accept();
      if (!c) {
        if (c.error() == std::errc::too_many_files_open) {  // back off, as Go's server does
          nugo::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        std::fprintf(stderr, "nugo-http: accept: %s\n", c.error().message().c_str());
        return 1;
      }
      nugo::go([conn = std::move(*c)]() mutable { serve(std::move(conn)); });
    }
  }, cfg);
  } catch (const std::exception& e) {  // a bad topology or NUGO_STATS path, as run(main) would
    std::fprintf(stderr, "nugo-http: %s\n", e.what());
    return 2;
  }
}
