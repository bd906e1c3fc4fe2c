#include "fdwrite.hpp"

#include <unistd.h>

#include <cerrno>

namespace nugo::detail {

void write_all(int fd, const void* data, std::size_t n, int* err) {
  const char* p = static_cast<const char*>(data);
  while (n > 0 && *err == 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno != EINTR) *err = errno;
      continue;
    }
    if (w == 0) {
      *err = EIO;
      break;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace nugo::detail
