// nugo::syscall and its wrappers: entersyscall/exitsyscall (proc.cpp) around the call, with
// errno carried across the exit, which may resume the goroutine on another thread.
#include "nugo/syscall.hpp"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "preempt.hpp"
#include "sched.hpp"

namespace nugo {
SyscallScope::SyscallScope(Kind kind) {
  detail::NoPreempt np;  // the M we look at stays ours
  detail::M* m = detail::getm();
  // Outside goroutines, and inside another syscall (no P), there is nothing to do.
  active_ = m && m->curg && m->p;
  if (active_) detail::entersyscall(kind == blocks_long);
}

SyscallScope::~SyscallScope() {
  if (!active_) return;
  int saved = *detail::errno_location();
  detail::exitsyscall();
  *detail::errno_location() = saved;
}

namespace sys {

ssize_t read(int fd, void* buf, std::size_t count) {
  return nugo::syscall([&] { return ::read(fd, buf, count); });
}

ssize_t write(int fd, const void* buf, std::size_t count) {
  return nugo::syscall([&] { return ::write(fd, buf, count); });
}

ssize_t pread(int fd, void* buf, std::size_t count, off_t offset) {
  return nugo::syscall([&] { return ::pread(fd, buf, count, offset); });
}

ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset) {
  return nugo::syscall([&] { return ::pwrite(fd, buf, count, offset); });
}

int fsync(int fd) {
  return nugo::syscall([&] { return ::fsync(fd); });
}

pid_t waitpid(pid_t pid, int* status, int options) {
  if (options & WNOHANG) return nugo::syscall([&] { return ::waitpid(pid, status, options); });
  return nugo::blocking_syscall([&] { return ::waitpid(pid, status, options); });
}

void nanosleep(std::chrono::nanoseconds d) {
  if (d.count() <= 0) return;
  timespec req{static_cast<time_t>(d.count() / 1'000'000'000),
               static_cast<long>(d.count() % 1'000'000'000)};
  nugo::syscall([&] {
    timespec rem{};
    while (::nanosleep(&req, &rem) != 0 && errno == EINTR) req = rem;
  });
}

}  // namespace sys
}  // namespace nugo
