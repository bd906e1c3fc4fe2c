#include "fatal.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace nugo::detail {
namespace {

constinit std::atomic<FatalTraceback> fatal_traceback{nullptr};

}  // namespace

void set_fatal_traceback(FatalTraceback print) noexcept {
  fatal_traceback.store(print, std::memory_order_release);
}

void fatal(const char* fmt, ...) noexcept {
  std::fputs("fatal error: ", stderr);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  if (FatalTraceback print = fatal_traceback.load(std::memory_order_acquire))
    print(stderr);  // raised on a goroutine: where
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
