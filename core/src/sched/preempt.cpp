// Signal-based asynchronous preemption, after Go 1.14's (preempt.go, signal_unix.go).
//
// sysmon decides that a P's time slice is over (sysmon.cpp), sets pp->preempt and sends the
// preemption signal to the P's M with tgkill, at most one pending per M. The handler runs on
// the M's alternate signal stack. If the M is running a goroutine at an async safe point, it
// injects a call to nugo_async_preempt (preempt_amd64.S), which saves everything, yields the
// goroutine to the global run queue and, once the goroutine runs again on any M, restores
// everything and returns to the interrupted instruction. Otherwise the handler does nothing
// and sysmon signals again a tick later.
//
// An async safe point is an interrupted state where all of this holds:
//   - the M has a P whose slice sysmon ended, and its current G is running;
//   - the G is not in runtime code (G::locks == 0, see NoPreempt in nopreempt.hpp), which also
//     covers the context switch itself;
//   - the interrupted SP lies in the G's own stack, with room below it for the red zone, the
//     XSAVE area and the frames that yield (so g0 and any stack a user switched to are out);
//   - the interrupted PC is in the program's own code (Config::preemptible_libraries, and
//     core/README.md "What is preemptible"): the main executable's text, less the C++ runtime
//     a -static-libstdc++ executable carries and the functions Config::nopreempt_symbols
//     names, plus the shared objects the program names. Go preempts only code its compiler
//     prepared; likewise no library is preempted unless the program vouches for it, because a
//     goroutine may resume on another thread and a library may keep per-thread state across
//     the instruction it was stopped at (malloc's thread caches, jemalloc's, tcmalloc's and
//     mimalloc's per-thread heaps, OpenSSL's error queue, stdio locks). The ranges are found
//     once per run(); a static build whose C library or C++ runtime cannot be told from the
//     program is refused asynchronous preemption at start, with a message.
#include "preempt.hpp"

#include <cpuid.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "fatal.hpp"
#include "preempt_abi.h"
#include "errno.hpp"
#include "proc.hpp"
#include "signals.hpp"
#include "threadlocks.hpp"

extern "C" {
// The trampoline's parameters, read by preempt_amd64.S.
__attribute__((visibility("hidden"))) std::uint64_t nugo_xsave_size = 512;
__attribute__((visibility("hidden"))) std::uint64_t nugo_xsave_mask = 0;
__attribute__((visibility("hidden"))) std::uint8_t nugo_have_xsave = 0;
__attribute__((visibility("hidden"))) void nugo_async_preempt();
__attribute__((visibility("hidden"))) void nugo_async_preempt2();
}

namespace nugo::detail {

namespace {

// ThreadSanitizer defers asynchronous signals to its next interceptor and gives the handler a
// copy of the interrupted context: a preemption could neither redirect the goroutine nor
// safely write below its stack pointer. TSan builds preempt cooperatively only.
#if NUGO_TSAN
constexpr bool kSanitizerDefersSignals = true;
#else
constexpr bool kSanitizerDefersSignals = false;
#endif

constexpr std::uintptr_t kRedZone = NUGO_RED_ZONE;  // preempt_abi.h, shared with the trampoline
static_assert(kRedZone == 128, "the x86-64 System V red zone is 128 bytes");
// Stack the yield needs below the XSAVE area: nugo_async_preempt2, mcall, the fcontext
// switch, and slack for sanitizer builds.
constexpr std::uintptr_t kYieldRoom = 8 * 1024;

// What the signal may stop a goroutine in (core/README.md, "What is preemptible"): the
// preemptible ranges (the main executable's text, the shared objects the program names), less
// the excluded ranges inside them (the C++ runtime that a -static-libstdc++ executable carries,
// the functions Config::nopreempt_symbols names). init builds both before the handler can run
// and publishes each with a release store of its count; the handler only reads them.
struct TextRange {
  std::uintptr_t lo, hi;
};
constexpr int kMaxRanges = 256;
TextRange preemptible_text[kMaxRanges];
std::atomic<int> preemptible_count{0};
std::vector<TextRange> excluded_text;  // sorted and disjoint
std::atomic<int> excluded_count{0};

std::atomic<bool> async_enabled{false};
pid_t process_id = 0;
int preempt_sig = SIGURG;
struct sigaction previous_action[NSIG];

std::string_view base_name(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "libfoo" names libfoo.so, libfoo.so.1 and libfoo-2.3.so, not libfoobar.so; a name with a
// slash names one path.
bool names_object(std::string_view name, std::string_view path) {
  if (name.find('/') != std::string_view::npos) return name == path;
  std::string_view base = base_name(path);
  return base.substr(0, name.size()) == name &&
         (base.size() == name.size() || base[name.size()] == '.' || base[name.size()] == '-');
}

void add_text_segments(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    int n = preemptible_count.load(std::memory_order_relaxed);
    if (n == kMaxRanges) fatal("preempt: more than %d preemptible text segments", kMaxRanges);
    preemptible_text[n] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
    preemptible_count.store(n + 1, std::memory_order_release);
  }
}

bool contains_code(const dl_phdr_info* info, std::uintptr_t addr) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && addr >= lo && addr < lo + ph.p_memsz)
      return true;
  }
  return false;
}

