// Writing a whole buffer to a descriptor from runtime code (the tracer's files, schedtrace's
// lines on stderr), where there is no caller to hand a short write back to.
#pragma once

#include <cstddef>

namespace nugo::detail {

// Writes all n bytes to fd, retrying short writes and EINTR. The first failure's errno goes
// to *err (EIO for a write that wrote nothing), and once *err is set later calls do nothing,
// so a caller can issue many writes and look once.
void write_all(int fd, const void* data, std::size_t n, int* err);

}  // namespace nugo::detail
