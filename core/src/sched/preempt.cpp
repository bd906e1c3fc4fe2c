// Signal-based asynchronous preemption, after Go 1.14's (preempt.go, signal_unix.go).
//
// sysmon decides that a P's time slice is over (sysmon.cpp), sets pp->preempt and sends the
// preemption signal to the P's M with tgkill, at most one pending per M. The handler runs on
// the M's alternate signal stack. If the M is running a goroutine at an async safe point, it
// injects a call to nugo_async_preempt (preempt_amd64.S), which saves everything, yields the
// goroutine to the global run queue and, once the goroutine runs again on any M, restores
// everything and returns to the interrupted instruction. Otherwise the handler does nothing
// and sysmon signals again 20 us later (a G in runtime code, or holding a lock of its thread,
// also yields by itself as it leaves the one or releases the other).
//
// An async safe point is an interrupted state where all of this holds:
//   - the M has a P whose slice sysmon ended, and its current G is running;
//   - the G is not in runtime code (G::locks == 0, see NoPreempt in link.hpp), which also
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
//     mimalloc's per-thread heaps, OpenSSL's error queue, stdio locks). The loaded objects are
//     looked at in every run() and the executable's symbol table once per process; a static
//     build whose C library or C++ runtime cannot be told from the program is refused
//     asynchronous preemption at start, with a message.
#include "preempt.hpp"

#include <cpuid.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/auxv.h>
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
// the excluded ranges inside them (the C and C++ runtime functions an executable carries when
// linked statically, the functions Config::nopreempt_symbols names). init builds both before
// the handler can run and publishes each with a release store of its count; the handlers only
// read them. Plain arrays in static storage or leaked: a handler may still run on another
// thread while the process exits, after static destructors.
struct TextRange {
  std::uintptr_t lo, hi;
};
constexpr int kMaxRanges = 256;
TextRange preemptible_text[kMaxRanges];
std::atomic<int> preemptible_count{0};
// Sorted and disjoint; published whole through one pointer, and never freed.
struct ExcludedText {
  int count;
  const TextRange* ranges;
};
constexpr ExcludedText kNothingExcluded{0, nullptr};
std::atomic<const ExcludedText*> excluded_text{&kNothingExcluded};

std::atomic<bool> async_enabled{false};
pid_t process_id = 0;
int preempt_sig = SIGURG;
struct sigaction previous_action[NSIG];

std::string_view base_name(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "libfoo" names libfoo.so, libfoo.so.1 and libfoo-2.3.so, not libfoobar.so; a name with a
// slash names one path, as the loader reports it.
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
  std::uintptr_t exe_bias = 0;  // the main executable's load address (PIE)
  bool shared_libc = false;     // a shared C library is loaded: libc is not in the executable
  // The C++ ABI's thread-local exception globals are the executable's own: it carries the C++
  // runtime (-static-libstdc++), whatever shared libstdc++ other objects bring in.
  bool exe_cxx_runtime = false;
  std::vector<bool> named_found;  // per Config::preemptible_libraries entry
};