// What the scan of the loaded objects found.
struct LoadedObjects {
  const Config* cfg;
  int index = 0;
  std::uintptr_t exe_bias = 0;    // the main executable's load address (PIE)
  bool shared_libc = false;       // libc.so is loaded: the C library is not in the executable
  bool shared_cxx_runtime = false;  // libstdc++.so (or libc++.so) is loaded
  std::vector<bool> named_found;  // per Config::preemptible_libraries entry
};

int scan_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* seen = static_cast<LoadedObjects*>(data);
  if (seen->index++ == 0) {  // the main executable comes first
    seen->exe_bias = info->dlpi_addr;
    add_text_segments(info);
    return 0;
  }
  std::string_view path = info->dlpi_name ? info->dlpi_name : "";
  std::string_view base = base_name(path);
  if (names_object("libc.so", base)) seen->shared_libc = true;
  if (names_object("libstdc++.so", base) || names_object("libc++.so", base)) seen->shared_cxx_runtime = true;
  // nugo itself as a shared object is runtime code through and through; Config::validate
  // refuses the C and C++ runtimes' names.
  if (path.empty() || contains_code(info, reinterpret_cast<std::uintptr_t>(&preempt::init)))
    return 0;
  const auto& names = seen->cfg->preemptible_libraries;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names_object(names[i], path)) {
      seen->named_found[i] = true;
      add_text_segments(info);
      break;
    }
  return 0;
}

// A function of libstdc++, libsupc++ or libgcc, by its symbol name: std:: (and the standard
// abbreviations of the Itanium mangling: std::allocator, basic_string, string, istream,
// ostream, iostream), __gnu_cxx::, __cxxabiv1::, and the C-linkage entry points of the C++ ABI
// and the unwinder.
bool cxx_runtime_symbol(std::string_view name) {
  static constexpr std::string_view kCNames[] = {
      "__cxa_", "__gxx_", "_Unwind_", "__gcc_", "__dynamic_cast", "__register_frame",
      "__deregister_frame", "__frame_state_for", "__emutls_", "_txnal_"};
  for (std::string_view c : kCNames)
    if (name.substr(0, c.size()) == c) return true;
  if (name.substr(0, 2) != "_Z") return false;
  name.remove_prefix(2);
  if (name.substr(0, 3) == "GTt") name.remove_prefix(3);  // a transaction-safe clone
  if (!name.empty() && name[0] == 'N') {
    name.remove_prefix(1);
    while (!name.empty() && (name[0] == 'r' || name[0] == 'V' || name[0] == 'K')) name.remove_prefix(1);
  }
  if (name.size() >= 2 && name[0] == 'S' && std::strchr("tabsiod", name[1])) return true;
  return name.substr(0, 10) == "9__gnu_cxx" || name.substr(0, 12) == "10__cxxabiv1";
}

