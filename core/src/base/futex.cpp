#include "futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "fatal.hpp"
#include "vtime.hpp"

namespace nugo::detail {

namespace {

// Round `round` of a waiter's spin: growing pauses (32, 32, 64, 64, ... 512 of them).
void spin_pause(int round) {
  for (int i = 0; i < (32 << (round / 2)); ++i) cpu_relax();
}

// The thread gives way: to any thread, or in virtual time to any member with an earlier clock.
void os_yield() {
  if (vtime::member())
    vtime::yield();
  else
    sched_yield();
}

// The thread sleeps for ns, in virtual time if it is a member.
void os_nap(std::int64_t ns) {
  if (vtime::member()) {
    vtime::nap(ns);
    return;
  }
  timespec nap{0, static_cast<long>(ns)};
  nanosleep(&nap, nullptr);
}

}  // namespace

// In virtual time (vtime.hpp) a member's wait gives up its turn instead of sleeping in the
// kernel, and its deadline is in virtual time; a non-member's is as ever, real.
void futex_wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected) {
  if (vtime::on()) {
    if (vtime::member())
      vtime::wait(addr, expected, 0);
    else
      vtime::wait_outside(addr, expected, 0);
    return;
  }
  // EAGAIN (value changed) and EINTR are both "look again" for every caller.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAIT_PRIVATE, expected,
          nullptr, nullptr, 0);
}

void futex_wait_until(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
                      std::int64_t deadline_ns) {
  if (vtime::on()) {
    if (vtime::member())
      vtime::wait(addr, expected, deadline_ns);
    else
      vtime::wait_outside(addr, expected, deadline_ns);
    return;
  }
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000),
              static_cast<long>(deadline_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAIT_BITSET_PRIVATE, expected,
          &ts, nullptr, FUTEX_BITSET_MATCH_ANY);
}

void futex_wake(std::atomic<std::uint32_t>* addr, int count) {
  if (vtime::on()) {
    vtime::wake(addr, count);
    return;
  }
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

#if NUGO_CHECK_LOCKS
// A thread's identity: the address of a thread-local (no system call, unlike gettid).
const void* Lock::this_thread() {
  static thread_local char marker;
  return &marker;
}

void Lock::check_owner(const char* what) const {
  if (owner_.load(std::memory_order_relaxed) != this_thread())
    fatal("runtime Lock %p: %s by a thread that does not hold it", static_cast<const void*>(this),
          what);
}

void SpinLock::check_owner(const char* what) const {
  if (owner_.load(std::memory_order_relaxed) != Lock::this_thread())
    fatal("runtime SpinLock %p: %s by a thread that does not hold it",
          static_cast<const void*>(this), what);
}
#endif

// Spin with growing pauses while the holder is likely running; then yield the CPU (the
// holder's thread may be waiting for it); then nap 50 us at a time, so that a waiter whose
// holder was descheduled for long costs its core almost nothing.
void SpinLock::lock_slow() {
  for (int round = 0;; ++round) {
    if (round < 10) {
      spin_pause(round);
    } else if (round < 20) {
      os_yield();
    } else {
      os_nap(50'000);
    }
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.exchange(1, std::memory_order_acquire) == 0)
      return;
  }
}

// Critical sections under a Lock last tens of nanoseconds, and a futex sleep plus the
// holder's wake-up cost microseconds: spin first (with growing pauses), then yield the CPU a
// few times (the holder may be preempted), and only then sleep.
void Lock::lock_slow() {
  for (int spin = 0; spin < 10; ++spin) {
    spin_pause(spin);
    std::uint32_t free = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_weak(free, 1, std::memory_order_acquire))
      return;
  }
  for (int yield = 0; yield < 3; ++yield) {
    os_yield();
    std::uint32_t free = 0;
    if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire)) return;
  }
  // Mark "sleepers present" whenever we take the lock from here on, so the holder wakes one.
  while (state_.exchange(2, std::memory_order_acquire) != 0) futex_wait(&state_, 2);
}

void Note::wakeup() {
  if (key_.exchange(1, std::memory_order_release) == 0) futex_wake(&key_, 1);
}

void Note::sleep() {
  while (key_.load(std::memory_order_acquire) == 0) futex_wait(&key_, 0);
}

bool Note::sleep_until(std::int64_t deadline_ns) {
  while (key_.load(std::memory_order_acquire) == 0) {
    std::int64_t now_ns;
    if (vtime::member()) {
      now_ns = vtime::now();
    } else {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      now_ns = now.tv_sec * 1'000'000'000ll + now.tv_nsec;
    }
    if (now_ns >= deadline_ns) return false;
    futex_wait_until(&key_, 0, deadline_ns);
  }
  return true;
}

}  // namespace nugo::detail
