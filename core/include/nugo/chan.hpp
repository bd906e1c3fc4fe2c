// nugo::Chan<T>, nugo::select and nugo::select_value: Go's channels.
//
//   nugo::Chan<int> ch;          // unbuffered (make(chan int))
//   nugo::Chan<int> jobs(100);   // buffered
//   nugo::go([=] { ch.send(42); ch.close(); });
//   for (int v : ch) use(v);     // until closed and drained
//
//   nugo::select(
//       nugo::on_recv(jobs, [](std::optional<int> v) { /* v empty: jobs is closed */ }),
//       nugo::on_send(results, 7, [] { /* sent */ }),
//       nugo::on_recv(nugo::after(100ms), [](auto) { /* timed out */ }),
//       nugo::on_default([] { /* nothing was ready */ }));
//
//   // select_value: the chosen handler's result, as the handlers' common type.
//   int v = nugo::select_value(
//       nugo::on_recv(jobs, [](std::optional<int> j) { return j.value_or(-1); }),  // -1: closed
//       nugo::on_recv(nugo::after(100ms), [](auto) { return 0; }));
//
// A Chan is a handle: copies refer to the same channel. Sending on a closed channel and
// closing a closed channel throw nugo::Panic in the offending goroutine (an uncaught Panic ends
// the process, like Go's panic). Blocking operations must be called from a goroutine;
// try_send/try_recv and close may be called from any thread.
#pragma once

#include <cstddef>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace nugo {

// A Go runtime panic raised as an exception in the goroutine that caused it.
class Panic : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

struct hchan;

// How the type-erased channel core moves and destroys elements.
struct ElemOps {
  void (*move_construct)(void* dst, void* src);
  void (*destroy)(void* obj);
  std::size_t size;
  std::size_t align;
};

template <class T>
inline constexpr ElemOps elem_ops{
    [](void* dst, void* src) { ::new (dst) T(std::move(*static_cast<T*>(src))); },
    [](void* obj) { static_cast<T*>(obj)->~T(); }, sizeof(T), alignof(T)};

hchan* makechan(const ElemOps* ops, std::size_t cap);
void chan_retain(hchan* c);
void chan_release(hchan* c);
// Moves *src into the channel. false only when !block and the send would block.
bool chansend(hchan* c, void* src, bool block);
struct RecvStatus {
  bool selected;  // false: !block and nothing to receive
  bool received;  // an element was constructed at dst; false with selected: closed
};
RecvStatus chanrecv(hchan* c, void* dst, bool block);
void closechan(hchan* c);
std::size_t chanlen(const hchan* c);
std::size_t chancap(const hchan* c);

struct SelectCase {
  hchan* c;    // nullptr: a nil channel, never ready
  void* elem;  // send: the value to move from; receive: storage to construct into
  bool send;
};
struct SelectResult {
  int index;  // -1: no case was ready (only without blocking)
  bool recv_ok;
};
SelectResult selectgo(SelectCase* cases, int ncases, bool block);

template <class T>
std::optional<T> take(void* storage) {
  T* p = std::launder(static_cast<T*>(storage));
  std::optional<T> v(std::move(*p));
  p->~T();
  return v;
}

struct Noop {
  template <class... A>
  void operator()(A&&...) const {}
};

}  // namespace detail

