// Signal handling: today the stack-overflow report. Every M runs its handlers on an
// alternate signal stack, because the signal that reports a stack overflow arrives on a
// stack that has none left.
#pragma once

namespace nugo::detail::signals {

// Installs the SIGSEGV/SIGBUS handler once per process; earlier handlers are chained.
void install_handlers();
// Gives the calling thread an alternate signal stack; returns it for remove_altstack.
void* install_altstack();
void remove_altstack(void* altstack);

}  // namespace nugo::detail::signals
