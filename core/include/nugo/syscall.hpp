// Blocking system calls from goroutines (Go's entersyscall / exitsyscall).
//
// A goroutine that blocks its thread in the kernel would also block its P, and with it every
// goroutine queued there. Wrapped in nugo::syscall, the call leaves the P in a "syscall"
// state: if it returns quickly the goroutine just carries on (the fast path costs a few
// nanoseconds), and if it lasts longer than a sysmon tick (20 us or more) while there is work,
// sysmon hands the P to another thread. blocking_syscall hands the P off at once, for calls
// known to block for long (waitpid, a read from a pipe that may stay empty).
//
// Inside the wrapped call the goroutine has no P: it must not use channels, sync primitives,
// timers or sleep (a fatal error names the goroutine), nor start goroutines. errno as set by
// the call is what the caller sees afterwards, even if the goroutine resumed on another
// thread. Outside goroutines these wrappers just make the call.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <utility>

namespace nugo {

// The RAII form: the current goroutine is in a system call from construction to destruction.
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

// Runs f() (a system call, or a short stretch of code that makes one) as a system call.
template <class F>
decltype(auto) syscall(F&& f) {
  SyscallScope scope;
  return std::forward<F>(f)();
}

// As syscall(f), for calls known to block for long: the P is handed off before f runs.
template <class F>
decltype(auto) blocking_syscall(F&& f) {
  SyscallScope scope(SyscallScope::blocks_long);
  return std::forward<F>(f)();
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