int scan_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* seen = static_cast<LoadedObjects*>(data);
  if (seen->index++ == 0) {  // the main executable comes first
    seen->exe_bias = info->dlpi_addr;
    seen->exe_cxx_runtime = contains_code(info, reinterpret_cast<std::uintptr_t>(&abi::__cxa_get_globals));
    add_text_segments(info);
    return 0;
  }
  std::string_view path = info->dlpi_name ? info->dlpi_name : "";
  std::string_view base = base_name(path);
  if (names_object("libc.so", base) || names_object("ld-musl", base)) seen->shared_libc = true;
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

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A function of libstdc++, libsupc++ or libgcc, by its symbol name: the C-linkage entry points
// of the C++ ABI and the unwinder, operator new and delete, and std:: (with the Itanium
// mangling's abbreviations for std::allocator, basic_string, string, istream, ostream and
// iostream), __gnu_cxx:: and __cxxabiv1::, through thunks, local entities, transaction-safe
// clones and cv- and ref-qualifiers.
bool cxx_runtime_symbol(std::string_view name) {
  static constexpr std::string_view kCNames[] = {
      "__cxa_", "__gxx_", "_Unwind_", "__gcc_", "__dynamic_cast", "__register_frame",
      "__deregister_frame", "__frame_state_for", "__emutls_", "__once_proxy", "_Znw", "_Zna", "_Zdl", "_Zda"};
  for (std::string_view c : kCNames)
    if (starts_with(name, c)) return true;
  if (!starts_with(name, "_Z")) return false;
  name.remove_prefix(2);
  for (bool more = true; more;) {
    more = false;
    if (starts_with(name, "GTt")) {  // a transaction-safe clone
      name.remove_prefix(3);
      more = true;
    } else if (starts_with(name, "Th") || starts_with(name, "Tv") || starts_with(name, "Tc")) {
      std::size_t end = name.find('_', 2);  // a thunk: its offsets, then the target's encoding
      if (end == std::string_view::npos) return false;
      name.remove_prefix(end + 1);
      more = true;
    } else if (starts_with(name, "Z")) {  // an entity local to a function: that function's
      name.remove_prefix(1);
      more = true;
    }
  }
  std::size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits > 0 && starts_with(name.substr(digits), "_txnal_")) return true;
  if (!name.empty() && name[0] == 'N') {
    name.remove_prefix(1);
    while (!name.empty() && std::strchr("rVKRO", name[0]) && name[0] != '\0') name.remove_prefix(1);
  }
  if (name.size() >= 2 && name[0] == 'S' && std::strchr("tabsiod", name[1]) && name[1] != '\0') return true;
  return starts_with(name, "9__gnu_cxx") || starts_with(name, "10__cxxabiv1");
}

// The main executable's own symbol table (.symtab; a stripped executable has none), mapped for
// the scan and unmapped after it. /proc/self/exe is checked against the loader's entry point:
// a program started as `ld.so ./prog` would otherwise be read as ld.so.
class SymbolTable {
 public:
  enum class State { present, stripped, unreadable };

