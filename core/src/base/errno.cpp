#include "errno.hpp"

#include <cerrno>

#include "threadlocks.hpp"

namespace nugo::detail {

NUGO_NOPREEMPT int thread_errno() { return errno; }
NUGO_NOPREEMPT void set_thread_errno(int e) { errno = e; }

}  // namespace nugo::detail
