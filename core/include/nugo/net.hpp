// TCP and UDP for goroutines (Go's net package, its common half). Sockets are non-blocking
// underneath; a goroutine that must wait parks on the network poller and holds no thread,
// so one process serves tens of thousands of connections with gomaxprocs threads.
//
//   auto ln = nugo::net::listen("127.0.0.1", 0);           // port 0: the kernel picks one
//   nugo::go([&] { auto c = nugo::net::dial("127.0.0.1", ln->port()); c->write_all("hi", 2); });
//   auto conn = ln->accept();
//   char buf[2];
//   if (auto r = conn->read_full(buf, 2); !r) handle(r.err);
//
// Addresses are numeric: IPv4 ("127.0.0.1"), IPv6 ("::1", "[::1]"), "localhost" (127.0.0.1)
// or "" (any IPv4 address, for listening). Names are not resolved (that would block a thread
// in getaddrinfo; do it yourself inside nugo::syscall).
//
// Errors are described in nugo/io.hpp. Each object may be used by several goroutines at once:
// reads are serialized among themselves, writes too (so write_all calls never interleave),
// and close() from any goroutine wakes those waiting with io::Errc::closed.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "nugo/io.hpp"

namespace nugo::net {

using io::Deadline;
using io::IoResult;
using io::no_deadline;
using io::Result;

namespace detail {
class NetFD;
}

// A socket address: IPv4 or IPv6, with a port.
class Endpoint {
 public:
  Endpoint() = default;
  // Parses a numeric address (see above); io::Errc::bad_address otherwise.
  static Result<Endpoint> resolve(std::string_view address, std::uint16_t port);

  std::string address() const;  // "127.0.0.1", "::1"
  std::uint16_t port() const;
  std::string to_string() const;  // "127.0.0.1:80", "[::1]:80"
  int family() const { return storage_.ss_family; }
  const sockaddr* data() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t size() const { return len_; }
  sockaddr* mutable_data() { return reinterpret_cast<sockaddr*>(&storage_); }
  void set_size(socklen_t len) { len_ = len; }

 private:
  sockaddr_storage storage_{};
  socklen_t len_ = 0;
};

// A descriptor with its poller registration; the base of Conn, Listener and UdpConn.
// Move-only; the destructor closes it.
class Socket {
 public:
  Socket() = default;
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();

  // Closes the socket; goroutines blocked in it return io::Errc::closed. The second close
  // returns io::Errc::closed as well.
  std::error_code close();
  bool is_open() const;
  int fd() const;  // -1 once closed
  Endpoint local_endpoint() const;

  // Deadlines for pending and future calls; no_deadline clears one. A call that reaches its
  // deadline returns io::Errc::timeout and leaves the socket usable: set a later deadline
  // and carry on.
  void set_deadline(Deadline d);
  void set_read_deadline(Deadline d);
  void set_write_deadline(Deadline d);

 protected:
  explicit Socket(detail::NetFD* fd) : fd_(fd) {}
  detail::NetFD* fd_ = nullptr;
};

// A TCP connection.
class Conn : public Socket {
 public:
  Conn() = default;

  // Reads what is there (at least 1 byte) or waits for it; io::Errc::eof at the end.
  IoResult read(void* buf, std::size_t len);
  // Reads exactly len bytes unless something goes wrong: io::Errc::eof if the stream ended
  // before the first byte, io::Errc::unexpected_eof if it ended after some.
  IoResult read_full(void* buf, std::size_t len);
  // Writes at least one byte (may be fewer than len), waiting while the socket buffer is full.
  IoResult write(const void* buf, std::size_t len);
  // Writes all of buf, across partial writes; n says how much went out if it fails.
  IoResult write_all(const void* buf, std::size_t len);
  IoResult write_all(std::string_view s) { return write_all(s.data(), s.size()); }
  // Half-close: the peer reads io::Errc::eof after what was sent; this side can still read.
  std::error_code shutdown_write();
  Endpoint remote_endpoint() const;

 private:
  friend class Listener;
  friend Result<Conn> dial(std::string_view, std::uint16_t, std::chrono::nanoseconds);
  using Socket::Socket;
};

// A listening TCP socket.
class Listener : public Socket {
 public:
  Listener() = default;
  // Waits for the next connection (honours set_deadline / set_read_deadline).
  Result<Conn> accept();
  std::uint16_t port() const { return local_endpoint().port(); }

 private:
  friend Result<Listener> listen(std::string_view, std::uint16_t, int);
  using Socket::Socket;
};

// Listens on address:port (port 0: any free port), with SO_REUSEADDR.
Result<Listener> listen(std::string_view address, std::uint16_t port, int backlog = 4096);
// Connects to address:port, giving up with io::Errc::timeout after `timeout` (zero or
// negative: no limit but the kernel's). std::errc::connection_refused if nobody listens.
Result<Conn> dial(std::string_view address, std::uint16_t port,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());

// A UDP socket.
class UdpConn : public Socket {
 public:
  UdpConn() = default;
  // Receives one datagram (truncated to len), and who sent it if from is not null.
  IoResult read_from(void* buf, std::size_t len, Endpoint* from = nullptr);
  // Sends one datagram to `to`.
  IoResult write_to(const void* buf, std::size_t len, const Endpoint& to);

 private:
  friend Result<UdpConn> listen_udp(std::string_view, std::uint16_t);
  using Socket::Socket;
};

// A UDP socket bound to address:port (port 0: any free port).
Result<UdpConn> listen_udp(std::string_view address, std::uint16_t port);

}  // namespace nugo::net
