// Tracebacks for fatal reports: where a goroutine is (Go's traceback, in C++ terms).
//
// A stack is captured as return addresses with the unwinder (_Unwind_Backtrace, the DWARF
// call-frame information every x86-64 object carries), and symbolized only when printed, with
// libbacktrace (GCC's, from libgcc-12-dev): function, file and line, inlined frames included,
// from the binary's debug information; without it, the symbol table's names.
//
// A parked goroutine is captured in place by the scheduler (sched/inspect.cpp), which switches
// to its saved context with Boost.Context's ontop_fcontext and calls traceback_here on top of
// that stack, as if the goroutine's own switch had called it. The unwinder then walks the
// goroutine's frames as they are. The goroutine is never resumed: this is for reports that
// end the process.
//
// Nothing here runs on a fast path: capturing costs microseconds, symbolizing milliseconds.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace nugo::detail {

struct Traceback {
  static constexpr int kMaxFrames = 48;
  std::uintptr_t pc[kMaxFrames];  // return addresses, innermost first
  int n = 0;
};

// The calling thread's stack, from the caller of this function, leaving out the innermost
// `skip` frames of its caller's.
[[gnu::noinline]] void traceback_here(Traceback* tb, int skip = 0);

// The frames of tb that are the program's code, as Go prints them: the function on one line,
// then its file and line indented (frames inside the runtime, nugo::detail, are left out; the
// public templates a program calls, like nugo::Chan<T>::recv, are kept). At most max_frames
// frames; "..." after them if there were more. Empty if nothing could be symbolized.
std::string format_traceback(const Traceback& tb, int max_frames = 16);

struct CurrentGoroutine;  // views.hpp
// "goroutine N [running]:" and the frames, for a fatal error raised on g's stack by the
// calling thread (the scheduler's hook, sched/inspect.cpp, says which goroutine that is).
void print_current_traceback(std::FILE* out, const CurrentGoroutine& g) noexcept;

}  // namespace nugo::detail
