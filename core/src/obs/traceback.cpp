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

#include "views.hpp"

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
  std::string symbol;  // the mangled name, when the symbol table named the function
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
          if (name) *static_cast<std::string*>(data) = name;
        },
        [](void*, const char*, int) {}, &symbol);
    if (!symbol.empty()) {
      if (frames.empty()) frames.push_back({});
      frames.back().function = demangle(symbol.c_str());
      frames.back().symbol = std::move(symbol);
    }
  }
  return frames;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

// A function's qualified name, without the return type the demangler puts before a template
// function's name ("int* nugo::detail::closure_object<int>(...)"): a name the symbol table
// gave in namespace nugo starts at its first "nugo::".
std::string_view qualified_name(const Frame& f) {
  std::string_view name = f.function;
  for (std::string_view mangled : {"_ZN4nugo", "_ZNK4nugo", "_ZZN4nugo", "_ZZNK4nugo"})
    if (starts_with(f.symbol, mangled)) {
      if (std::size_t at = name.find("nugo::"); at != name.npos) return name.substr(at);
      break;
    }
  return name;
}

// The name part of a qualified name: up to its parameter list (past the parentheses of
// "(anonymous namespace)" and of "operator()").
std::string_view name_part(std::string_view q) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i] != '(') continue;
    if (q.substr(i).starts_with(kAnonymous)) {
      i += kAnonymous.size() - 1;
    } else if (i >= 8 && q.substr(i - 8, 8) == "operator") {
      ++i;
    } else {
      return q.substr(0, i);
    }
  }
  return q;
}

// A file of the runtime's own sources: under one of the folders core/CMakeLists.txt compiled
// them from (NUGO_RUNTIME_SOURCE_DIRS, relative to the project, ':'-separated), whatever prefix
// the debug information gives the project's root.
bool runtime_source(std::string_view file) {
  std::string_view dirs = NUGO_RUNTIME_SOURCE_DIRS;
  while (!dirs.empty()) {
    size_t end = dirs.find(':');
    std::string_view dir = dirs.substr(0, end);
    size_t at = file.find(dir);
    if (at != std::string_view::npos && (at == 0 || file[at - 1] == '/') &&
        file.find('/', at + dir.size()) == std::string_view::npos)
      return true;
    dirs = end == std::string_view::npos ? std::string_view{} : dirs.substr(end + 1);
  }
  return false;
}

// The runtime's own frames: its internals (by name, or by file for inlined frames, which the
// debug information names without their namespace), its plumbing between run()/go() and the
// program's function (runtime.hpp, syscall.hpp), and the capture machinery.
bool runtime_frame(const Frame& f) {
  std::string_view q = qualified_name(f);
  return starts_with(q, "nugo::detail::") || starts_with(q, "_Unwind") ||
         starts_with(q, "backtrace_") || runtime_source(f.file) ||
         contains(f.file, "/nugo/runtime.hpp") || contains(f.file, "/nugo/syscall.hpp");
}

// Without debug information a frame is only its symbol. The runtime's code compiled without
// -g (a Release libnugo) has no file to be known by: its functions in namespace nugo whose
// names are not templates are its own (nugo::yield, nugo::WaitGroup::wait), while templates
// are the public headers' (nugo::Chan<int>::recv), instantiated in the program and shown as
// the program's. (A program's own code in namespace nugo would be hidden too: it has none.)
bool runtime_symbol(const Frame& f) {
  if (!f.file.empty()) return false;
  std::string_view q = qualified_name(f);
  std::string_view name = name_part(q);
  if (std::size_t op = name.find("operator"); op != name.npos) name = name.substr(0, op);
  return starts_with(q, "nugo::") && !contains(name, "<");
}

// The program's callable, inlined into one of the runtime's entries (run's main goroutine,
// go's closure): without debug information the entry's symbol is all that is left of it, and
// its first template argument names it ("nugo::detail::run<main::{lambda()#1}>(...)::
// {lambda(void*)#2}::_FUN(void*)" gives "main::{lambda()#1}"). Empty for anything else:
// another runtime function, a callable with no name of the program's (a function pointer, a
// std:: wrapper), or a name this cannot read.
std::string inlined_callable(const Frame& f) {
  if (!f.file.empty()) return {};
  std::string_view q = qualified_name(f);
  std::string_view entry;
  for (std::string_view e : {"nugo::detail::run<", "nugo::detail::bind_closure<"})
    if (starts_with(q, e)) entry = e;
  if (entry.empty() || !contains(q, ")::{lambda")) return {};
  int depth = 1;
  for (std::size_t i = entry.size(); i < q.size(); ++i) {
    const char c = q[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if ((depth == 1 && c == ',') || depth == 0) {
      std::string_view arg = q.substr(entry.size(), i - entry.size());
      if (starts_with(arg, "nugo::") || starts_with(arg, "std::") || contains(arg, "(*)") ||
          contains(arg, "(&)"))
        return {};
      return std::string(arg);
    }
  }
  return {};
}

// A goroutine's frames end at gentry; below it lies only the context's entry trampoline.
bool goroutine_entry(const Frame& f) {
  return f.function == "gentry" || contains(f.function, "::gentry(") ||
         f.function == "make_fcontext";
}

}  // namespace

void traceback_here(Traceback* tb, int skip) {
  unwind_into(tb, skip + 1);
  // Not a tail call: this frame is on the stack in every build, so skip + 1 counts it.
  asm volatile("" ::: "memory");
}

std::string format_traceback(const Traceback& tb, int max_frames) {
  std::string out;
  int shown = 0;
  bool more = false;
  std::string last_shown;
  for (int i = 0; i < tb.n && !more; ++i) {
    // A return address: the call it returns from is the byte before.
    for (const Frame& f : frames_at(tb.pc[i] - 1)) {
      if (goroutine_entry(f)) {
        i = tb.n;
        break;
      }
      std::string callable = inlined_callable(f);
      // A callable that was not inlined has a frame of its own, just shown.
      if (!callable.empty() && starts_with(last_shown, callable)) continue;
      if (callable.empty() && (runtime_frame(f) || runtime_symbol(f))) continue;
      if (shown == max_frames) {
        more = true;
        break;
      }
      ++shown;
      last_shown = !callable.empty() ? callable : f.function.empty() ? "?" : f.function;
      out += last_shown;
      out += "\n\t";
      if (!f.file.empty())
        out += f.file + ":" + std::to_string(f.line);
      else if (!callable.empty())
        out += "(inlined into nugo's entry; no line information: build with -g)";
      else
        out += "(no line information: build with -g)";
      out += "\n";
    }
  }
  if (more || (tb.n == Traceback::kMaxFrames && shown > 0)) out += "...additional frames elided...\n";
  return out;
}

void print_current_traceback(std::FILE* out, const CurrentGoroutine& gp) noexcept {
  char here;
  // Only on the goroutine's own stack: not on g0, nor in a signal handler's alternate stack.
  if (&here < gp.stack_lo || &here >= gp.stack_hi) return;
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
  std::fprintf(out, "\ngoroutine %lld [running]:\n%s", static_cast<long long>(gp.goid),
               !symbolized ? "(the frames could not be symbolized)\n"
               : frames.empty() ? "(no symbols)\n"
                                : frames.c_str());
}

}  // namespace nugo::detail