  explicit SymbolTable(std::uintptr_t bias) {
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
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_entry + bias != getauxval(AT_ENTRY))
      return;
    state_ = State::stripped;
    if (eh->e_shoff == 0 || eh->e_shnum == 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        eh->e_shoff > size_ || eh->e_shnum > (size_ - eh->e_shoff) / sizeof(ElfW(Shdr)))
      return;
    const auto* sh = reinterpret_cast<const ElfW(Shdr)*>(base_ + eh->e_shoff);
    auto fits = [&](const ElfW(Shdr)& s) { return s.sh_offset <= size_ && s.sh_size <= size_ - s.sh_offset; };
    if (eh->e_shstrndx < eh->e_shnum && fits(sh[eh->e_shstrndx])) {
      const ElfW(Shdr)& names = sh[eh->e_shstrndx];
      for (int i = 0; i < eh->e_shnum; ++i)
        if (sh[i].sh_name < names.sh_size &&
            std::strncmp(base_ + names.sh_offset + sh[i].sh_name, ".text", names.sh_size - sh[i].sh_name) == 0)
          text_index_ = i;
    }
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_entsize != sizeof(ElfW(Sym)) || sh[i].sh_link >= eh->e_shnum)
        continue;
      const ElfW(Shdr)& strtab = sh[sh[i].sh_link];
      if (!fits(sh[i]) || !fits(strtab)) return;
      syms_ = reinterpret_cast<const ElfW(Sym)*>(base_ + sh[i].sh_offset);
      count_ = sh[i].sh_size / sizeof(ElfW(Sym));
      strings_ = base_ + strtab.sh_offset;
      strings_size_ = strtab.sh_size;
      state_ = State::present;
    }
  }
  ~SymbolTable() {
    if (base_) munmap(const_cast<char*>(base_), size_);
  }
  SymbolTable(const SymbolTable&) = delete;
  SymbolTable& operator=(const SymbolTable&) = delete;

  State state() const { return state_; }

  struct Function {
    std::string_view name;
    std::uintptr_t lo, hi;  // link addresses
    int file;               // for a file-local function, its object file's index, else -1
    bool weak;
    bool main_text;         // in the output's .text section (GNU ld's default script merges
                            // .text.unlikely and .text.startup into it; other linkers may not)
  };
  // Calls f(Function) for each defined function with a size. The linker puts each object
  // file's local symbols after an STT_FILE symbol naming it.
  template <class F>
  void for_each_function(F f) const {
    int file = -1;
    bool nameless_file = false;
    for (std::size_t i = 0; i < count_; ++i) {
      const ElfW(Sym)& sym = syms_[i];
      if (ELF64_ST_TYPE(sym.st_info) == STT_FILE) {
        ++file;
        nameless_file = sym.st_name >= strings_size_ || strings_[sym.st_name] == '\0';
      }
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= SHN_LORESERVE || sym.st_size == 0 || sym.st_name >= strings_size_)
        continue;
      const char* name = strings_ + sym.st_name;
      // The linker lists the locals it made of hidden symbols under a last, nameless STT_FILE:
      // they come from many objects, so they are judged by name alone.
      bool local = ELF64_ST_BIND(sym.st_info) == STB_LOCAL && !nameless_file;
      f(Function{std::string_view(name, strnlen(name, strings_size_ - sym.st_name)), sym.st_value,
                 sym.st_value + sym.st_size, local ? std::max(file, 0) : -1,
                 ELF64_ST_BIND(sym.st_info) == STB_WEAK, text_index_ < 0 || sym.st_shndx == text_index_});
    }
  }

 private:
  const char* base_ = nullptr;
  std::size_t size_ = 0;
  State state_ = State::unreadable;
  const ElfW(Sym)* syms_ = nullptr;
  std::size_t count_ = 0;
  const char* strings_ = nullptr;
  std::size_t strings_size_ = 0;
  int text_index_ = -1;
};

