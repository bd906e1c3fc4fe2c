#include "futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fatal.hpp"

namespace nugo::detail {

void futex_wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected) {
  // EAGAIN (value changed) and EINTR are both "look again" for every caller.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAIT_PRIVATE, expected,
          nullptr, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>* addr, int count) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(addr), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

void Lock::lock_slow() {
  for (int spin = 0; spin < 100; ++spin) {
    std::uint32_t free = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_weak(free, 1, std::memory_order_acquire))
      return;
    __builtin_ia32_pause();
  }
  // Mark "sleepers present" whenever we take the lock from here on, so the holder wakes one.
  while (state_.exchange(2, std::memory_order_acquire) != 0) futex_wait(&state_, 2);
}

void Note::wakeup() {
  if (key_.exchange(1, std::memory_order_release) != 0) fatal("notewakeup: double wakeup");
  futex_wake(&key_, 1);
}

void Note::sleep() {
  while (key_.load(std::memory_order_acquire) == 0) futex_wait(&key_, 0);
}

}  // namespace nugo::detail
