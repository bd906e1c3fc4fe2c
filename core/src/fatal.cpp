#include "fatal.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "traceback.hpp"

namespace nugo::detail {

void fatal(const char* fmt, ...) noexcept {
  std::fputs("fatal error: ", stderr);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  print_current_traceback(stderr);  // raised on a goroutine: where
  std::fflush(stderr);
  exit_fatal();
}

void exit_fatal() {
#if NUGO_FUZZ
  std::abort();
#else
  std::_Exit(2);
#endif
}

}  // namespace nugo::detail
