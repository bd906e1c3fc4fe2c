// Go's I/O loop for a descriptor (internal/poll's fd.Read and ignoringEINTRIO), written once
// for nugo::net and nugo::bufio.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <system_error>

#include "errno.hpp"
#include "nugo/io.hpp"

namespace nugo::detail {

// op is one system call (>= 0, or -1 with errno). It is retried after EINTR, and after
// wait() on EAGAIN (which only a non-blocking descriptor says); wait returns the error that
// ends the call (closed, a deadline passed) or none. errno is read through thread_errno:
// after a wait the goroutine may be on another thread.
template <class Op, class Wait>
io::IoResult fd_loop(Op op, Wait wait) {
  for (;;) {
    ssize_t n = op();
    if (n >= 0) return {static_cast<std::size_t>(n), {}};
    int e = thread_errno();
    if (e == EINTR) continue;
    if (e != EAGAIN && e != EWOULDBLOCK) return {0, std::error_code(e, std::system_category())};
    if (std::error_code w = wait()) return {0, w};
  }
}

}  // namespace nugo::detail
