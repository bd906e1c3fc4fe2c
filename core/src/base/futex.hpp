// Futex-based building blocks: Lock (Go's runtime mutex) and Note (Go's one-shot wake-up,
// used to park an M). Both sleep in the kernel, never in a goroutine: they block the whole
// M and are for the scheduler's own short critical sections and for idle Ms.
#pragma once

#include <atomic>
#include <cstdint>

#include "tsa.hpp"
#include "vtime.hpp"

namespace nugo::detail {

// The pause in every spin loop: tells the core we are spinning (x86 PAUSE).
inline void cpu_relax() { __builtin_ia32_pause(); }

void futex_wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected);
// As futex_wait, but returns by the absolute CLOCK_MONOTONIC time deadline_ns at the latest.
void futex_wait_until(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
                      std::int64_t deadline_ns);
void futex_wake(std::atomic<std::uint32_t>* addr, int count);

// The lock rule (Go's: the runtime is never preempted while it holds a lock): a goroutine
// takes a runtime lock only inside a NoPreempt scope (sched/link.hpp), else the preemption
// signal could stop it holding the lock and every M that wants the lock would sleep in the
// kernel, the holder with no M to run on. Checked in sanitizer builds, where a goroutine
// breaking it is a fatal error naming it (proc.cpp).
#if NUGO_ASAN
void check_lock_rule();
#else
inline void check_lock_rule() {}
#endif

// A test-and-test-and-set spin lock on a bare word, for the wait lists inside public objects
// (WaitGroup, Sema, Cond), whose critical sections are a few instructions long.
inline void spin_lock(std::atomic<std::uint32_t>& l) {
  check_lock_rule();
  vtime::lock_taken();
  while (l.exchange(1, std::memory_order_acquire) != 0)
    while (l.load(std::memory_order_relaxed) != 0) cpu_relax();
}
inline void spin_unlock(std::atomic<std::uint32_t>& l) {
  l.store(0, std::memory_order_release);
  vtime::lock_released();
}

// A three-state mutex (0 free, 1 locked, 2 locked with sleepers) with a short spin before
// sleeping, as the critical sections it guards (run queue batches, idle lists) are tiny.
// A capability for clang's thread-safety analysis (tsa.hpp). Checked builds (NUGO_CHECK_LOCKS:
// sanitizer and Debug builds) also record the holder, for assert_held (Go's assertLockHeld)
// and for unlock by a thread that does not hold it.
class NUGO_CAPABILITY("mutex") Lock {
 public:
  void lock() NUGO_ACQUIRE() {
    check_lock_rule();
    vtime::lock_taken();
    std::uint32_t free = 0;
    if (!state_.compare_exchange_strong(free, 1, std::memory_order_acquire)) lock_slow();
#if NUGO_CHECK_LOCKS
    owner_.store(this_thread(), std::memory_order_relaxed);
#endif
  }
  void unlock() NUGO_RELEASE() {
#if NUGO_CHECK_LOCKS
    check_owner("unlock");
    owner_.store(nullptr, std::memory_order_relaxed);
#endif
    if (state_.exchange(0, std::memory_order_release) == 2) futex_wake(&state_, 1);
    vtime::lock_released();
  }
  // The calling thread holds the lock: tells the analysis so where it cannot see it (locks
  // taken in a loop, or on one of two paths), and checks it in checked builds.
  void assert_held() const NUGO_ASSERT_CAPABILITY(this) {
#if NUGO_CHECK_LOCKS
    check_owner("assert_held");
#endif
  }

 private:
  void lock_slow();
#if NUGO_CHECK_LOCKS
 public:
  static const void* this_thread();

 private:
  void check_owner(const char* what) const;
  std::atomic<const void*> owner_{nullptr};
#endif
  std::atomic<std::uint32_t> state_{0};
};

// A spin lock for channels (hchan::lock): the same capability and checks as Lock, but no
// sleepers, so unlock is a plain release store instead of Lock's exchange (which must see
// whether a sleeper wants waking). A channel hand-off takes and releases channel locks four
// times (both sides' lock, the parked side's unlock on g0), so that is four read-modify-writes
// fewer per ping-pong round (core/README.md, "Channels"). What it gives up: a waiter
// never sleeps in the kernel. Channel critical sections are a few dozen instructions under
// NoPreempt, so a waiter spins briefly; if the holder's thread was descheduled by the OS, the
// waiter yields its CPU, and then sleeps in short naps (lock_slow), so that it never burns a
// core the holder needs.
class NUGO_CAPABILITY("mutex") SpinLock {
 public:
  void lock() NUGO_ACQUIRE() {
    check_lock_rule();
    vtime::lock_taken();
    if (state_.exchange(1, std::memory_order_acquire) != 0) lock_slow();
#if NUGO_CHECK_LOCKS
    owner_.store(Lock::this_thread(), std::memory_order_relaxed);
#endif
  }
  void unlock() NUGO_RELEASE() {
#if NUGO_CHECK_LOCKS
    check_owner("unlock");
    owner_.store(nullptr, std::memory_order_relaxed);
#endif
    state_.store(0, std::memory_order_release);
    vtime::lock_released();
  }
  void assert_held() const NUGO_ASSERT_CAPABILITY(this) {
#if NUGO_CHECK_LOCKS
    check_owner("assert_held");
#endif
  }

 private:
  void lock_slow();
#if NUGO_CHECK_LOCKS
  void check_owner(const char* what) const;
  std::atomic<const void*> owner_{nullptr};
#endif
  std::atomic<std::uint32_t> state_{0};
};

// Holds a Lock or SpinLock for a scope (the form for every function that takes and releases
// a lock on all of its paths, exceptions included).
template <class L>
class NUGO_SCOPED_CAPABILITY LockGuard {
 public:
  explicit LockGuard(L& l) NUGO_ACQUIRE(l) : l_(l) { l_.lock(); }
  ~LockGuard() NUGO_RELEASE() { l_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  L& l_;
};

// A one-shot event: sleep() returns once wakeup() has been called; clear() re-arms it.
// Several wakeups before a clear() count as one (a timer wake-up and startm may race), so a
// sleeper must check why it woke.
class Note {
 public:
  void wakeup();
  void sleep();
  // Returns false if deadline_ns (CLOCK_MONOTONIC) passed without a wakeup.
  bool sleep_until(std::int64_t deadline_ns);
  // A read-modify-write, not a store: a wakeup() racing with clear() is then either seen by
  // the caller's following reads (it happened first) or arrives after and stands.
  void clear() { key_.exchange(0, std::memory_order_acq_rel); }

 private:
  std::atomic<std::uint32_t> key_{0};
};

}  // namespace nugo::detail
