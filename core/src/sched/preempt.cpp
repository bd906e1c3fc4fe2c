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
//   - the interrupted PC is not in a library that keeps per-thread state or takes locks we
//     cannot see: libc (malloc's thread caches, stdio locks), libstdc++, libgcc, libm, the
//     dynamic loader, hwloc, libnuma, Boost, the sanitizer runtimes, the vDSO, and nugo
//     itself when it is a shared library. Their text ranges are found once per run().
#include "preempt.hpp"

#include <cpuid.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

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

struct TextRange {
  std::uintptr_t lo, hi;
};
constexpr int kMaxRanges = 256;
TextRange no_preempt_text[kMaxRanges];
std::atomic<int> no_preempt_count{0};

std::atomic<bool> async_enabled{false};
pid_t process_id = 0;
int preempt_sig = SIGURG;
struct sigaction previous_action[NSIG];

bool no_preempt_library(const char* path) {
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  static const char* const kPrefixes[] = {
      "libc.so",   "libc-",      "libstdc++", "libgcc_s", "libm.so",   "libm-",
      "ld-linux",  "ld64.so",    "libpthread", "libdl.",  "librt.",    "libhwloc",
      "libnuma",   "libboost_",  "libasan",   "libubsan", "liblsan",   "libtsan",
      "linux-vdso", "linux-gate", "libnugo"};
  for (const char* prefix : kPrefixes)
    if (std::strncmp(base, prefix, std::strlen(prefix)) == 0) return true;
  return false;
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

int collect_ranges(dl_phdr_info* info, std::size_t, void* data) {
  int* index = static_cast<int*>(data);
  bool main_program = (*index)++ == 0;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  // nugo's own code, when it is a shared object: the whole object is runtime.
  bool nugo_shared =
      !main_program && contains_code(info, reinterpret_cast<std::uintptr_t>(&preempt::init));
  if (main_program || !(nugo_shared || no_preempt_library(name) || name[0] == '\0')) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    int n = no_preempt_count.load(std::memory_order_relaxed);
    if (n == kMaxRanges) fatal("preempt: more than %d library text segments", kMaxRanges);
    no_preempt_text[n] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
    no_preempt_count.store(n + 1, std::memory_order_release);
  }
  return 0;
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

bool in_no_preempt_text(std::uintptr_t pc) {
  int n = no_preempt_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (pc >= no_preempt_text[i].lo && pc < no_preempt_text[i].hi) return true;
  return false;
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
  return !in_no_preempt_text(pc);
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
  return !in_nopreempt_section(pc) && !in_no_preempt_text(pc);
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
// unless the unlock was called from a library we never stop in (it may hold state of its
// own we cannot see; the signal will come again).
void deferred(std::uintptr_t caller_pc) {
  thread_locks.preempt_deferred = false;
  if (in_no_preempt_text(caller_pc)) return;
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
  no_preempt_count.store(0, std::memory_order_relaxed);
  int index = 0;
  dl_iterate_phdr(collect_ranges, &index);
  if (!async) return;
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

void preempt_point() {
  detail::G* gp = detail::getg();
  if (!gp || gp->locks != 0 || !detail::preempt_due(gp)) return;
  detail::yield_preempted();
}

}  // namespace nugo