// The executable's own symbol table (.symtab; a stripped executable has none), mapped for the
// scan and unmapped after it.
class SymbolTable {
 public:
  SymbolTable() {
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(sizeof(ElfW(Ehdr)))) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) base_ = static_cast<const char*>(p);
    }
    close(fd);
    if (!base_) return;
    const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base_);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff == 0 ||
        eh->e_shoff + eh->e_shnum * sizeof(ElfW(Shdr)) > size_)
      return;
    const auto* sh = reinterpret_cast<const ElfW(Shdr)*>(base_ + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr)& strtab = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size_ || strtab.sh_offset + strtab.sh_size > size_) return;
      syms_ = reinterpret_cast<const ElfW(Sym)*>(base_ + sh[i].sh_offset);
      count_ = sh[i].sh_size / sizeof(ElfW(Sym));
      strings_ = base_ + strtab.sh_offset;
      strings_size_ = strtab.sh_size;
    }
  }
  ~SymbolTable() {
    if (base_) munmap(const_cast<char*>(base_), size_);
  }
  SymbolTable(const SymbolTable&) = delete;
  SymbolTable& operator=(const SymbolTable&) = delete;

  bool present() const { return syms_ != nullptr; }
  // Calls f(name, lo, hi, file) for each defined function with a size, at its link address.
  // file: for a file-local function, the index of the object file it came from (the linker
  // puts each object's local symbols after an STT_FILE symbol), else -1.
  template <class F>
  void for_each_function(F f) const {
    int file = -1;
    for (std::size_t i = 0; i < count_; ++i) {
      const ElfW(Sym)& sym = syms_[i];
      if (ELF64_ST_TYPE(sym.st_info) == STT_FILE) ++file;
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_size == 0 ||
          sym.st_name >= strings_size_)
        continue;
      bool local = ELF64_ST_BIND(sym.st_info) == STB_LOCAL;
      f(std::string_view(strings_ + sym.st_name), sym.st_value, sym.st_value + sym.st_size,
        local ? std::max(file, 0) : -1);
    }
  }

 private:
  const char* base_ = nullptr;
  std::size_t size_ = 0;
  const ElfW(Sym)* syms_ = nullptr;
  std::size_t count_ = 0;
  const char* strings_ = nullptr;
  std::size_t strings_size_ = 0;
};

// The executable's excluded ranges: the functions named as the C++ runtime's (when it is inside
// the executable) or by a prefix of Config::nopreempt_symbols, and the file-local functions of
// the C++ runtime's object files. Those have no telling name; an object file is taken as the
// runtime's when each of its local functions lies between two runtime functions in address
// order (the linker lays out an archive's members together, after the program's objects),
// and as the program's otherwise (a program's file-local functions sit beside its own global
// ones). Returns how many C++ runtime functions it found; *matched counts each prefix's.
int exclude_functions(const SymbolTable& symtab, std::uintptr_t bias, bool cxx_static,
                      const std::vector<std::string>& prefixes, std::vector<int>* matched) {
  enum class Kind : std::uint8_t { excluded, program, unknown };
  struct Fn {
    std::uintptr_t lo, hi;
    Kind kind;
    int file;
  };
  std::vector<Fn> fns;
  int cxx = 0, files = 0;
  symtab.for_each_function([&](std::string_view name, std::uintptr_t lo, std::uintptr_t hi, int file) {
    Kind kind = Kind::program;
    for (std::size_t i = 0; i < prefixes.size(); ++i)
      if (name.substr(0, prefixes[i].size()) == prefixes[i]) {
        ++(*matched)[i];
        kind = Kind::excluded;
      }
    if (kind == Kind::program && cxx_static) {
      if (cxx_runtime_symbol(name)) {
        kind = Kind::excluded;
        ++cxx;
      } else if (file >= 0) {
        kind = Kind::unknown;
      }
    }
    files = std::max(files, file + 1);
    fns.push_back({lo + bias, hi + bias, kind, file});
  });
  // At one address, an excluded name wins over the program's (aliases, folded functions).
  std::sort(fns.begin(), fns.end(), [](const Fn& a, const Fn& b) {
    return a.lo != b.lo ? a.lo < b.lo : a.kind < b.kind;
  });
  // Each file-local function of unknown origin: between two runtime functions or not.
  std::vector<bool> program_file(static_cast<std::size_t>(files), false);
  Kind before = Kind::program;
  std::vector<std::size_t> pending;  // unknown functions since the last named one
  auto settle = [&](Kind after) {
    for (std::size_t i : pending)
      if (before != Kind::excluded || after != Kind::excluded) program_file[static_cast<std::size_t>(fns[i].file)] = true;
    pending.clear();
  };
  for (std::size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].kind == Kind::unknown) {
      pending.push_back(i);
    } else {
      settle(fns[i].kind);
      before = fns[i].kind;
    }
  }
  settle(Kind::program);
  for (Fn& f : fns)
    if (f.kind == Kind::unknown) f.kind = program_file[static_cast<std::size_t>(f.file)] ? Kind::program : Kind::excluded;
  // Runs of excluded functions, with the padding between them.
  std::vector<TextRange> ranges;
  bool open_run = false;
  TextRange run{};
  for (const Fn& f : fns) {
    if (f.kind == Kind::excluded) {
      if (open_run) {
        run.hi = std::max(run.hi, f.hi);
      } else {
        run = {f.lo, f.hi};
        open_run = true;
      }
    } else if (open_run && f.lo >= run.hi) {
      ranges.push_back(run);
      open_run = false;
    }
  }
  if (open_run) ranges.push_back(run);
  excluded_text = std::move(ranges);
  excluded_count.store(static_cast<int>(excluded_text.size()), std::memory_order_release);
  return cxx;
}

