// Tracebacks for fatal reports (traceback.hpp): capture with the unwinder, symbolize with
// libbacktrace, print in Go's shape.
#include "traceback.hpp"

#include <cxxabi.h>
#include <unwind.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include NUGO_BACKTRACE_H  // GCC's libbacktrace (the path is set by core/CMakeLists.txt)

#include "g.hpp"
#include "m.hpp"
#include "sched.hpp"

namespace nugo::detail {
namespace {

struct Unwind {
  Traceback* tb;
  int skip;  // frames of the capture machinery itself
};

_Unwind_Reason_Code record_frame(_Unwind_Context* ctx, void* arg) {
  auto* u = static_cast<Unwind*>(arg);
  std::uintptr_t pc = _Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  if (u->skip > 0) {
    --u->skip;
    return _URC_NO_REASON;
  }
  u->tb->pc[u->tb->n++] = pc;
  return u->tb->n == Traceback::kMaxFrames ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// Not inlined, so that `skip` counts a frame of its own.
[[gnu::noinline]] void unwind_into(Traceback* tb, int skip) {
  tb->n = 0;
  Unwind u{tb, skip + 1};  // and this function's frame
  _Unwind_Backtrace(record_frame, &u);
}

// Runs on top of a parked goroutine's stack (ontop_fcontext): the goroutine's switch appears
// to have called it, so the unwinder continues into the goroutine's own frames. It never
// returns there: it jumps back to the reporter, and the goroutine stays where it was parked.
struct ParkedCapture {
  Traceback* tb;
  G* gp;
  M* m;
};

[[noreturn]] transfer_t unwind_parked(transfer_t t) {
  auto* req = static_cast<ParkedCapture*>(t.data);
  sanitizer_finish_switch(req->gp->san);
  unwind_into(req->tb, 1);  // from the goroutine's switch (mcall) outwards
  sanitizer_start_switch(nullptr, req->m->g0san);  // this stack is left for good
  jump_fcontext(t.fctx, nullptr);
  __builtin_unreachable();
}

// ---- symbolization ----

backtrace_state* symbolizer() {
  // With threaded = 1 the state may be shared by threads reporting at once. Errors (no debug
  // information, say) are not reported: the symbol table, then the bare address, stand in.
  static backtrace_state* state =
      backtrace_create_state(nullptr, 1, [](void*, const char*, int) {}, nullptr);
  return state;
}

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && readable ? readable : name;
  std::free(readable);
  return s;
}

struct Frame {
  std::string function;
  std::string file;
  int line = 0;
};

// The frames at pc, innermost (inlined) first.
std::vector<Frame> frames_at(std::uintptr_t pc) {
  std::vector<Frame> frames;
  backtrace_state* state = symbolizer();
  if (!state) return frames;
  backtrace_pcinfo(
      state, pc,
      [](void* data, std::uintptr_t, const char* file, int line, const char* function) {
        if (function || file)
          static_cast<std::vector<Frame>*>(data)->push_back(
              {demangle(function), file ? file : "", line});
        return 0;
      },
      [](void*, const char*, int) {}, &frames);
  // The debug information names a function as declared ("operator()"); the symbol table has
  // its full name ("main::{lambda()#1}::operator()() const"), but only for the outermost,
  // not inlined, function at pc. Without debug information it is all there is.
  if (frames.empty() || frames.back().function.find("::") == std::string::npos) {
    std::string symbol;
    backtrace_syminfo(
        state, pc,
        [](void* data, std::uintptr_t, const char* name, std::uintptr_t, std::uintptr_t) {
          if (name) *static_cast<std::string*>(data) = demangle(name);
        },
        [](void*, const char*, int) {}, &symbol);
    if (!symbol.empty()) {
      if (frames.empty()) frames.push_back({});
      frames.back().function = symbol;
    }
  }
  return frames;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

// The runtime's own frames: its internals (by name, or by file for inlined frames, which the
// debug information names without their namespace), its plumbing between run()/go() and the
// program's function (runtime.hpp), and the capture machinery.
bool runtime_frame(const Frame& f) {
  return starts_with(f.function, "nugo::detail::") || starts_with(f.function, "_Unwind") ||
         starts_with(f.function, "backtrace_") || contains(f.file, "/core/src/") ||
         contains(f.file, "/numa/src/") || contains(f.file, "/nugo/runtime.hpp") ||
         contains(f.file, "/nugo/syscall.hpp");
}

// A goroutine's frames end at gentry; below it lies only the context's entry trampoline.
bool goroutine_entry(const Frame& f) {
  return f.function == "gentry" || contains(f.function, "::gentry(") ||
         f.function == "make_fcontext";
}

}  // namespace

void traceback_here(Traceback* tb) { unwind_into(tb, 1); }

void traceback_parked(M* m, G* gp, Traceback* tb) {
  tb->n = 0;
  if (!gp->ctx) return;  // never ran: no frames yet
  // The unwinder runs below the goroutine's saved stack pointer: leave a stack that is
  // nearly full alone rather than fault in its guard page.
  constexpr std::ptrdiff_t kUnwindRoom = 16 * 1024;
  if (static_cast<char*>(gp->ctx) - gp->stack.lo < kUnwindRoom) return;
  ParkedCapture req{tb, gp, m};
  sanitizer_start_switch(&m->g0san, gp->san);
  boost::context::detail::ontop_fcontext(gp->ctx, &req, unwind_parked);
  sanitizer_finish_switch(m->g0san);
  gp->ctx = nullptr;  // the saved context was consumed; the goroutine cannot be resumed
}

std::string format_traceback(const Traceback& tb, int max_frames) {
  std::string out;
  int shown = 0;
  bool more = false;
  for (int i = 0; i < tb.n && !more; ++i) {
    // A return address: the call it returns from is the byte before.
    for (const Frame& f : frames_at(tb.pc[i] - 1)) {
      if (goroutine_entry(f)) {
        i = tb.n;
        break;
      }
      if (runtime_frame(f)) continue;
      if (shown == max_frames) {
        more = true;
        break;
      }
      ++shown;
      out += f.function.empty() ? "?" : f.function;
      out += "\n\t";
      if (!f.file.empty())
        out += f.file + ":" + std::to_string(f.line);
      else
        out += "(no line information: build with -g)";
      out += "\n";
    }
  }
  if (more || (tb.n == Traceback::kMaxFrames && shown > 0)) out += "...additional frames elided...\n";
  return out;
}

void print_current_traceback(std::FILE* out) noexcept {
  G* gp = getg();
  char here;
  // Only on the goroutine's own stack: not on g0, nor in a signal handler's alternate stack.
  // Not in a child of fork(): it may not start a thread, and a lock of the allocator may be
  // held by a thread that did not survive the fork.
  if (!gp || !gp->stack || &here < gp->stack.lo || &here >= gp->stack.hi || forked_child) return;
  Traceback tb;
  traceback_here(&tb);  // a few hundred bytes of the goroutine's stack
  // Symbolizing takes far more (libbacktrace reads the debug information, demangling
  // recurses) than a goroutine's stack may have left: it runs on a thread of its own. If
  // that fails (no thread, no memory), the report goes without the frames.
  std::string frames;
  bool symbolized = false;
  try {
    std::thread([&] {
      try {
        frames = format_traceback(tb);
        symbolized = true;
      } catch (...) {  // out of memory: below
      }
    }).join();
  } catch (...) {  // no thread
  }
  std::fprintf(out, "\ngoroutine %lld [running]:\n%s", static_cast<long long>(gp->goid),
               !symbolized ? "(the frames could not be symbolized)\n"
               : frames.empty() ? "(no symbols)\n"
                                : frames.c_str());
}

}  // namespace nugo::detail