template <class T>
class Chan {
  // Elements move under the channel's lock; a throwing move would leave it locked.
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "nugo::Chan<T>: T must be nothrow move constructible");

 public:
  using value_type = T;

  Chan() : Chan(std::size_t{0}) {}
  explicit Chan(std::size_t capacity) : c_(detail::makechan(&detail::elem_ops<T>, capacity)) {}
  // A nil channel: sends and receives on it block forever, a select never chooses it.
  static Chan nil() { return Chan(Nil{}); }

  Chan(const Chan& o) : c_(o.c_) { if (c_) detail::chan_retain(c_); }
  Chan(Chan&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  Chan& operator=(Chan o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  ~Chan() { if (c_) detail::chan_release(c_); }

  void send(T v) const { detail::chansend(c_, &v, true); }
  // Sends without blocking; false (and v is dropped) if the send would block.
  bool try_send(T v) const { return detail::chansend(c_, &v, false); }

  // The next value; empty once the channel is closed and drained (Go's `v, ok := <-ch`).
  std::optional<T> recv() const {
    alignas(T) unsigned char storage[sizeof(T)];
    if (!detail::chanrecv(c_, storage, true).received) return std::nullopt;
    return detail::take<T>(storage);
  }

  struct TryRecv {
    bool ready;                // false: a receive would block
    std::optional<T> value;    // with ready: empty if the channel is closed and drained
  };
  TryRecv try_recv() const {
    alignas(T) unsigned char storage[sizeof(T)];
    auto st = detail::chanrecv(c_, storage, false);
    if (!st.received) return {st.selected, std::nullopt};
    return {true, detail::take<T>(storage)};
  }

  void close() const { detail::closechan(c_); }
  std::size_t len() const { return c_ ? detail::chanlen(c_) : 0; }
  std::size_t cap() const { return c_ ? detail::chancap(c_) : 0; }
  bool operator==(const Chan& o) const { return c_ == o.c_; }

  // for (T v : ch): receives until the channel is closed and drained.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(const Chan* ch) : ch_(ch) { ++*this; }
    T& operator*() { return *v_; }
    iterator& operator++() {
      v_ = ch_->recv();
      return *this;
    }
    bool operator==(std::default_sentinel_t) const { return !v_; }

   private:
    const Chan* ch_ = nullptr;
    std::optional<T> v_;
  };
  iterator begin() const { return iterator(this); }
  std::default_sentinel_t end() const { return {}; }

  detail::hchan* raw() const { return c_; }

 private:
  struct Nil {};
  explicit Chan(Nil) : c_(nullptr) {}
  detail::hchan* c_;
};

// ---- select ----

// A case made from a named channel refers to it (the caller keeps it alive, as with any
// reference); a case made from a temporary channel, such as after()'s, takes it over, so a
// case kept in a variable cannot outlive its channel. Either way no reference count changes.
template <class T>
struct CaseChan {
  Chan<T> owned = Chan<T>::nil();
  detail::hchan* c = nullptr;
  explicit CaseChan(const Chan<T>& named) : c(named.raw()) {}
  explicit CaseChan(Chan<T>&& temporary) : owned(std::move(temporary)), c(owned.raw()) {}
  CaseChan(CaseChan&& o) noexcept : owned(std::move(o.owned)), c(o.c) {}
};

// A case's complete() runs its handler once the case is chosen and returns the handler's
// result (result_type): select drops it, select_value returns it.
template <class T, class F>
struct RecvCase {
  using result_type = std::invoke_result_t<F&, std::optional<T>>;
  CaseChan<T> ch;
  F f;
  alignas(T) unsigned char storage[sizeof(T)];
  detail::SelectCase as_case() { return {ch.c, storage, false}; }
  result_type complete(bool ok) {
    if (ok)
      return f(detail::take<T>(storage));
    else
      return f(std::optional<T>{});
  }
};

template <class T, class F>
struct SendCase {
  using result_type = std::invoke_result_t<F&>;
  CaseChan<T> ch;
  T value;
  F f;
  detail::SelectCase as_case() { return {ch.c, &value, true}; }
  result_type complete(bool) { return f(); }
};

template <class F>
struct DefaultCase {
  using result_type = std::invoke_result_t<F&>;
  F f;
  result_type complete(bool) { return f(); }
};

// case v, ok := <-ch: f receives std::optional<T> (empty: closed).
template <class C, class F = detail::Noop, class T = typename std::decay_t<C>::value_type>
RecvCase<T, F> on_recv(C&& ch, F f = {}) {
  return {CaseChan<T>(std::forward<C>(ch)), std::move(f), {}};
}
// case ch <- v: f() runs after the send.
template <class C, class U, class F = detail::Noop,
          class T = typename std::decay_t<C>::value_type>
SendCase<T, F> on_send(C&& ch, U&& value, F f = {}) {
  return {CaseChan<T>(std::forward<C>(ch)), T(std::forward<U>(value)), std::move(f)};
}
// default: runs if no other case is ready.
template <class F = detail::Noop>
DefaultCase<F> on_default(F f = {}) {
  return {std::move(f)};
}