// Builds the ranges for this run(). Returns false, having said why on stderr, when the program's
// build makes asynchronous preemption unsafe and Config::async_preempt_force does not override.
bool find_preemptible_text(const Config& cfg, bool async) {
  preemptible_count.store(0, std::memory_order_relaxed);
  excluded_count.store(0, std::memory_order_relaxed);
  LoadedObjects seen;
  seen.cfg = &cfg;
  seen.named_found.assign(cfg.preemptible_libraries.size(), false);
  dl_iterate_phdr(scan_object, &seen);
  for (std::size_t i = 0; i < cfg.preemptible_libraries.size(); ++i)
    if (!seen.named_found[i])
      std::fprintf(stderr, "nugo: warning: NUGO_PREEMPTIBLE: no loaded shared object is named '%s'\n",
                   cfg.preemptible_libraries[i].c_str());
  auto refuse = [&](const char* cause) {
    if (cfg.async_preempt_force) return true;
    if (async)
      std::fprintf(stderr,
                   "nugo: asynchronous preemption is off: %s, so the runtime cannot tell its code "
                   "from the program's; goroutines yield only at scheduling points and "
                   "nugo::preempt_point(). Set NUGO_DEBUG=asyncpreemptforce=1 to preempt all the "
                   "same (core/README.md, \"What is preemptible\").\n",
                   cause);
    return false;
  };
  if (!seen.shared_libc) return refuse("this executable is statically linked with the C library");
  const bool cxx_static = !seen.shared_cxx_runtime;
  if (!cxx_static && cfg.nopreempt_symbols.empty()) return true;
  SymbolTable symtab;
  if (!symtab.present()) {
    if (cxx_static)
      return refuse("this executable carries the C++ runtime (-static-libstdc++) and has no symbol table (stripped)");
    return refuse("NUGO_NOPREEMPT_SYMBOLS needs the executable's symbol table, and it has none (stripped)");
  }
  std::vector<int> matched(cfg.nopreempt_symbols.size(), 0);
  int cxx = exclude_functions(symtab, seen.exe_bias, cxx_static, cfg.nopreempt_symbols, &matched);
  for (std::size_t i = 0; i < matched.size(); ++i)
    if (matched[i] == 0)
      std::fprintf(stderr, "nugo: warning: NUGO_NOPREEMPT_SYMBOLS: no function of the executable begins with '%s'\n",
                   cfg.nopreempt_symbols[i].c_str());
  if (cxx_static && cxx == 0)
    return refuse("this executable carries the C++ runtime (-static-libstdc++) and its symbol table names none of its functions");
  return true;
}

