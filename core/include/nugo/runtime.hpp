// The runtime's entry points: run, go, yield, this_g.
//
//   int main() {
//     return nugo::run([] {
//       nugo::WaitGroup wg;
//       wg.add(1);
//       nugo::go([&] { std::puts("hello from a goroutine"); wg.done(); });
//       wg.wait();
//     });
//   }
#pragma once

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "nugo/config.hpp"

namespace nugo {
namespace detail {

// A goroutine's entry function, type-erased. It lives inside the G (G derives from it), so
// spawning a small closure allocates nothing once Gs are recycled. A closure that does not
// fit in buf is allocated on the heap and buf holds the pointer to it.
struct Closure {
  static constexpr std::size_t kInline = 48;
  // Runs the function. The runtime then clears invoke and destroys the closure (discard),
  // so that a teardown never destroys twice a closure whose destructor blocked.
  void (*invoke)(Closure* self) = nullptr;
  void (*discard)(Closure* self) = nullptr;  // destroys it (after invoke, or at teardown unrun)
  alignas(16) unsigned char buf[kInline];
};

// Spawning is split so that the closure is constructed in place: newg() hands out a G
// (recycled when possible), newproc() makes it runnable.
Closure* newg();
void newproc(Closure* g);
int go_on_node(int os_node);  // a node index for newproc_on, or std::invalid_argument
void newproc_on(Closure* g, int node);
void freeg_unstarted(Closure* g);  // the closure's constructor threw

template <class Fn>
Fn* closure_object(Closure* c) {
  if constexpr (sizeof(Fn) <= Closure::kInline && alignof(Fn) <= 16 &&
                std::is_nothrow_move_constructible_v<Fn>)
    return std::launder(reinterpret_cast<Fn*>(c->buf));
  else
    return *std::launder(reinterpret_cast<Fn**>(c->buf));
}

template <class Fn>
void destroy_closure(Closure* c) {
  if constexpr (sizeof(Fn) <= Closure::kInline && alignof(Fn) <= 16 &&
                std::is_nothrow_move_constructible_v<Fn>)
    closure_object<Fn>(c)->~Fn();
  else
    delete closure_object<Fn>(c);
}

template <class Fn, class F>
void bind_closure(Closure* c, F&& f) {
  if constexpr (sizeof(Fn) <= Closure::kInline && alignof(Fn) <= 16 &&
                std::is_nothrow_move_constructible_v<Fn>)
    ::new (static_cast<void*>(c->buf)) Fn(std::forward<F>(f));
  else
    ::new (static_cast<void*>(c->buf)) Fn*(new Fn(std::forward<F>(f)));
  // An exception escaping the function ends the process (a panic), so no unwinding path
  // needs to destroy the closure.
  c->invoke = [](Closure* self) { (*closure_object<Fn>(self))(); };
  c->discard = [](Closure* self) { destroy_closure<Fn>(self); };
}

// A G holding f, not yet runnable.
template <class F>
Closure* make_goroutine(F&& f) {
  Closure* c = newg();
  try {
    bind_closure<std::decay_t<F>>(c, std::forward<F>(f));
  } catch (...) {
    freeg_unstarted(c);
    throw;
  }
  return c;
}

// Runs body(arg) as the main goroutine of a new runtime instance and tears it down after.
// With exit_on_bad_config, a malformed configuration or topology is printed as
// "nugo: <what>" and the process exits with status 2 instead of throwing.
void run_main(const Config& cfg, void (*body)(void*), void* arg, bool exit_on_bad_config);
Config config_from_env_or_exit();
int gomaxprocs();
int num_goroutines();

// The runtime's thread-locals that code running on a goroutine reads (in_syscall_body here,
// the current G and M in the scheduler) are read inline, where the compiler reads them afresh
// at each use, and out of line where it might not.
//
// A goroutine may resume on another thread between two reads in one function, so each read
// must go to the current thread's slot. With the initial-exec TLS model (NUGO_TLS_IE), GCC,
// and clang before 16, keep only the variable's offset in a register and read through %fs
// every time: always the current thread's. (Without the attribute, -fPIC code, which is how
// nugo is built, would find the address through __tls_get_addr and may reuse it.) Clang 16
// and later may compute a thread-local's address once per function: there each read is an
// out-of-line call, which computes the address afresh and which the preemption signal never
// interrupts (core/README.md, "The no-preemption section").
//
// Under ThreadSanitizer the reads are out of line too: GCC's instrumentation computes the
// slot's address for __tsan_read8 from a thread pointer it may have read before a switch, and
// TSan would then record a read of another thread's slot (the values read stay right).
#define NUGO_TLS_IE __attribute__((tls_model("initial-exec")))
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NUGO_TLS_UNDER_TSAN 1
#endif
#endif
#if (defined(__clang__) && __clang_major__ >= 16) || defined(__SANITIZE_THREAD__) || \
    defined(NUGO_TLS_UNDER_TSAN)
#define NUGO_INLINE_TLS 0
#else
#define NUGO_INLINE_TLS 1
#endif

// True on the thread of a goroutine that is inside a nugo::syscall body (syscall.hpp). There
// the goroutine holds no P: to the scheduler it is in the kernel. Every call into the
// scheduler checks this first, and a call from there is a fatal error naming the goroutine
// and the call. Set and cleared by the goroutine's own thread, which the body never leaves.
// The check is inlined into the program's code (Mutex::lock, unlock), as NUGO_INLINE_TLS says.
inline thread_local bool in_syscall_body NUGO_TLS_IE = false;
[[noreturn]] void syscall_body_misuse(const char* call);
bool in_syscall_body_now();  // out of line
inline void forbid_in_syscall_body(const char* call) {
#if NUGO_INLINE_TLS
  if (in_syscall_body) [[unlikely]]
    syscall_body_misuse(call);
#else
  if (in_syscall_body_now()) [[unlikely]]
    syscall_body_misuse(call);
#endif
}

template <class F>
int run(F& main, const Config& cfg, bool exit_on_bad_config) {
  int result = 0;
  auto body = [&] {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>)
      main();
    else
      result = static_cast<int>(main());
  };
  using Body = decltype(body);
  run_main(cfg, [](void* b) { (*static_cast<Body*>(b))(); }, &body, exit_on_bad_config);
  return result;
}

}  // namespace detail

