// The stack-overflow handler. A goroutine that runs off its stack touches the guard region
// below it (stack.hpp) and gets SIGSEGV. The handler runs on the M's alternate signal stack,
// so it has room to work; it checks that the fault address is a guard region of a goroutine
// stack, names the goroutine, and aborts. Any other fault goes to the handler that was
// installed before ours (ASan's, a user's) or to the default action, as if we were not there.
//
// Only async-signal-safe calls here: write(2), sigaction, abort. The scheduler state read
// (sched, the M's current G, the stack pool's slab table) is published before any goroutine
// runs and is immutable or append-only while it does.
#include "signals.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "fatal.hpp"
#include "sched.hpp"

namespace nugo::detail::signals {
namespace {

struct sigaction previous_segv, previous_bus;

void write_str(const char* s) {
  ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void write_num(unsigned long long v) {
  char buf[24];
  int i = sizeof buf;
  do { buf[--i] = static_cast<char>('0' + v % 10); v /= 10; } while (v);
  ssize_t ignored = write(STDERR_FILENO, buf + i, sizeof buf - i);
  (void)ignored;
}

void chain(int sig, siginfo_t* info, void* ucontext) {
  // With no earlier handler, returning re-executes the faulting instruction, which then gets
  // the default action.
  if (!call_previous(sig == SIGBUS ? previous_bus : previous_segv, sig, info, ucontext))
    signal(sig, SIG_DFL);
}

void on_fault(int sig, siginfo_t* info, void* ucontext) {
  Sched* s = sched;
  M* m = getm();
  G* gp = m ? m->curg : nullptr;
  bool guard = false;
  if (s && gp)
    for (const auto& d : s->domains) guard = guard || d->stacks->is_guard_address(info->si_addr);
  if (guard) {
    write_str("goroutine ");
    write_num(static_cast<unsigned long long>(gp->goid));
    write_str(": stack overflow (stack size ");
    write_num(gp->stack.size());
    write_str(", raise NUGO_STACK)\n");
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  chain(sig, info, ucontext);
}

std::size_t altstack_size() {
  return std::max<std::size_t>(64 * 1024, static_cast<std::size_t>(sysconf(_SC_SIGSTKSZ)));
}

}  // namespace

bool call_previous(const struct sigaction& prev, int sig, siginfo_t* info, void* ucontext) {
  // SIG_DFL and SIG_IGN live in the same union as sa_sigaction: check them first, whatever
  // the flags say.
  if (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN) return false;
  if (prev.sa_flags & SA_SIGINFO)
    prev.sa_sigaction(sig, info, ucontext);
  else
    prev.sa_handler(sig);
  return true;
}

void install_handlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &previous_segv);
  sigaction(SIGBUS, &sa, &previous_bus);
}

std::atomic<bool> quit_requested{false};

namespace {

struct sigaction previous_quit;
bool quit_installed = false;

// Async-signal-safe: atomics and a futex wake (Note::wakeup). Counted as a foreign call, so
// that run() cannot free the instance under the wake. A second SIGQUIT, while the first is
// still unanswered (a dump blocked on a lock held forever), takes the default action.
void on_quit(int sig) {
  int saved_errno = errno;
  foreign_calls.fetch_add(1, std::memory_order_seq_cst);
  Sched* s = foreign_sched.load(std::memory_order_seq_cst);
  if (s && !quit_requested.exchange(true, std::memory_order_seq_cst)) {
    s->sysmon_note.wakeup();
    foreign_calls.fetch_sub(1, std::memory_order_seq_cst);
    errno = saved_errno;
    return;
  }
  foreign_calls.fetch_sub(1, std::memory_order_seq_cst);
  signal(sig, SIG_DFL);  // no instance, or asked twice: what SIGQUIT does without us
  raise(sig);
  errno = saved_errno;
}

}  // namespace

void install_quit_handler() {
  quit_requested.store(false);
  struct sigaction now {};
  sigaction(SIGQUIT, nullptr, &now);
  if (now.sa_handler != SIG_DFL || (now.sa_flags & SA_SIGINFO)) return;  // the program's own
  struct sigaction sa {};
  sa.sa_handler = on_quit;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  quit_installed = sigaction(SIGQUIT, &sa, &previous_quit) == 0;
}

void remove_quit_handler() {
  if (!quit_installed) return;
  quit_installed = false;
  struct sigaction now {};
  sigaction(SIGQUIT, nullptr, &now);
  if (now.sa_handler == on_quit) sigaction(SIGQUIT, &previous_quit, nullptr);  // else the program's
}

void reset_quit_in_child() {
  if (quit_installed) sigaction(SIGQUIT, &previous_quit, nullptr);
}

void* install_altstack() {
  std::size_t size = altstack_size();
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) fatal("sigaltstack: cannot allocate %zu bytes", size);
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) fatal("sigaltstack failed");
  return mem;
}

void remove_altstack(void* altstack) {
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);
  munmap(altstack, altstack_size());
}

}  // namespace nugo::detail::signals
