// I/O for goroutines: errors, results and deadlines shared by nugo::net, and waiting on any
// descriptor the caller owns.
//
// A goroutine that waits for a descriptor parks without holding a thread; the network poller
// (core/src/sched/netpoll.cpp) readies it when epoll reports the descriptor. Errors are returned,
// never thrown, on every path a program meets in normal operation:
//   nugo::io::Errc::eof        the peer closed its side (read returned 0)
//   nugo::io::Errc::closed     this side was closed, possibly while the call was waiting
//   nugo::io::Errc::timeout    the deadline passed
//   nugo::io::Errc::too_long   a line longer than a bufio::Reader's limit
//   std::errc::connection_reset, connection_refused, ...   what the kernel said (errno)
// Compare with ==: `if (r.err == nugo::io::Errc::timeout)`,
// `if (ec == std::errc::connection_refused)`.
//
// Outside goroutines (plain threads) the same calls work, waiting with poll(2) on the thread;
// there, closing from another thread does not interrupt a wait (deadlines still do).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
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
  too_long,        // bufio: a line longer than the reader's max_line
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

// A value or the error that prevented it: std::expected<T, std::error_code> under the same
// names, for C++20 (g++ 12's library has no std::expected), so that code moves to the
// standard type with a rename.
//   has_value(), explicit operator bool   is there a value?
//   value(), operator*, operator->        the value (every ref qualifier: *std::move(r)
//                                         moves it out); std::system_error(error()) if none
//   error()                               the error; an empty error_code when there is a value
//   value_or(v)                           the value, or v
//   and_then(f)                           f(value) -> Result<U>; an error passes through
//   transform(f)                          f(value) -> U, as a Result<U> (U may be void)
//   or_else(f)                            f(error) -> Result<T>; a value passes through
//   transform_error(f)                    f(error) -> std::error_code; a value passes through
// Made from a T (or anything T is made from, implicitly when it converts), in place
// (std::in_place, args...), or from an error: a std::error_code or an io::Errc.
//
// Where it differs from std::expected, on purpose: operator* and operator-> are checked and
// throw as value() does (std::expected's are undefined without a value), and error() with a
// value is an empty error_code (undefined there). The error type is always std::error_code,
// so transform_error's f returns one. An error Result<T> should hold a real error: one made
// from an empty error_code has no value and an empty error() (as
// std::unexpected(std::error_code()) would).
//
// Result<void> (below) is success or an error; there an empty error_code means success.
template <class T>
class Result;

namespace detail {
template <class R>
inline constexpr bool is_result = false;
template <class U>
inline constexpr bool is_result<Result<U>> = true;

// What or_else's f returns, given the error.
template <class F>
using error_handler_result = std::remove_cvref_t<std::invoke_result_t<F, const std::error_code&>>;

// What Result<T>'s value constructor takes: what makes a T, except the other constructors'
// arguments (so that an error never becomes a value).
template <class T, class U>
concept result_value_argument =
    std::is_constructible_v<T, U> && !is_result<std::remove_cvref_t<U>> &&
    !std::is_same_v<std::remove_cvref_t<U>, std::in_place_t> &&
    !std::is_same_v<std::remove_cvref_t<U>, std::error_code> &&
    !std::is_same_v<std::remove_cvref_t<U>, Errc>;
}  // namespace detail