// The executable's excluded ranges. Named functions first: the C++ runtime's (above), except
// weak ones, which are template instantiations and keep no per-thread state whichever object
// they came from (the program's own, preemptible with a shared libstdc++ too, or the runtime's
// explicit ones); and those a prefix of Config::nopreempt_symbols names. Then file-local
// functions, which have no telling name: an object file is a library's when each of its local
// functions in .text proper lies between two excluded functions in address order (the linker
// lays out an archive's members together, after the program's objects); its parts in
// .text.unlikely and .text.startup, which the linker gathers across objects, follow its verdict
// and are not evidence. Returns how many C++ runtime functions it found; *matched counts each
// prefix's.
int exclude_functions(const SymbolTable& symtab, std::uintptr_t bias, bool cxx_static,
                      const std::vector<std::string>& prefixes, std::vector<int>* matched,
                      const ExcludedText** out) {
  // neutral: a weak C++ runtime name in an executable that carries the runtime: a template
  // instantiation, the program's own or the runtime's explicit one (string, locale, streams,
  // whose helpers switch the thread's locale), judged by its neighbours alone.
  enum class Kind : std::uint8_t { excluded, program, unknown, neutral };
  struct Fn {
    std::uintptr_t lo, hi;
    Kind kind;
    int file;
    bool evidence;
  };
  std::vector<Fn> fns;
  int cxx = 0, files = 0;
  symtab.for_each_function([&](const SymbolTable::Function& f) {
    Kind kind = Kind::program;
    for (std::size_t i = 0; i < prefixes.size(); ++i)
      if (starts_with(f.name, prefixes[i])) {
        ++(*matched)[i];
        kind = Kind::excluded;
      }
    if (kind == Kind::program && cxx_static && cxx_runtime_symbol(f.name)) {
      kind = f.weak ? Kind::neutral : Kind::excluded;
      cxx += !f.weak;
    }
    if (kind == Kind::program && f.file >= 0) kind = Kind::unknown;
    files = std::max(files, f.file + 1);
    bool evidence = f.main_text && !starts_with(f.name, "_GLOBAL__sub_") &&
                    !starts_with(f.name, "__static_initialization_and_destruction") &&
                    f.name.find(".cold") == std::string_view::npos;
    fns.push_back({f.lo + bias, f.hi + bias, kind, f.file, evidence});
  });
  // At one address, an excluded name wins over the program's (aliases, folded functions).
  std::sort(fns.begin(), fns.end(), [](const Fn& a, const Fn& b) {
    return a.lo != b.lo ? a.lo < b.lo : a.kind < b.kind;
  });
  // Whether each object file's evidence lies between excluded functions only.
  std::vector<bool> program_file(static_cast<std::size_t>(files), false), judged(program_file);
  Kind before = Kind::program;
  std::vector<std::size_t> pending, weak;  // unknown and neutral ones since the last named one
  auto settle = [&](Kind after) {
    const bool inside = before == Kind::excluded && after == Kind::excluded;
    for (std::size_t i : pending) {
      auto file = static_cast<std::size_t>(fns[i].file);
      judged[file] = true;
      if (!inside) program_file[file] = true;
    }
    for (std::size_t i : weak) fns[i].kind = inside ? Kind::excluded : Kind::program;
    pending.clear();
    weak.clear();
  };
  for (std::size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].kind == Kind::neutral) {
      weak.push_back(i);
    } else if (fns[i].kind != Kind::unknown) {
      settle(fns[i].kind);
      before = fns[i].kind;
    } else if (fns[i].evidence) {
      pending.push_back(i);
    }
  }
  settle(Kind::program);
  for (Fn& f : fns)
    if (f.kind == Kind::unknown) {
      auto file = static_cast<std::size_t>(f.file);
      f.kind = judged[file] && !program_file[file] ? Kind::excluded : Kind::program;
    }
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
  auto* copy = new TextRange[std::max<std::size_t>(ranges.size(), 1)];  // never freed
  std::copy(ranges.begin(), ranges.end(), copy);
  *out = new ExcludedText{static_cast<int>(ranges.size()), copy};
  return cxx;
}

// What the executable's symbol table gave, once per process for one list of prefixes (the
// scan reads the whole table): later runs with the same settings reuse it.
struct ExeAnalysis {
  bool done = false;
  bool cxx_static = false;
  std::vector<std::string> prefixes;
  SymbolTable::State state = SymbolTable::State::unreadable;
  int cxx = 0;
  const ExcludedText* excluded = &kNothingExcluded;
};
ExeAnalysis exe_analysis;

