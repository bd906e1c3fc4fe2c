// Signal handling: the stack-overflow report, and what every handler of ours shares. Every M runs its handlers on an
// alternate signal stack, because the signal that reports a stack overflow arrives on a
// stack that has none left.
#pragma once

#include <signal.h>

#include <atomic>

namespace nugo::detail::signals {

// Calls the handler that was installed for sig before ours (SA_SIGINFO or not). Returns
// false if there was none (SIG_DFL or SIG_IGN): the caller decides what that means.
bool call_previous(const struct sigaction& prev, int sig, siginfo_t* info, void* ucontext);

// Installs the SIGSEGV/SIGBUS handler once per process; earlier handlers are chained.
void install_handlers();
// Go's SIGQUIT: while an instance runs, SIGQUIT (kill -QUIT, Ctrl-\) makes sysmon print
// every P, M and goroutine (schedtrace's detail) and exit with status 2, so that a hung
// program says where everything waits. Installed by run() only when SIGQUIT has its default
// action, and put back when the instance stops (unless the program has installed its own
// since); with no instance, or at a second SIGQUIT, the default action runs.
void install_quit_handler();
void remove_quit_handler();
// In a child of fork(): SIGQUIT's action from before run() (no sysmon answers there).
void reset_quit_in_child();
extern std::atomic<bool> quit_requested;  // set by the handler, acted on by sysmon

// Gives the calling thread an alternate signal stack; returns it for remove_altstack.
void* install_altstack();
void remove_altstack(void* altstack);

}  // namespace nugo::detail::signals
