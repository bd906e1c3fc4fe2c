// Unrecoverable runtime errors, reported as Go reports them: "fatal error: ..." on stderr and
// exit status 2. Used for broken invariants (named after the invariant) and for misuse that
// Go also treats as fatal.
#pragma once

namespace nugo::detail {

[[noreturn]] void fatal(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

// Ends the process with Go's status for fatal errors and panics, 2, once the message is out.
// A fuzzing build (NUGO_FUZZ) aborts instead, so that libFuzzer saves the input.
[[noreturn]] void exit_fatal();

}  // namespace nugo::detail