void size_xsave_area() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE)) {
    nugo_have_xsave = 0;
    nugo_xsave_size = 512;  // FXSAVE
    return;
  }
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  __get_cpuid_count(0xd, 0, &eax, &ebx, &ecx, &edx);
  nugo_xsave_mask = (static_cast<std::uint64_t>(hi) << 32) | lo;
  nugo_xsave_size = ebx;  // the standard-format size for the features enabled in XCR0
  nugo_have_xsave = 1;
}

bool in_preemptible_text(std::uintptr_t pc) {
  bool in = false;
  int n = preemptible_count.load(std::memory_order_acquire);
  for (int i = 0; i < n && !in; ++i) in = pc >= preemptible_text[i].lo && pc < preemptible_text[i].hi;
  if (!in) return false;
  // The last excluded range that starts at or below pc, by binary search.
  int lo = 0, hi = excluded_count.load(std::memory_order_acquire);
  const TextRange* ex = excluded_text.data();
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (ex[mid].lo <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == 0 || pc >= ex[lo - 1].hi;
}

// The calling thread is unwinding an exception or inside a catch block. The layout is the
// Itanium C++ ABI's __cxa_eh_globals, which cxxabi.h declares but does not define;
// __cxa_get_globals only returns the address of a thread-local (async-signal-safe).
bool in_exception_handling() {
  struct EhGlobals {
    void* caught_exceptions;
    unsigned int uncaught_exceptions;
  };
  const auto* eh = reinterpret_cast<const EhGlobals*>(abi::__cxa_get_globals());
  return eh->caught_exceptions != nullptr || eh->uncaught_exceptions != 0;
}

// Go's wantAsyncPreempt and isAsyncSafePoint, together.
bool async_safe_point(M* m, const ucontext_t* uc) {
  G* gp = m->curg;
  P* pp = m->p;
  if (!gp || !pp || !pp->preempt.load(std::memory_order_relaxed)) return false;
  if (gp->status.load(std::memory_order_relaxed) != GStatus::running) return false;
  auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  auto lo = reinterpret_cast<std::uintptr_t>(gp->stack.lo);
  auto hi = reinterpret_cast<std::uintptr_t>(gp->stack.hi);
  if (sp <= lo || sp > hi) return false;  // not the G's own code (g0, a user's stack)
  if (gp->locks != 0) {  // in runtime code: yield on the way out of it instead
    gp->locks |= kPreemptAtExit;
    return false;
  }
  if (sp - lo < kRedZone + nugo_xsave_size + kYieldRoom) return false;
  auto pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (in_nopreempt_section(pc)) return false;
  // The goroutine holds a lock of the thread (threadlocks.hpp): the unlock that releases the
  // last one yields instead, wherever the signal found it (a goroutine holding a lock often
  // sits in libc or the vDSO). Go's m.locks, with its preemption at releasem.
  if (thread_locks.held != 0) {
    thread_locks.preempt_deferred = true;
    return false;
  }
  // An exception between its throw and the end of its catch block lives in the thread's
  // C++ EH globals (the Itanium ABI's caught stack and uncaught count): a goroutine moved to
  // another thread there would end the catch on the wrong thread's list, leaking the
  // exception and corrupting that list. So no preemption while unwinding or inside a catch
  // block (the ASan soak found the leak); blocking there is a rule (core/README.md).
  if (in_exception_handling()) return false;
  return in_preemptible_text(pc);
}

// In virtual time, whether the thread that the quantum's signal interrupted at uc may wait for
// its next turn right there (vtime.hpp): it holds no runtime lock and no lock of the thread,
// and is not in a library that takes locks we cannot see. Another member waiting for such a
// lock would spin, or sleep in the kernel holding the turn, for a thread that waits for the
// turn behind it. Unlike a preemption, nothing moves: the thread waits where it is, on any
// stack, in a goroutine or in the scheduler (whose loops must be pausable too: a poller that
// waits for another M to run a timer loops without any other hook). Where it may not, the
// quantum is due at the last unlock, the end of runtime code, or the next schedule.
bool vtime_pausable(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  if (vtime::holds_locks()) return false;
  if (thread_locks.held != 0) {
    thread_locks.preempt_deferred = true;  // preempt::deferred calls vtime::checkpoint
    return false;
  }
  auto pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  return !in_nopreempt_section(pc) && in_preemptible_text(pc);
}

// Makes the interrupted code call nugo_async_preempt, as if from the interrupted PC.
void inject_call(G* gp, ucontext_t* uc) {
  auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]) - kRedZone - 8;
  *reinterpret_cast<std::uintptr_t*>(sp) = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
  uc->uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(&nugo_async_preempt);
  acquire_locks(gp);  // from here until nugo_async_preempt2 is done, the G is in the runtime
}