template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported (nor is std::expected<T&>)");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, std::error_code>,
                "Result<std::error_code> could not tell a value from an error");

 public:
  using value_type = T;
  using error_type = std::error_code;
  template <class U>
  using rebind = Result<U>;

  Result() requires std::is_default_constructible_v<T> : value_(std::in_place) {}
  template <class U = T>
    requires detail::result_value_argument<T, U>
  explicit(!std::is_convertible_v<U, T>) Result(U&& value) : value_(std::forward<U>(value)) {}
  template <class... Args>
  explicit Result(std::in_place_t, Args&&... args)
      : value_(std::in_place, std::forward<Args>(args)...) {}
  Result(std::error_code err) : err_(err) {}
  Result(Errc err) : err_(err) {}

  bool has_value() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  const std::error_code& error() const noexcept { return err_; }

  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  const T&& value() const&& { check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T&& operator*() const&& { return std::move(*this).value(); }
  T* operator->() { return std::addressof(value()); }
  const T* operator->() const { return std::addressof(value()); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }
  template <class U>
  T value_or(U&& fallback) && {
    return has_value() ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback));
  }

  // The monadic operations, each in std::expected's four forms: f gets the value as this
  // Result holds it (an rvalue Result hands its value over as an rvalue).
  template <class F>
  auto and_then(F&& f) & {
    return and_then_impl(*this, std::forward<F>(f));
  }
  template <class F>
  auto and_then(F&& f) const& {
    return and_then_impl(*this, std::forward<F>(f));
  }
  template <class F>
  auto and_then(F&& f) && {
    return and_then_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  auto and_then(F&& f) const&& {
    return and_then_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  auto transform(F&& f) & {
    return transform_impl(*this, std::forward<F>(f));
  }
  template <class F>
  auto transform(F&& f) const& {
    return transform_impl(*this, std::forward<F>(f));
  }
  template <class F>
  auto transform(F&& f) && {
    return transform_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  auto transform(F&& f) const&& {
    return transform_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  Result or_else(F&& f) & {
    return or_else_impl(*this, std::forward<F>(f));
  }
  template <class F>
  Result or_else(F&& f) const& {
    return or_else_impl(*this, std::forward<F>(f));
  }
  template <class F>
  Result or_else(F&& f) && {
    return or_else_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  Result or_else(F&& f) const&& {
    return or_else_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  Result transform_error(F&& f) & {
    return transform_error_impl(*this, std::forward<F>(f));
  }
  template <class F>
  Result transform_error(F&& f) const& {
    return transform_error_impl(*this, std::forward<F>(f));
  }
  template <class F>
  Result transform_error(F&& f) && {
    return transform_error_impl(std::move(*this), std::forward<F>(f));
  }
  template <class F>
  Result transform_error(F&& f) const&& {
    return transform_error_impl(std::move(*this), std::forward<F>(f));
  }

 private:
  void check() const {
    if (!has_value()) throw std::system_error(err_);
  }

  // Self is Result&, const Result&, Result or const Result: forwarding self and taking
  // *self.value_ gives f the value with the qualifiers of the Result it was called on.
  template <class Self>
  using forwarded_value = decltype(*std::declval<Self>().value_);

  template <class Self, class F>
  static auto and_then_impl(Self&& self, F&& f) {
    using R = std::remove_cvref_t<std::invoke_result_t<F, forwarded_value<Self>>>;
    static_assert(detail::is_result<R>, "and_then: f must return a nugo::io::Result");
    if (!self.has_value()) return R(self.err_);
    return R(std::invoke(std::forward<F>(f), *std::forward<Self>(self).value_));
  }

  template <class Self, class F>
  static auto transform_impl(Self&& self, F&& f) {
    using U = std::remove_cv_t<std::invoke_result_t<F, forwarded_value<Self>>>;
    if (!self.has_value()) return Result<U>(self.err_);
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f), *std::forward<Self>(self).value_);
      return Result<U>();
    } else {
      return Result<U>(std::in_place,
                       std::invoke(std::forward<F>(f), *std::forward<Self>(self).value_));
    }
  }

  template <class Self, class F>
  static Result or_else_impl(Self&& self, F&& f) {
    static_assert(std::is_same_v<detail::error_handler_result<F>, Result>,
                  "or_else: f must return a Result of the same type");
    if (self.has_value()) return Result(std::in_place, *std::forward<Self>(self).value_);
    return std::invoke(std::forward<F>(f), self.err_);
  }

  template <class Self, class F>
  static Result transform_error_impl(Self&& self, F&& f) {
    if (self.has_value()) return Result(std::in_place, *std::forward<Self>(self).value_);
    return std::error_code(std::invoke(std::forward<F>(f), self.err_));
  }

  std::optional<T> value_;
  std::error_code err_;
};

// Success or the error that prevented it (std::expected<void, std::error_code>). An
// error_code converts to it as it is: empty means success. There is no value, so no
// value_or or operator->; value() and operator* only check (and throw). f in and_then and
// transform takes no argument.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  using error_type = std::error_code;
  template <class U>
  using rebind = Result<U>;

  Result() = default;
  explicit Result(std::in_place_t) {}
  Result(std::error_code err) : err_(err) {}
  Result(Errc err) : err_(err) {}

  bool has_value() const noexcept { return !err_; }
  explicit operator bool() const noexcept { return has_value(); }
  const std::error_code& error() const noexcept { return err_; }
  void value() const {
    if (err_) throw std::system_error(err_);
  }
  void operator*() const { value(); }

  template <class F>
  auto and_then(F&& f) const {
    using R = std::remove_cvref_t<std::invoke_result_t<F>>;
    static_assert(detail::is_result<R>, "and_then: f must return a nugo::io::Result");
    if (!has_value()) return R(err_);
    return R(std::invoke(std::forward<F>(f)));
  }
  template <class F>
  auto transform(F&& f) const {
    using U = std::remove_cv_t<std::invoke_result_t<F>>;
    if (!has_value()) return Result<U>(err_);
    if constexpr (std::is_void_v<U>) {
      std::invoke(std::forward<F>(f));
      return Result<U>();
    } else {
      return Result<U>(std::in_place, std::invoke(std::forward<F>(f)));
    }
  }
  template <class F>
  Result or_else(F&& f) const {
    static_assert(std::is_same_v<detail::error_handler_result<F>, Result>,
                  "or_else: f must return a Result<void>");
    if (has_value()) return *this;
    return std::invoke(std::forward<F>(f), err_);
  }
  template <class F>
  Result transform_error(F&& f) const {
    if (has_value()) return *this;
    return std::error_code(std::invoke(std::forward<F>(f), err_));
  }

 private:
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