// Starts the runtime, runs main as the main goroutine and returns when it returns (with its
// int result, or 0). Goroutines still alive then are abandoned, as in Go; the runtime is torn
// down so that run() may be called again. Throws ConfigError or topo::TopologyError for a bad
// cfg, std::logic_error when called inside a running runtime.
template <class F>
int run(F main, Config cfg) {
  return detail::run(main, cfg, false);
}

// As above with Config::from_env(). A malformed NUGO_* variable or topology is reported on
// stderr, naming the variable, and the process exits with status 2.
template <class F>
int run(F main) {
  return detail::run(main, detail::config_from_env_or_exit(), true);
}

// Starts f as a new goroutine (Go's `go f()`). From a goroutine it goes to the P's runnext
// slot, so it runs next and inherits the time slice; from any other thread it goes to the
// global run queue and wakes an idle P. The runtime must be running (else std::logic_error).
template <class F>
void go(F&& f) {
  detail::newproc(detail::make_goroutine(std::forward<F>(f)));
}

// Starts f as a new goroutine whose home is NUMA node `node` (the OS's number, as numactl
// prints it). In NUMA mode it starts on a P of that node; afterwards it may be stolen like
// any goroutine, and with NUGO_NUMA=ready=home it is sent back home whenever it is readied
// from another node. In flat mode only its home is set (flat mode places nothing). Throws
// std::invalid_argument for a node that does not exist, has no CPUs or got no P, and
// std::logic_error when the runtime is not running.
template <class F>
void go_on(int node, F&& f) {
  int index = detail::go_on_node(node);
  detail::newproc_on(detail::make_goroutine(std::forward<F>(f)), index);
}

// Go's runtime.Gosched: puts the calling goroutine on the global run queue and runs another.
// From a thread that is not a goroutine it yields the OS thread.
void yield();

// A cheap cooperative preemption check (Go's function-prologue check): yields, as a
// preemption would, if sysmon has ended the caller's time slice. For loops that spend their
// time inside libraries, where the preemption signal leaves a goroutine alone (core/README.md,
// "Asynchronous preemption"). Outside goroutines it does nothing.
void preempt_point();

// Whether the preemption signal may stop a goroutine at this code address in the running
// run(): in the program's own code (core/README.md, "What is preemptible"), by this run's
// Config::preemptible_libraries and nopreempt_symbols, and outside the runtime's
// no-preemption section. For checking a setting: nugo::preemptible_code(&some_function).
// False outside run(), and whenever the run does not preempt by signal.
bool preemptible_code(const void* pc);

// Go's runtime.LockOSThread / UnlockOSThread: wires the calling goroutine to its current OS
// thread. Until as many unlock calls as lock calls, the goroutine runs only on this thread
// and the thread runs nothing else; when the goroutine blocks, the thread hands its P to
// another. A goroutine that exits while locked takes its thread with it, as in Go.
// Throws std::logic_error outside a goroutine.
void lock_os_thread();
void unlock_os_thread();

// The number of Ps of the running runtime (Go's runtime.GOMAXPROCS(0)), or 0 if none runs.
inline int gomaxprocs() { return detail::gomaxprocs(); }

// The number of goroutines that exist (Go's runtime.NumGoroutine): runnable, running, in a
// system call or blocked; the main goroutine counts. 0 if the runtime is not running. Exact
// when nothing is being started or ending meanwhile; for leak checks in tests:
//   int before = nugo::num_goroutines(); ...; wait until nugo::num_goroutines() == before.
inline int num_goroutines() { return detail::num_goroutines(); }

namespace this_g {
// The calling goroutine's id (the main goroutine is 1), or 0 outside any goroutine.
std::int64_t id();
// The NUMA node (the OS's number) of the P running the caller, in either mode, or -1 outside
// a goroutine. The goroutine may move right after: it is a hint, as sched_getcpu() is.
int node();
// The caller's home node (go_on's, else that of the P that created it), or -1 outside a
// goroutine.
int home_node();
}  // namespace this_g

}  // namespace nugo