void on_signal(int sig, siginfo_t* info, void* uc) {
  int saved_errno = errno;
  if (sig == preempt_sig && async_enabled.load(std::memory_order_relaxed)) {
    if (M* m = getm()) {
      m->signal_pending.store(false, std::memory_order_relaxed);
      auto* ctx = static_cast<ucontext_t*>(uc);
      if (async_safe_point(m, ctx)) inject_call(m->curg, ctx);
    }
  }
  // With no earlier handler (SIG_DFL, SIG_IGN) the signal was ours: SIGURG's default is to
  // ignore it, and the other choices are refused unless installed by us.
  signals::call_previous(previous_action[sig], sig, info, uc);
  errno = saved_errno;
}

}  // namespace

namespace preempt {

// The unlock of a thread's last lock, after the signal declined because of it: yield now,
// unless the unlock was called from code that is not preemptible (a library may hold state of
// its own we cannot see; the signal will come again).
void deferred(std::uintptr_t caller_pc) {
  thread_locks.preempt_deferred = false;
  if (!in_preemptible_text(caller_pc)) return;
  vtime::checkpoint();
  nugo::preempt_point();
}

}  // namespace preempt

// Whether the slice of the calling goroutine is over and it may yield here: it is in no
// runtime code, holds no lock of the thread, and runs on its own stack (not on a signal
// stack, from a handler that unlocked something). Pinned while it looks, so the M it reads
// is its own. A lock of the thread defers the yield to its unlock, as the signal does.
bool preempt_due(G* gp) {
  acquire_locks(gp);
  M* m = getm();
  P* pp = m->p;
  bool due = pp && pp->preempt.load(std::memory_order_relaxed) &&
             (gp->locks & ~kPreemptAtExit) == 1;
  char here;
  auto sp = reinterpret_cast<std::uintptr_t>(&here);
  due = due && sp > reinterpret_cast<std::uintptr_t>(gp->stack.lo) &&
        sp < reinterpret_cast<std::uintptr_t>(gp->stack.hi);
  if (due) {
    ThreadLocks& tl = current_thread_locks();
    if (tl.held != 0) {
      tl.preempt_deferred = true;
      due = false;
    }
  }
  // Back to zero, and any request the signal left meanwhile with it: the caller yields now if
  // due (release_locks would have yielded here too, and the caller then again: the
  // issue-14 review), and if not, the slice is not over here and sysmon asks again.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  gp->locks = 0;
  return due;
}

// The cooperative yield of a goroutine whose slice is over. errno and the floating-point
// control state (fiber.hpp, FpControl) are carried to whichever thread resumes it, and the
// thread goes on in the default control state, as at a preemption by signal: the goroutine
// did not choose this point, so it could not have put its rounding mode back first.
void yield_preempted() {
  int saved_errno = thread_errno();
  FpControl saved_fp = fp_control();
  set_fp_control(kDefaultFpControl);
  gopreempt(false);
  set_fp_control(saved_fp);
  set_thread_errno(saved_errno);
}

