// nugo::WaitGroup: Go's sync.WaitGroup. wait() parks the goroutine (its M runs other work);
// add(), done() and wait() may be called from goroutines and from plain threads.
#pragma once

#include <atomic>
#include <cstdint>

namespace nugo {
namespace detail { struct G; }

class WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  // Adds delta to the counter. A negative counter is a fatal error, as in Go. When the
  // counter reaches zero every waiter is made runnable.
  void add(std::int64_t delta);
  void done() { add(-1); }
  // Blocks the calling goroutine until the counter is zero; returns at once if it is zero.
  // The WaitGroup may be destroyed as soon as wait() returns. On a plain thread (no
  // goroutine) it polls the counter with naps of up to 1 ms instead of parking.
  void wait();

 private:
  void wait_on_thread();
  void sema_acquire();
  void wait_release_done();
  // Go's layout: counter in the high 32 bits, number of waiters in the low 32, so that the
  // waker knows how many to release without touching anything a returned waiter may free.
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint32_t> lock_{0};  // guards waiters_ and tokens_; held for a few instructions
  detail::G* waiters_ = nullptr;
  std::uint32_t tokens_ = 0;  // releases that arrived before their waiter parked
};

}  // namespace nugo
