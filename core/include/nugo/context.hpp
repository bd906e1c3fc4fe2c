// nugo::Context: Go's context package (cancellation, deadlines), and its bridge to C++20's
// std::stop_token.
//
//   auto [ctx, cancel] = nugo::with_timeout(nugo::Context::background(), 100ms);
//   nugo::go([ctx] {
//     for (;;) {
//       int r = nugo::select(nugo::on_recv(ctx.done()), nugo::on_recv(jobs, handle));
//       if (r == 0) return;  // ctx.err() says why: ContextErrc::canceled or deadline_exceeded
//     }
//   });
//   ...
//   cancel();  // always call it when done: it releases the timer and the parent's link
//
// As in Go, a Context is a tree: cancelling one cancels every context derived from it, and a
// derived context is cancelled at once if its parent already is. A Context is a handle (copies
// share the same context, as Go's interface values do) and may be used from any goroutine or
// thread. Unlike Go, a derived context that is dropped without being cancelled unlinks itself
// from its parent when its last handle goes: forgetting cancel leaks nothing but an unstopped
// timer (until it fires).
//
// Cancelling closes the context's done() channel, which wakes goroutines: like a channel
// close, it must not be done inside a nugo::syscall body (nugo/syscall.hpp).
//
// std::stop_token: with_stop_token(parent, token) is a context that is also cancelled when a
// stop is requested on token (std::jthread's, a std::stop_source's); on_stop(token) is a select
// case that fires when a stop is requested.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "nugo/chan.hpp"
#include "nugo/time.hpp"

namespace nugo {

// Why a context was cancelled: Go's context.Canceled and context.DeadlineExceeded.
enum class ContextErrc {
  canceled = 1,       // its cancel function was called, or its parent's, or a stop requested
  deadline_exceeded,  // its deadline, or its parent's, passed
};

const std::error_category& context_category() noexcept;
inline std::error_code make_error_code(ContextErrc e) noexcept {
  return {static_cast<int>(e), context_category()};
}

}  // namespace nugo

template <>
struct std::is_error_code_enum<nugo::ContextErrc> : std::true_type {};

namespace nugo {
namespace detail {
struct ContextState;
}

// What done() delivers: nothing, it is closed (Go's chan struct{}).
using Signal = std::monostate;

class Context {
 public:
  // Go's context.Background(): never cancelled, no deadline. Default construction gives it too.
  static Context background() { return Context(); }
  Context() = default;

  // Closed when the context is cancelled; a select case (on_recv(ctx.done())) or a receive
  // (ctx.done().recv() waits for it). background()'s is a nil channel: never ready.
  const Chan<Signal>& done() const;
  // Empty while the context is live; ContextErrc::canceled or ::deadline_exceeded once it is
  // cancelled (Go's Err).
  std::error_code err() const;
  // When it will be cancelled by itself, if it has a deadline (its own or an ancestor's).
  std::optional<Clock::time_point> deadline() const;

  bool operator==(const Context& o) const { return s_ == o.s_; }

 private:
  friend class CancelFunc;
  friend struct detail::ContextState;
  explicit Context(std::shared_ptr<detail::ContextState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::ContextState> s_;  // null: background
};

// Go's CancelFunc: cancels its context (with ContextErrc::canceled) and every context derived
// from it. Later calls do nothing. Copyable; callable from any goroutine or thread.
class CancelFunc {
 public:
  void operator()() const;

 private:
  friend struct detail::ContextState;
  explicit CancelFunc(std::shared_ptr<detail::ContextState> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::ContextState> s_;
};

// A derived context and the function that cancels it: auto [ctx, cancel] = with_cancel(p);
struct WithCancel {
  Context ctx;
  CancelFunc cancel;
};

// Go's context.WithCancel.
WithCancel with_cancel(const Context& parent);
// Go's context.WithDeadline: also cancelled, with ContextErrc::deadline_exceeded, at d (or at
// the parent's deadline, if that is earlier). Needs a running runtime (its timer is a
// runtime timer), else std::logic_error. A deadline still pending when run() returns goes
// with the runtime instance: the context is then not cancelled by it (cancel() still works).
WithCancel with_deadline(const Context& parent, Clock::time_point d);
// Go's context.WithTimeout: with_deadline(parent, now + d).
template <class Rep, class Period>
WithCancel with_timeout(const Context& parent, std::chrono::duration<Rep, Period> d) {
  return with_deadline(parent, Clock::time_point(std::chrono::nanoseconds(detail::deadline_after(d))));
}
// A context cancelled (ContextErrc::canceled) when a stop is requested on token, or when the
// parent is, or by its cancel function; at once if the stop was requested already. The
// token's stop callback runs cancel on the thread that calls request_stop().
WithCancel with_stop_token(const Context& parent, std::stop_token token);

namespace detail {
// Closes its channel when a stop is requested (on the requesting thread).
struct CloseOnStop {
  Chan<Signal> c;
  void operator()() noexcept { c.close(); }
};
// on_stop's handler: owns the registration (destroyed with the case, which unregisters it and
// waits for a callback under way) and calls the user's handler with no argument.
template <class F>
struct StopHandler {
  std::unique_ptr<std::stop_callback<CloseOnStop>> registration;
  F f;
  decltype(auto) operator()(std::optional<Signal>) { return f(); }
};
}  // namespace detail

// A select case that is ready once a stop has been requested on token; f() then runs. A
// token that can never be stopped gives a case that is never ready.
template <class F = detail::Noop>
RecvCase<Signal, detail::StopHandler<F>> on_stop(std::stop_token token, F f = {}) {
  if (!token.stop_possible())
    return {CaseChan<Signal>(Chan<Signal>::nil()), {nullptr, std::move(f)}, {}};
  Chan<Signal> c;
  auto registration = std::make_unique<std::stop_callback<detail::CloseOnStop>>(
      std::move(token), detail::CloseOnStop{c});
  return {CaseChan<Signal>(std::move(c)), {std::move(registration), std::move(f)}, {}};
}

}  // namespace nugo