// The release that ended the G's runtime code found the signal's request (kPreemptAtExit).
// The same conditions as preempt_point, plus two that an explicit call leaves to its caller:
// the G is running (not in a system call: nugo::syscall's own scopes end inside it), and no
// exception is unwinding or being handled (a NoPreempt scope's destructor may run during
// unwinding, or inside a catch block: core/README.md, rules for goroutines).
void preempt_at_runtime_exit(G* gp) {
  gp->locks = 0;
  if (vtime::quantum_due() && thread_locks.held == 0) vtime::checkpoint();
  if (gp->status.load(std::memory_order_relaxed) != GStatus::running || in_exception_handling() ||
      !preempt_due(gp))
    return;
  sched->exit_preemptions.fetch_add(1, std::memory_order_relaxed);
  yield_preempted();
}

namespace preempt {

bool (*vtime_pause_filter())(const void*) { return vtime_pausable; }

void init(const Config& cfg) {
  process_id = getpid();
  async_enabled.store(false, std::memory_order_relaxed);
  const bool async = cfg.async_preempt && !kSanitizerDefersSignals;
  // Virtual time's pause filter needs the library ranges even without async preemption.
  if (!async && !vtime::on()) return;
  preempt_sig = cfg.preempt_signal;
  static bool sized = false;
  if (!sized) {
    size_xsave_area();
    sized = true;
  }
  // Libraries may have been loaded since the last run(); find the ranges again.
  if (!find_preemptible_text(cfg, async) || !async) return;
  // Install ours unless it is still there from an earlier run(); whatever is there now
  // (a user's handler, installed before this run) is what we chain to.
  struct sigaction current {};
  sigaction(preempt_sig, nullptr, &current);
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  // In virtual time the quantum's signal must not pause a thread inside this handler.
  if (vtime::on()) sigaddset(&sa.sa_mask, vtime::quantum_signal());
  if (current.sa_flags & SA_SIGINFO && current.sa_sigaction == on_signal) {
    // Ours, from an earlier run(): in virtual time, the mask as this run needs it (an earlier
    // run may have been in real time), the chain as it was.
    if (vtime::on() && sigaction(preempt_sig, &sa, nullptr) != 0)
      fatal("preempt: cannot install a handler for signal %d", preempt_sig);
  } else {
    if (sigaction(preempt_sig, &sa, &previous_action[preempt_sig]) != 0)
      fatal("preempt: cannot install a handler for signal %d", preempt_sig);
  }
  async_enabled.store(true, std::memory_order_release);
}

bool async_on() { return async_enabled.load(std::memory_order_relaxed); }

void signal_m(M* m) {
  if (!async_enabled.load(std::memory_order_relaxed)) return;
  bool idle = false;
  if (!m->signal_pending.compare_exchange_strong(idle, true, std::memory_order_relaxed)) return;
  if (syscall(SYS_tgkill, process_id, m->tid, preempt_sig) != 0)
    m->signal_pending.store(false, std::memory_order_relaxed);  // the thread is gone
}

}  // namespace preempt
}  // namespace nugo::detail

// Runs on the preempted goroutine's stack, called from nugo_async_preempt with everything
// saved. errno is the thread's: carry it to whichever thread resumes the goroutine.
extern "C" void nugo_async_preempt2() {
  using namespace nugo::detail;
  int saved_errno = thread_errno();
  G* gp = getg();
  sched->async_preemptions.fetch_add(1, std::memory_order_relaxed);
  gopreempt(true);
  set_thread_errno(saved_errno);
  release_locks(gp);  // taken by inject_call
}

namespace nugo {

bool preemptible_code(const void* pc) {
  auto addr = reinterpret_cast<std::uintptr_t>(pc);
  return detail::sched != nullptr && detail::preempt::async_on() && !detail::in_nopreempt_section(addr) &&
         detail::in_preemptible_text(addr);
}

void preempt_point() {
  detail::G* gp = detail::getg();
  if (!gp || gp->locks != 0 || !detail::preempt_due(gp)) return;
  detail::yield_preempted();
}

}  // namespace nugo
