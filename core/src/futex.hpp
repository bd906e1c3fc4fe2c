// Futex-based building blocks: Lock (Go's runtime mutex) and Note (Go's one-shot wake-up,
// used to park an M). Both sleep in the kernel, never in a goroutine: they block the whole
// M and are for the scheduler's own short critical sections and for idle Ms.
#pragma once

#include <atomic>
#include <cstdint>

namespace nugo::detail {

// The pause in every spin loop: tells the core we are spinning (x86 PAUSE).
inline void cpu_relax() { __builtin_ia32_pause(); }

void futex_wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected);
// As futex_wait, but returns by the absolute CLOCK_MONOTONIC time deadline_ns at the latest.
void futex_wait_until(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
                      std::int64_t deadline_ns);
void futex_wake(std::atomic<std::uint32_t>* addr, int count);

// The lock rule (Go's: the runtime is never preempted while it holds a lock): a goroutine
// takes a runtime lock only inside a NoPreempt scope (preempt.hpp), else the preemption
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
  while (l.exchange(1, std::memory_order_acquire) != 0)
    while (l.load(std::memory_order_relaxed) != 0) cpu_relax();
}
inline void spin_unlock(std::atomic<std::uint32_t>& l) { l.store(0, std::memory_order_release); }

// A three-state mutex (0 free, 1 locked, 2 locked with sleepers) with a short spin before
// sleeping, as the critical sections it guards (run queue batches, idle lists) are tiny.
class Lock {
 public:
  void lock() {
    check_lock_rule();
    std::uint32_t free = 0;
    if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire)) return;
    lock_slow();
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) futex_wake(&state_, 1);
  }

 private:
  void lock_slow();
  std::atomic<std::uint32_t> state_{0};
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
