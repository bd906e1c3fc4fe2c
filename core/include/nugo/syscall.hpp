// Blocking system calls from goroutines (Go's entersyscall / exitsyscall).
//
// A goroutine that blocks its thread in the kernel would also block its P, and with it every
// goroutine queued there. Wrapped in nugo::syscall, the call leaves the P in a "syscall"
// state: if it returns quickly the goroutine just carries on (the fast path costs a few
// nanoseconds), and if it lasts longer than a sysmon tick (20 us or more) while there is work,
// sysmon hands the P to another thread. blocking_syscall hands the P off at once, for calls
// known to block for long (waitpid, a read from a pipe that may stay empty).
//
// errno as set by the call is what the caller sees afterwards, even if the goroutine resumed
// on another thread. Outside goroutines these wrappers just make the call.
//
// What a syscall body may do. Inside it the goroutine holds no P: to the scheduler it is in
// the kernel, as in Go, where nothing runs between entersyscall and exitsyscall but the call.
// So the body may make system calls and run any code that does not call into the scheduler
// (std::mutex, malloc, file streams). A call into the scheduler from there is a fatal error
// naming the goroutine and the call, with a traceback (exit status 2) -- every time, not only
// when the call would have blocked, so that a mistake cannot hide behind a lucky schedule:
//   - channels: send, try_send, recv, try_recv, close, select (with or without on_default);
//   - go, go_on, yield; sleep_for, sleep_until; after, Timer, Ticker (making, stopping,
//     resetting or destroying one); Context cancellation (it closes a channel);
//   - Mutex (lock, try_lock, unlock), RWMutex, Cond, Once, WaitGroup (add, done, wait);
//   - nugo::net and nugo::io calls that wait (Conn reads and writes take a Mutex).
// Allowed, because none of them needs a P: a nested nugo::syscall, blocking_syscall or
// sys::* call (it simply runs); preempt_point (nothing to do: no time slice runs);
// lock_os_thread and unlock_os_thread (the goroutine stays on this thread anyway); and the
// queries this_g::id, this_g::home_node, gomaxprocs, num_goroutines, Chan::len and cap.
// Making, copying and destroying a Chan is allowed too (memory only).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace nugo {

// The RAII form: the current goroutine is in a system call from construction to destruction.
// No exception may leave the scope: the goroutine may resume on another thread when it ends,
// and an exception must be caught on the thread that threw it (syscall() below takes care of
// that; prefer it).
class SyscallScope {
 public:
  enum Kind { may_block, blocks_long };
  explicit SyscallScope(Kind kind = may_block);
  ~SyscallScope();
  SyscallScope(const SyscallScope&) = delete;
  SyscallScope& operator=(const SyscallScope&) = delete;

 private:
  bool active_;
};

namespace detail {
// Runs f as a system call of the given kind. An exception f throws is caught inside the call
// and thrown again after it: leaving the call may resume the goroutine on another thread, and
// an exception must be thrown and caught on one (the C++ runtime counts the exceptions in
// flight per thread; unwinding across the switch would leave both threads' counts wrong).
template <class F>
auto in_syscall(SyscallScope::Kind kind, F&& f) -> decltype(std::forward<F>(f)()) {
  using R = decltype(std::forward<F>(f)());
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    {
      SyscallScope scope(kind);
      try {
        std::forward<F>(f)();
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  } else if constexpr (std::is_reference_v<R>) {
    std::remove_reference_t<R>* result = nullptr;
    {
      SyscallScope scope(kind);
      try {
        result = &std::forward<F>(f)();
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return static_cast<R>(*result);
  } else {
    std::optional<R> result;
    {
      SyscallScope scope(kind);
      try {
        result.emplace(std::forward<F>(f)());
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}
}  // namespace detail

// Runs f() (a system call, or a short stretch of code that makes one) as a system call.
template <class F>
decltype(auto) syscall(F&& f) {
  return detail::in_syscall(SyscallScope::may_block, std::forward<F>(f));
}

// As syscall(f), for calls known to block for long: the P is handed off before f runs.
template <class F>
decltype(auto) blocking_syscall(F&& f) {
  return detail::in_syscall(SyscallScope::blocks_long, std::forward<F>(f));
}

// The blocking calls goroutines need most, with POSIX's return values and errno.
namespace sys {
ssize_t read(int fd, void* buf, std::size_t count);
ssize_t write(int fd, const void* buf, std::size_t count);
ssize_t pread(int fd, void* buf, std::size_t count, off_t offset);
ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset);
int fsync(int fd);
// Blocks long unless options has WNOHANG: hands the P off at once.
pid_t waitpid(pid_t pid, int* status, int options);
// Sleeps in the kernel (nanosleep, resumed after signals), holding the thread but not the P;
// for experiments that need a thread-blocking call. Goroutines that just wait should use
// nugo::sleep_for, which blocks no thread at all.
void nanosleep(std::chrono::nanoseconds d);
}  // namespace sys

}  // namespace nugo
