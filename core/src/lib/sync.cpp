// Go's sync package (Mutex, RWMutex, Cond) and the runtime semaphore under it, after Go's
// sync/mutex.go, sync/rwmutex.go, sync/cond.go and runtime/sema.go.
//
// Waiters wait on a SemaWaiter on their own stack. A waker takes it off the list under the
// object's spin lock (held for a few instructions) and readies the goroutine after releasing
// that lock.
#include <sched.h>

#include <stdexcept>
#include <vector>

#include "fatal.hpp"
#include "nugo/sync.hpp"
#include "../sched/link.hpp"

namespace nugo {
namespace detail {

struct SemaWaiter {
  G* g = nullptr;
  SemaWaiter* next = nullptr;
  std::uint32_t ticket = 0;  // Sema: 1 if handed the count directly; Cond: the wait ticket
};

namespace {

void push(SemaWaiter*& head, SemaWaiter*& tail, SemaWaiter* w, bool lifo) {
  if (lifo) {
    w->next = head;
    head = w;
    if (!tail) tail = w;
  } else {
    w->next = nullptr;
    if (tail) tail->next = w; else head = w;
    tail = w;
  }
}

SemaWaiter* pop(SemaWaiter*& head, SemaWaiter*& tail) {
  SemaWaiter* w = head;
  if (w) {
    head = w->next;
    if (!head) tail = nullptr;
  }
  return w;
}

void do_spin() {
  for (int i = 0; i < 30; ++i) cpu_relax();
}

}  // namespace

bool Sema::try_acquire() {
  detail::NoPreempt np;
  // seq_cst: the waiter's half of the nwait_/count_ store-then-load handshake with release().
  std::uint32_t v = count_.load(std::memory_order_seq_cst);
  while (v > 0)
    if (count_.compare_exchange_weak(v, v - 1, std::memory_order_acquire)) return true;
  return false;
}

void Sema::acquire(bool lifo, int wait_reason) {
  detail::NoPreempt np;
  if (try_acquire()) return;
  if (!getg()) {  // a plain thread: nothing to park, so wait politely
    note_foreign_thread();
    while (!try_acquire()) sched_yield();
    return;
  }
  SemaWaiter w;
  w.g = getg();
  for (;;) {
    spin_lock(lock_);
    nwait_.fetch_add(1, std::memory_order_seq_cst);
    if (try_acquire()) {
      nwait_.fetch_sub(1, std::memory_order_relaxed);
      spin_unlock(lock_);
      return;
    }
    w.ticket = 0;
    push(head_, tail_, &w, lifo);
    gopark(park_unlock_spin, &lock_, static_cast<WaitReason>(wait_reason));
    if (w.ticket || try_acquire()) return;
  }
}

void Sema::release(bool handoff) {
  detail::NoPreempt np;
  note_foreign_thread();
  count_.fetch_add(1, std::memory_order_seq_cst);
  if (nwait_.load(std::memory_order_seq_cst) == 0) return;
  spin_lock(lock_);
  SemaWaiter* w = nwait_.load(std::memory_order_relaxed) ? pop(head_, tail_) : nullptr;
  if (!w) {
    spin_unlock(lock_);
    return;
  }
  nwait_.fetch_sub(1, std::memory_order_relaxed);
  if (handoff && try_acquire()) w->ticket = 1;
  bool yield_to_it = w->ticket && getg();
  G* gp = w->g;  // w lives on the waiter's stack: not touched after goready
  spin_unlock(lock_);
  goready(gp);
  if (yield_to_it) goyield();  // let the new owner run now, keeping our place in line
}

}  // namespace detail

// ---- Mutex (the state machine of Go's sync.Mutex) ----

namespace {
constexpr std::int64_t kStarvationThresholdNs = 1'000'000;
}

void Mutex::lock_slow() {
  detail::NoPreempt np;
  std::int64_t wait_start = 0;
  bool starving = false, awoke = false;
  int iter = 0;
  std::int32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    // Spin while the mutex is locked (not starving) and spinning may pay; flag ourselves as
    // the woken waiter so Unlock wakes no one else meanwhile.
    if ((old & (kLocked | kStarving)) == kLocked && detail::can_spin(iter)) {
      if (!awoke && !(old & kWoken) && (old >> kWaiterShift) != 0 &&
          state_.compare_exchange_strong(old, old | kWoken, std::memory_order_relaxed))
        awoke = true;
      detail::do_spin();
      ++iter;
      old = state_.load(std::memory_order_relaxed);
      continue;
    }
    std::int32_t now = old;
    if (!(old & kStarving)) now |= kLocked;  // in starvation mode newcomers queue
    if (old & (kLocked | kStarving)) now += 1 << kWaiterShift;
    if (starving && (old & kLocked)) now |= kStarving;
    if (awoke) {
      if (!(now & kWoken)) detail::fatal("sync: inconsistent mutex state");
      now &= ~kWoken;
    }
    if (!state_.compare_exchange_strong(old, now, std::memory_order_acquire)) continue;
    if (!(old & (kLocked | kStarving))) return;  // took it
    bool queue_lifo = wait_start != 0;  // a waiter that was woken and lost goes first again
    if (wait_start == 0) wait_start = detail::nanotime();
    sema_.acquire(queue_lifo, static_cast<int>(detail::WaitReason::mutex));
    starving = starving || detail::nanotime() - wait_start > kStarvationThresholdNs;
    old = state_.load(std::memory_order_relaxed);
    if (old & kStarving) {
      // Ownership was handed to us; the state still counts us as a waiter.
      if ((old & (kLocked | kWoken)) || (old >> kWaiterShift) == 0)
        detail::fatal("sync: inconsistent mutex state");
      std::int32_t delta = kLocked - (1 << kWaiterShift);
      if (!starving || (old >> kWaiterShift) == 1) delta -= kStarving;  // leave starvation mode
      state_.fetch_add(delta, std::memory_order_acquire);
      return;
    }
    awoke = true;
    iter = 0;
  }
}

