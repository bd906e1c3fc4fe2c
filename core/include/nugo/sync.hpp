// Go's sync package for goroutines: Mutex, RWMutex, Cond, Once (WaitGroup is in waitgroup.hpp).
// Blocking parks the goroutine, never the thread. Misuse Go treats as fatal (unlocking an
// unlocked mutex) is a fatal error here too. Like std::mutex, a Mutex may be destroyed once no
// goroutine can still be inside one of its member functions.
#pragma once

#include <atomic>
#include <cstdint>

#include "nugo/runtime.hpp"

namespace nugo {
namespace detail {

struct SemaWaiter;

// A goroutine semaphore (Go's runtime sema): acquire parks while the count is zero.
class Sema {
 public:
  void acquire(bool lifo, int wait_reason);
  // With handoff, a woken waiter gets the count directly and the caller yields to it.
  void release(bool handoff);

 private:
  bool try_acquire();
  std::atomic<std::uint32_t> count_{0};
  std::atomic<std::uint32_t> nwait_{0};
  std::atomic<std::uint32_t> lock_{0};
  SemaWaiter* head_ = nullptr;
  SemaWaiter* tail_ = nullptr;
};

}  // namespace detail

// Go's sync.Mutex: a fast path of one CAS; under contention a short spin (only while other
// Ps are running), then parking in FIFO order. A waiter that has waited over 1 ms switches the
// mutex to starvation mode, in which Unlock hands ownership straight to the oldest waiter, so
// no waiter starves.
class Mutex {
 public:
  void lock() {
    detail::forbid_in_syscall_body("nugo::Mutex::lock");
    std::int32_t unlocked = 0;
    if (state_.compare_exchange_strong(unlocked, kLocked, std::memory_order_acquire)) return;
    lock_slow();
    // Not a tail call: a deadlock report then shows the caller's frame (traceback.hpp).
    asm volatile("");
  }
  bool try_lock() {
    detail::forbid_in_syscall_body("nugo::Mutex::try_lock");
    std::int32_t old = state_.load(std::memory_order_relaxed);
    if (old & (kLocked | kStarving)) return false;
    return state_.compare_exchange_strong(old, old | kLocked, std::memory_order_acquire);
  }
  void unlock() {
    detail::forbid_in_syscall_body("nugo::Mutex::unlock");
    std::int32_t now = state_.fetch_sub(kLocked, std::memory_order_release) - kLocked;
    if (now != 0) unlock_slow(now);
  }

 private:
  static constexpr std::int32_t kLocked = 1, kWoken = 2, kStarving = 4, kWaiterShift = 3;
  void lock_slow();
  void unlock_slow(std::int32_t now);
  std::atomic<std::int32_t> state_{0};
  detail::Sema sema_;
};

// Go's sync.RWMutex: writer-preferring; a blocked writer stops new readers.
class RWMutex {
 public:
  void lock();
  void unlock();
  void lock_shared();
  void unlock_shared();

 private:
  static constexpr std::int32_t kMaxReaders = 1 << 30;
  Mutex w_;
  detail::Sema writer_sem_, reader_sem_;
  std::atomic<std::int32_t> reader_count_{0};
  std::atomic<std::int32_t> reader_wait_{0};
};

// Go's sync.Cond over any lockable L (Mutex, RWMutex, ...): wait() atomically unlocks L and
// parks; it relocks before returning. Signal wakes the longest waiter, broadcast all.
class Cond {
 public:
  template <class L>
  void wait(L& l) {
    require_goroutine();  // and not in a syscall body
    std::uint32_t ticket = add_waiter();
    l.unlock();
    wait_ticket(ticket);
    l.lock();
  }
  void signal();
  void broadcast();

 private:
  static void require_goroutine();
  std::uint32_t add_waiter();
  void wait_ticket(std::uint32_t ticket);
  std::atomic<std::uint32_t> wait_{0};    // next ticket to hand out
  std::atomic<std::uint32_t> notify_{0};  // next ticket to notify; written under lock_
  std::atomic<std::uint32_t> lock_{0};
  detail::SemaWaiter* head_ = nullptr;
  detail::SemaWaiter* tail_ = nullptr;
};

// Go's sync.Once: call(f) runs f exactly once; every caller returns after it has finished.
class Once {
 public:
  template <class F>
  void call(F&& f) {
    if (done_.load(std::memory_order_acquire)) return;
    m_.lock();
    struct Unlock {
      Mutex* m;
      ~Unlock() { m->unlock(); }
    } unlock{&m_};
    if (done_.load(std::memory_order_relaxed)) return;
    struct Finish {
      std::atomic<bool>* done;
      ~Finish() { done->store(true, std::memory_order_release); }
    } finish{&done_};  // as in Go, f counts as done even if it throws
    f();
  }

 private:
  std::atomic<bool> done_{false};
  Mutex m_;
};

}  // namespace nugo