namespace detail {
template <class C>
struct is_default_case : std::false_type {};
template <class F>
struct is_default_case<DefaultCase<F>> : std::true_type {};

struct Choice {
  int position;  // the chosen case's position among the arguments
  bool recv_ok;  // a chosen receive got a value (false: its channel is closed)
};

// What select and select_value share: gathers the channel cases and lets selectgo choose
// (blocking unless there is a default case). No handler has run yet.
template <class... Cases>
Choice choose(Cases&... cases) {
  constexpr int kDefaults = (is_default_case<std::decay_t<Cases>>::value + ... + 0);
  static_assert(kDefaults <= 1, "nugo::select, select_value: at most one on_default case");
  constexpr int kCases = sizeof...(Cases) - kDefaults;
  auto all = std::forward_as_tuple(cases...);

  SelectCase sc[kCases > 0 ? kCases : 1];
  int position[kCases > 0 ? kCases : 1];  // argument position of each channel case
  int default_position = -1;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    int n = 0;
    auto add = [&](auto& c, int pos) {
      if constexpr (is_default_case<std::decay_t<decltype(c)>>::value) {
        default_position = pos;
      } else {
        sc[n] = c.as_case();
        position[n++] = pos;
      }
    };
    (add(std::get<I>(all), static_cast<int>(I)), ...);
  }(std::index_sequence_for<Cases...>{});

  SelectResult r = selectgo(sc, kCases, kDefaults == 0);
  return {r.index < 0 ? default_position : position[r.index], r.recv_ok};
}

// Runs the handler of the case at position `chosen` and returns its result as R (R void:
// dropped). The handler's result initializes R directly: R is built once, may be move-only,
// and need not even be movable when the handler returns exactly R. A chain of comparisons
// against constants; the last case needs none, as one case was chosen.
template <class R, int I = 0, class C, class... Rest>
R complete_chosen(int chosen, bool recv_ok, C& c, Rest&... rest) {
  if constexpr (sizeof...(Rest) > 0) {
    if (chosen != I) return complete_chosen<R, I + 1>(chosen, recv_ok, rest...);
  }
  if constexpr (std::is_void_v<R>)
    static_cast<void>(c.complete(recv_ok));
  else
    return c.complete(recv_ok);
}

template <class... Ts>
concept have_common_type = requires { typename std::common_type_t<Ts...>; };
}  // namespace detail

// Go's select: blocks until one case can proceed (or, with on_default, runs the default when
// none can), chooses uniformly at random among the ready cases, runs that case's handler and
// returns its position among the arguments. Handlers' results are ignored.
template <class... Cases>
int select(Cases&&... cases) {
  detail::Choice chosen = detail::choose(cases...);
  if constexpr (sizeof...(Cases) > 0)
    detail::complete_chosen<void>(chosen.position, chosen.recv_ok, cases...);
  return chosen.position;
}

// select that returns the chosen handler's result, converted to the common type of all the
// handlers' results (std::common_type_t, so decayed: a handler returning a reference gives a
// copy). Every case needs a handler that returns a value: on_recv's is called with
// std::optional<T> (empty: closed), on_send's and on_default's with nothing.
template <class... Cases>
auto select_value(Cases&&... cases) {
  static_assert(sizeof...(Cases) > 0, "nugo::select_value: needs at least one case");
  constexpr bool kVoid = (std::is_void_v<typename std::decay_t<Cases>::result_type> || ...);
  static_assert(!kVoid,
                "nugo::select_value: every case needs a handler that returns a value (on_recv(ch) "
                "and on_send(ch, v) without one return nothing; nugo::select ignores results)");
  constexpr bool kCommon =
      detail::have_common_type<typename std::decay_t<Cases>::result_type...>;
  static_assert(sizeof...(Cases) == 0 || kVoid || kCommon,
                "nugo::select_value: the handlers' results have no common type "
                "(std::common_type_t); make them return one type");
  if constexpr (sizeof...(Cases) == 0 || kVoid || !kCommon) {
    return;  // the static_asserts above say why
  } else {
    using R = std::common_type_t<typename std::decay_t<Cases>::result_type...>;
    detail::Choice chosen = detail::choose(cases...);
    return detail::complete_chosen<R>(chosen.position, chosen.recv_ok, cases...);
  }
}

}  // namespace nugo
