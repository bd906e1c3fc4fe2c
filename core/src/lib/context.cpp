// nugo::Context (nugo/context.hpp): Go's cancelCtx and timerCtx in one state object.
//
// The tree: a cancelable context registers with its nearest cancelable ancestor's children
// (background has none), and the ancestor's cancel cancels them in turn, with its own error.
// Locks are taken parent before child (cancel holds a context's lock while it cancels its
// children); a context leaving its parent (cancelled by itself, or destroyed) takes the
// parent's lock only after releasing its own.
//
// The deadline is a runtime timer (timer.hpp) whose callback runs on some M's g0 and cancels.
// The timer holds a reference to the state (a heap-allocated Fire), so the state outlives a
// firing under way; whoever takes the timer out of the heap, the cancel (deltimer) or the
// firing, frees the Fire.
#include "nugo/context.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <map>
#include <vector>

#include "futex.hpp"
#include "../sched/link.hpp"
#include "tsa.hpp"

namespace nugo {
namespace {

class ContextCategory : public std::error_category {
 public:
  const char* name() const noexcept override { return "nugo.context"; }
  std::string message(int e) const override {
    switch (static_cast<ContextErrc>(e)) {
      case ContextErrc::canceled: return "context canceled";
      case ContextErrc::deadline_exceeded: return "context deadline exceeded";
    }
    return "unknown context error";
  }
};

}  // namespace

const std::error_category& context_category() noexcept {
  static const ContextCategory category;
  return category;
}

namespace detail {


// with_stop_token's stop callback: cancels, holding a reference for the time of the call. It
// holds none in between (the state owns the callback); a state whose last reference is gone
// is being destroyed, and its destructor waits for this call to return before it goes on.
struct CancelOnStop {
  ContextState* state;
  void operator()() const noexcept;
};

struct ContextState : std::enable_shared_from_this<ContextState> {
  // The timer's reference: freed by whoever dequeues the timer (see the file comment).
  struct Fire {
    Timer t;
    std::shared_ptr<ContextState> state;
  };

  ContextState(std::shared_ptr<ContextState> parent, std::int64_t deadline)
      : parent(std::move(parent)), deadline(deadline) {}

  ~ContextState() {
    // The stop callback first: its destructor waits for a call under way on another thread,
    // which still uses this state.
    stop.reset();
    if (parent) parent->remove_child(this);
  }

  // Registers with the parent, or takes its cancellation over at once.
  void attach() {
    if (!parent) return;
    std::error_code parent_err;
    {
      NoPreempt np;
      LockGuard lock(parent->mu);
      parent_err = parent->err_locked;
      if (!parent_err) {
        child_seq = parent->next_child++;
        parent->children.emplace(child_seq, this);
      }
    }
    if (parent_err) cancel(parent_err, false);
  }

  void remove_child(ContextState* child) {
    NoPreempt np;
    LockGuard lock(mu);
    // Only its own entry: a child that never attached (its parent was cancelled first) has
    // no key of its own.
    if (auto it = children.find(child->child_seq); it != children.end() && it->second == child)
      children.erase(it);
  }

  // Go's cancelCtx.cancel: the first call cancels the children (with the same error), then
  // publishes err, closes done and stops the timer; later calls do nothing. All of it under
  // mu, so a second caller returns only once the first is done. Children first (Go closes its
  // own done first): whoever sees this context cancelled, by err() or done(), sees the whole
  // subtree cancelled too. The caller holds a reference.
  //
  // Locks nest from ancestor to descendant only (attach and remove_child take a parent's
  // lock while holding none). A child is cancelled through a reference taken under mu, so
  // it cannot be destroyed meanwhile; a child whose last reference is already gone is being
  // destroyed and is skipped (its destructor is waiting for mu, to leave). The references are
  // dropped after mu is released: dropping the last one destroys the child, whose destructor
  // takes our lock.
  //
  // The timer is taken out of its heap only while that runtime instance is known to run: on
  // an M, or on a plain thread counted in (ForeignCall). An instance that has
  // stopped, or is stopping, discards its timers itself (discard_timer).
  void cancel(std::error_code why, bool leave_parent) {
    // Read only: a timer wakes nobody by itself, so deadlock detection stays on (the close of
    // done, which does wake goroutines, says so itself).
    ForeignCall runtime(ForeignCall::Purpose::read);
    Fire* dequeued = nullptr;
    std::vector<std::shared_ptr<ContextState>> kids;
    {
      NoPreempt np;
      LockGuard lock(mu);
      if (err_locked) return;
      kids.reserve(children.size());  // before anything changes: it may throw
      err_locked = why;  // from here on, a child attaching cancels itself (attach)
      for (const auto& [seq, child] : children)
        if (auto kid = child->weak_from_this().lock()) kids.push_back(std::move(kid));
      children.clear();
      for (const auto& kid : kids) kid->cancel(why, false);
      errc.store(why.value(), std::memory_order_release);
      try {
        done.close();
      } catch (const Panic&) {
        // The program closed done() itself (Chan::close is const): it is closed either way.
      }
      if (fire && runtime.running() && deltimer(&fire->t)) dequeued = fire;  // else it fired,
      fire = nullptr;  // is firing, or the stopped instance discards it
    }
    kids.clear();
    delete dequeued;  // its reference to us: not the last
    if (leave_parent && parent) parent->remove_child(this);
  }

