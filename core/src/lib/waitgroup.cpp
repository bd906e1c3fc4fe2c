// WaitGroup after Go's sync.WaitGroup: the counter and the waiter count share one atomic
// word; the waiters wait on a small semaphore (a token count plus a list of parked Gs).
//
// Lifetime rule: a waiter may destroy the WaitGroup as soon as wait() returns, so the waker
// must be done with it by then. When add() brings the counter to zero with w waiters, it
// releases w tokens in one critical section and then, as its very last access, clears the
// waiter count (release). Every way out of wait() passes that clear first:
//   - a parked waiter is readied only after it;
//   - a waiter that took a token, or that saw the counter at zero while waiters were still
//     counted (it arrived during the release), spins until the waiter count reads zero.
#include "nugo/waitgroup.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "fatal.hpp"
#include "../sched/link.hpp"

namespace nugo {
using detail::spin_lock;
using detail::spin_unlock;

void WaitGroup::add(std::int64_t delta) {
  detail::forbid_in_syscall_body(delta == -1 ? "nugo::WaitGroup::done" : "nugo::WaitGroup::add");
  detail::NoPreempt np;
  detail::note_foreign_thread();
  std::uint64_t d = static_cast<std::uint64_t>(delta) << 32;
  std::uint64_t state = state_.fetch_add(d, std::memory_order_acq_rel) + d;
  auto counter = static_cast<std::int32_t>(state >> 32);
  auto waiters = static_cast<std::uint32_t>(state);
  if (counter < 0) detail::fatal("sync: negative WaitGroup counter");
  if (counter > 0 || waiters == 0) return;
  if (state_.load(std::memory_order_relaxed) != state)
    detail::fatal("sync: WaitGroup misuse: add called concurrently with wait");

  spin_lock(lock_);
  detail::G* ready = nullptr;
  for (; waiters > 0 && waiters_; --waiters) {
    detail::G* gp = waiters_;
    waiters_ = detail::head(gp)->waitlink;
    detail::head(gp)->waitlink = ready;
    ready = gp;
  }
  tokens_ += waiters;
  spin_unlock(lock_);
  state_.store(0, std::memory_order_release);  // our last access to *this
  while (ready) {
    detail::G* next = detail::head(ready)->waitlink;
    detail::head(ready)->waitlink = nullptr;
    detail::goready(ready);
    ready = next;
  }
}

void WaitGroup::wait() {
  detail::forbid_in_syscall_body("nugo::WaitGroup::wait");
  if (!detail::getg()) return wait_on_thread();
  detail::NoPreempt np;
  std::uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<std::int32_t>(state >> 32) == 0) {
      if (static_cast<std::uint32_t>(state) != 0) wait_release_done();
      return;
    }
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel)) break;
  }
  sema_acquire();
}

// A waker is releasing waiters (counter zero, waiters still counted): let it finish with
// *this before we return. It holds no lock the waiters need, so this is a short spin.
void WaitGroup::wait_release_done() {
  detail::NoPreempt np;
  while (static_cast<std::uint32_t>(state_.load(std::memory_order_acquire)) != 0)
    detail::cpu_relax();
}

// A plain thread cannot park: it polls the counter, napping twice as long each time, up to
// 1 ms. It is not counted as a waiter, so the waker never waits for it; it only has to let a
// release in progress finish, as a goroutine that saw the counter at zero does.
void WaitGroup::wait_on_thread() {
  detail::note_foreign_thread();  // it may go on to wake goroutines (checkdead)
  auto nap = std::chrono::microseconds(1);
  for (;;) {
    std::uint64_t state = state_.load(std::memory_order_acquire);
    if (static_cast<std::int32_t>(state >> 32) == 0) {
      if (static_cast<std::uint32_t>(state) != 0) wait_release_done();
      return;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, decltype(nap)(1000));
  }
}

void WaitGroup::sema_acquire() {
  detail::NoPreempt np;
  spin_lock(lock_);
  if (tokens_ > 0) {
    --tokens_;
    spin_unlock(lock_);
    wait_release_done();
    return;
  }
  detail::G* gp = detail::getg();
  detail::head(gp)->waitlink = waiters_;
  waiters_ = gp;
  detail::gopark(detail::park_unlock_spin, &lock_, detail::WaitReason::waitgroup);
}

}  // namespace nugo
