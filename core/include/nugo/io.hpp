// I/O for goroutines: errors, results and deadlines shared by nugo::net, and waiting on any
// descriptor the caller owns.
//
// A goroutine that waits for a descriptor parks without holding a thread; the network poller
// (core/src/netpoll.cpp) readies it when epoll reports the descriptor. Errors are returned,
// never thrown, on every path a program meets in normal operation:
//   nugo::io::Errc::eof        the peer closed its side (read returned 0)
//   nugo::io::Errc::closed     this side was closed, possibly while the call was waiting
//   nugo::io::Errc::timeout    the deadline passed
//   std::errc::connection_reset, connection_refused, ...   what the kernel said (errno)
// Compare with ==: `if (r.err == nugo::io::Errc::timeout)`,
// `if (ec == std::errc::connection_refused)`.
//
// Outside goroutines (plain threads) the same calls work, waiting with poll(2) on the thread;
// there, closing from another thread does not interrupt a wait (deadlines still do).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

namespace nugo::io {

enum class Errc {
  eof = 1,         // end of stream: the peer will send no more
  closed,          // the descriptor was closed (by this process)
  timeout,         // the deadline passed
  unexpected_eof,  // read_full: the stream ended inside the requested span
  bad_address,     // an address that is neither numeric IPv4, IPv6, "localhost" nor ""
};

const std::error_category& category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), category()}; }

}  // namespace nugo::io

template <>
struct std::is_error_code_enum<nugo::io::Errc> : std::true_type {};

namespace nugo::io {

// Deadlines are absolute times on the steady clock, as in Go's SetDeadline.
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
inline constexpr Deadline no_deadline = Deadline::max();

// What a read or a write did: n bytes moved, then err (none, or why it stopped). Both can be
// set: write_all may have written part of the buffer before the connection broke.
struct [[nodiscard]] IoResult {
  std::size_t n = 0;
  std::error_code err;
  explicit operator bool() const noexcept { return !err; }
};

// A value or the error that prevented it (std::expected's shape, for C++20).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(std::error_code err) : err_(err) {}
  Result(Errc err) : err_(err) {}

  explicit operator bool() const noexcept { return !err_; }
  const std::error_code& error() const noexcept { return err_; }
  // The value; throws std::system_error if there is none.
  T& value() & { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }

 private:
  void check() const {
    if (err_) throw std::system_error(err_);
  }
  std::optional<T> value_;
  std::error_code err_;
};

// Parks the calling goroutine until fd is readable (writable), deadline passes
// (Errc::timeout) or evict(fd) is called (Errc::closed). fd should be non-blocking, and the
// caller should expect to retry: like poll(2), a report of readiness may be stale by the
// time the caller acts on it. At most one goroutine may wait per direction and descriptor;
// a second gets std::errc::device_or_resource_busy.
std::error_code wait_readable(int fd, Deadline deadline = no_deadline);
std::error_code wait_writable(int fd, Deadline deadline = no_deadline);
// Wakes the goroutines waiting on fd with Errc::closed and forgets the descriptor. Call it
// before closing a descriptor that others may be waiting on.
void evict(int fd);

}  // namespace nugo::io