void Mutex::unlock_slow(std::int32_t now) {
  detail::NoPreempt np;
  if (!((now + kLocked) & kLocked)) detail::fatal("sync: unlock of unlocked mutex");
  if (now & kStarving) {
    sema_.release(true);  // hand ownership to the next waiter
    return;
  }
  std::int32_t old = now;
  for (;;) {
    // Nobody to wake, or someone already woken or holding it: done.
    if ((old >> kWaiterShift) == 0 || (old & (kLocked | kWoken | kStarving))) return;
    std::int32_t next = (old - (1 << kWaiterShift)) | kWoken;
    if (state_.compare_exchange_strong(old, next, std::memory_order_relaxed)) {
      sema_.release(false);
      return;
    }
  }
}

// ---- RWMutex ----

void RWMutex::lock_shared() {
  detail::forbid_in_syscall_body("nugo::RWMutex::lock_shared");
  detail::NoPreempt np;
  if (reader_count_.fetch_add(1, std::memory_order_acquire) + 1 < 0)
    reader_sem_.acquire(false, static_cast<int>(detail::WaitReason::rwmutex_read));
}

void RWMutex::unlock_shared() {
  detail::forbid_in_syscall_body("nugo::RWMutex::unlock_shared");
  detail::NoPreempt np;
  std::int32_t r = reader_count_.fetch_sub(1, std::memory_order_release) - 1;
  if (r >= 0) return;
  if (r + 1 == 0 || r + 1 == -kMaxReaders) detail::fatal("sync: RUnlock of unlocked RWMutex");
  if (reader_wait_.fetch_sub(1, std::memory_order_acq_rel) - 1 == 0) writer_sem_.release(false);
}

void RWMutex::lock() {
  detail::forbid_in_syscall_body("nugo::RWMutex::lock");
  detail::NoPreempt np;
  w_.lock();
  // Announce the writer; r is the number of readers still inside.
  std::int32_t r = reader_count_.fetch_sub(kMaxReaders, std::memory_order_acq_rel);
  if (r != 0 && reader_wait_.fetch_add(r, std::memory_order_acq_rel) + r != 0)
    writer_sem_.acquire(false, static_cast<int>(detail::WaitReason::rwmutex_write));
}

void RWMutex::unlock() {
  detail::forbid_in_syscall_body("nugo::RWMutex::unlock");
  detail::NoPreempt np;
  std::int32_t r = reader_count_.fetch_add(kMaxReaders, std::memory_order_release) + kMaxReaders;
  if (r >= kMaxReaders) detail::fatal("sync: Unlock of unlocked RWMutex");
  for (std::int32_t i = 0; i < r; ++i) reader_sem_.release(false);
  w_.unlock();
}

// ---- Cond: Go's notifyList. Tickets make a signal that comes between unlocking L and
// parking count: the waiter checks its ticket against notify_ before parking. ----

void Cond::require_goroutine() {
  detail::forbid_in_syscall_body("nugo::Cond::wait");
  if (!detail::getg()) throw std::logic_error("nugo::Cond::wait: not called from a goroutine");
}

std::uint32_t Cond::add_waiter() { return wait_.fetch_add(1, std::memory_order_acq_rel); }

void Cond::wait_ticket(std::uint32_t ticket) {
  detail::NoPreempt np;
  detail::spin_lock(lock_);
  if (static_cast<std::int32_t>(ticket - notify_.load(std::memory_order_relaxed)) < 0) {  // notified
    detail::spin_unlock(lock_);
    return;
  }
  detail::SemaWaiter w;
  w.g = detail::getg();
  w.ticket = ticket;
  detail::push(head_, tail_, &w, false);
  detail::gopark(detail::park_unlock_spin, &lock_, detail::WaitReason::cond);
}

void Cond::signal() {
  detail::forbid_in_syscall_body("nugo::Cond::signal");
  detail::NoPreempt np;
  if (wait_.load(std::memory_order_acquire) == notify_.load(std::memory_order_acquire)) return;
  detail::spin_lock(lock_);
  std::uint32_t t = notify_.load(std::memory_order_relaxed);
  if (wait_.load(std::memory_order_relaxed) == t) {
    detail::spin_unlock(lock_);
    return;
  }
  notify_.store(t + 1, std::memory_order_release);
  // The waiter with ticket t, if it has parked yet; if not, it sees t < notify_ and returns.
  detail::SemaWaiter* prev = nullptr;
  for (detail::SemaWaiter* w = head_; w; prev = w, w = w->next) {
    if (w->ticket != t) continue;
    if (prev) prev->next = w->next; else head_ = w->next;
    if (tail_ == w) tail_ = prev;
    detail::G* gp = w->g;
    detail::spin_unlock(lock_);
    detail::goready(gp);
    return;
  }
  detail::spin_unlock(lock_);
}

void Cond::broadcast() {
  detail::forbid_in_syscall_body("nugo::Cond::broadcast");
  detail::NoPreempt np;
  if (wait_.load(std::memory_order_acquire) == notify_.load(std::memory_order_acquire)) return;
  detail::spin_lock(lock_);
  notify_.store(wait_.load(std::memory_order_relaxed), std::memory_order_release);
  detail::SemaWaiter* all = head_;
  head_ = tail_ = nullptr;
  detail::spin_unlock(lock_);
  while (all) {
    detail::SemaWaiter* w = all;
    all = w->next;  // read before goready: w lives on the waiter's stack
    detail::goready(w->g);
  }
}

}  // namespace nugo