// Builds the ranges for this run(). Returns false, having said why on stderr when `async` (a
// run that asked for preemption by signal), when the program's build makes asynchronous
// preemption unsafe and Config::async_preempt_force does not override; nothing is then
// preemptible, for virtual time's pauses either.
bool find_preemptible_text(const Config& cfg, bool async) {
  preemptible_count.store(0, std::memory_order_relaxed);
  excluded_text.store(&kNothingExcluded, std::memory_order_release);
  LoadedObjects seen;
  seen.cfg = &cfg;
  seen.named_found.assign(cfg.preemptible_libraries.size(), false);
  dl_iterate_phdr(scan_object, &seen);
  for (std::size_t i = 0; i < cfg.preemptible_libraries.size(); ++i)
    if (!seen.named_found[i] && async)
      std::fprintf(stderr, "nugo: warning: NUGO_PREEMPTIBLE: no loaded shared object is named '%s'\n",
                   cfg.preemptible_libraries[i].c_str());
  auto refuse = [&](const char* cause) {
    if (cfg.async_preempt_force) return true;
    preemptible_count.store(0, std::memory_order_release);
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
  ExeAnalysis& a = exe_analysis;
  // Read once per process and settings; an unreadable table (out of descriptors, say) is
  // tried again at the next run.
  if (!a.done || a.cxx_static != seen.exe_cxx_runtime || a.prefixes != cfg.nopreempt_symbols ||
      a.state == SymbolTable::State::unreadable) {
    SymbolTable symtab(seen.exe_bias);
    std::vector<int> matched(cfg.nopreempt_symbols.size(), 0);
    a = ExeAnalysis{true, seen.exe_cxx_runtime, cfg.nopreempt_symbols, symtab.state(), 0, &kNothingExcluded};
    if (symtab.state() == SymbolTable::State::present && (seen.exe_cxx_runtime || !cfg.nopreempt_symbols.empty()))
      a.cxx = exclude_functions(symtab, seen.exe_bias, seen.exe_cxx_runtime, cfg.nopreempt_symbols, &matched,
                                &a.excluded);
    for (std::size_t i = 0; i < matched.size(); ++i)
      if (matched[i] == 0 && async && a.state == SymbolTable::State::present)
        std::fprintf(stderr, "nugo: warning: NUGO_NOPREEMPT_SYMBOLS: no function of the executable begins with '%s'\n",
                     cfg.nopreempt_symbols[i].c_str());
  }
  excluded_text.store(a.excluded, std::memory_order_release);
  const bool need_table = seen.exe_cxx_runtime || !cfg.nopreempt_symbols.empty();
  if (need_table && a.state != SymbolTable::State::present) {
    const bool stripped = a.state == SymbolTable::State::stripped;
    if (seen.exe_cxx_runtime)
      return refuse(stripped ? "this executable carries the C++ runtime (-static-libstdc++) and has no symbol table (stripped)"
                             : "this executable carries the C++ runtime (-static-libstdc++) and its symbol table cannot be read from /proc/self/exe");
    return refuse(stripped ? "NUGO_NOPREEMPT_SYMBOLS needs the executable's symbol table, and it has none (stripped)"
                           : "NUGO_NOPREEMPT_SYMBOLS needs the executable's symbol table, which cannot be read from /proc/self/exe");
  }
  if (seen.exe_cxx_runtime && a.cxx == 0)
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
  const ExcludedText* excluded = excluded_text.load(std::memory_order_acquire);
  int lo = 0, hi = excluded->count;
  const TextRange* ex = excluded->ranges;
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
//
// It is called from the unlock's interposer, under whatever called the unlock: a library's
// frames may be below it. So, in the no-preemption section, it counts itself as a lock of the
// thread until it knows the caller is the program's: a signal landing in the check (code
// outside the section, at -O0 even std::atomic's loads) must not move the goroutine to another
// thread in the middle of the library's call (that deadlocks LevelDB's writer queue and
// corrupts jemalloc's thread cache).
NUGO_NOPREEMPT void deferred(std::uintptr_t caller_pc) {
  ThreadLocks& tl = thread_locks;
  ++tl.held;
  tl.preempt_deferred = false;
  const bool program = in_preemptible_text(caller_pc);
  --tl.held;
  if (!program) return;
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
  // due (release_locks would have yielded here too, and the caller then again: two yields
  // for one request), and if not, the slice is not over here and sysmon asks again.
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
  preempt_sig = cfg.preempt_signal;
  static bool sized = false;
  if (!sized) {
    size_xsave_area();
    sized = true;
  }
  // Libraries may have been loaded since the last run(); find the ranges again. Without the
  // signal too: the yield deferred to an unlock (deferred, above) and virtual time's pauses
  // read them.
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

void stop() { async_enabled.store(false, std::memory_order_relaxed); }

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
  return detail::preempt::async_on() && !detail::in_nopreempt_section(addr) &&
         detail::in_preemptible_text(addr);
}

void preempt_point() {
  detail::G* gp = detail::getg();
  if (!gp || gp->locks != 0 || !detail::preempt_due(gp)) return;
  detail::yield_preempted();
}

}  // namespace nugo