  void arm_timer() {
    auto* f = new Fire{{}, shared_from_this()};
    f->t.when = deadline;
    f->t.f = [](void* arg, std::int64_t) {
      std::unique_ptr<Fire> self(static_cast<Fire*>(arg));  // dequeued by the firing: ours
      self->state->cancel(ContextErrc::deadline_exceeded, true);
    };
    f->t.discard = discard_timer;
    f->t.arg = f;
    NoPreempt np;
    LockGuard lock(mu);
    if (err_locked) {  // cancelled meanwhile (its parent was): no timer
      delete f;
      return;
    }
    fire = f;
    addtimer(&f->t);  // may fire on another M at once: it cancels, which waits for mu
  }

  // The runtime stopped with the timer pending: the deadline will not cancel this context.
  static void discard_timer(void* arg) {
    std::unique_ptr<Fire> f(static_cast<Fire*>(arg));
    ContextState* s = f->state.get();
    NoPreempt np;
    LockGuard lock(s->mu);
    if (s->fire == f.get()) s->fire = nullptr;
  }

  static CancelFunc cancel_func(const std::shared_ptr<ContextState>& s) { return CancelFunc(s); }
  static Context context(std::shared_ptr<ContextState> s) { return Context(std::move(s)); }
  static const std::shared_ptr<ContextState>& of(const Context& c) { return c.s_; }

  const std::shared_ptr<ContextState> parent;  // nearest cancelable ancestor, or null
  const std::int64_t deadline;                 // 0: none
  Chan<Signal> done;
  std::atomic<int> errc{0};  // err's value, for err() without the lock; 0 while live
  SpinLock mu;
  std::error_code err_locked NUGO_GUARDED_BY(mu);
  // The cancelable children, in the order they attached: cancel walks them in that order, so
  // that the order in which their goroutines wake never depends on where they were allocated.
  std::map<std::uint64_t, ContextState*> children NUGO_GUARDED_BY(mu);
  std::uint64_t next_child NUGO_GUARDED_BY(mu) = 0;
  std::uint64_t child_seq = 0;  // our key in parent->children (set under the parent's mu)
  Fire* fire NUGO_GUARDED_BY(mu) = nullptr;
  std::optional<std::stop_callback<CancelOnStop>> stop;
};

void CancelOnStop::operator()() const noexcept {
  if (auto keep = state->weak_from_this().lock()) keep->cancel(ContextErrc::canceled, true);
}

namespace {

std::shared_ptr<ContextState> derive(const Context& parent, std::int64_t deadline) {
  const std::shared_ptr<ContextState>& p = ContextState::of(parent);
  if (p && p->deadline != 0 && (deadline == 0 || p->deadline <= deadline))
    deadline = p->deadline;  // the parent's comes first: it cancels us then
  return std::make_shared<ContextState>(p, deadline);
}

WithCancel finish(const std::shared_ptr<ContextState>& s) {
  s->attach();
  return {ContextState::context(s), ContextState::cancel_func(s)};
}

}  // namespace
}  // namespace detail

const Chan<Signal>& Context::done() const {
  static const Chan<Signal> never = Chan<Signal>::nil();
  return s_ ? s_->done : never;
}

std::error_code Context::err() const {
  int e = s_ ? s_->errc.load(std::memory_order_acquire) : 0;
  return e ? std::error_code(static_cast<ContextErrc>(e)) : std::error_code();
}

std::optional<Clock::time_point> Context::deadline() const {
  if (!s_ || s_->deadline == 0) return std::nullopt;
  return Clock::time_point(std::chrono::nanoseconds(s_->deadline));
}

void CancelFunc::operator()() const {
  // A reference of our own: the close may wake a goroutine that destroys this CancelFunc,
  // and with it perhaps the last reference, while the cancel goes on.
  if (std::shared_ptr<detail::ContextState> s = s_) s->cancel(ContextErrc::canceled, true);
}

WithCancel with_cancel(const Context& parent) { return detail::finish(detail::derive(parent, 0)); }

WithCancel with_deadline(const Context& parent, Clock::time_point d) {
  detail::ForeignCall runtime(detail::ForeignCall::Purpose::read);  // the instance stays while its timer is added
  if (!runtime.running())
    throw std::logic_error("nugo::with_deadline: the runtime is not running (its timer is a "
                           "runtime timer)");
  std::int64_t when = std::max<std::int64_t>(detail::to_ns(d), 1);
  auto s = detail::derive(parent, when);
  bool own_deadline = s->deadline == when;
  WithCancel r = detail::finish(s);
  if (!own_deadline) return r;  // the parent's deadline cancels us first
  if (when <= detail::nanotime())
    s->cancel(ContextErrc::deadline_exceeded, true);
  else
    s->arm_timer();
  return r;
}

WithCancel with_stop_token(const Context& parent, std::stop_token token) {
  auto s = detail::derive(parent, 0);
  WithCancel r = detail::finish(s);
  s->stop.emplace(std::move(token), detail::CancelOnStop{s.get()});
  return r;
}

}  // namespace nugo
