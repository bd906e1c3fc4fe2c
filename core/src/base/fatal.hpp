// Unrecoverable runtime errors, reported as Go reports them: "fatal error: ..." on stderr and
// exit status 2. Used for broken invariants (named after the invariant) and for misuse that
// Go also treats as fatal.
#pragma once

#include <cstdio>

namespace nugo::detail {

[[noreturn]] void fatal(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

// Ends the process with Go's status for fatal errors and panics, 2, once the message is out.
// A fuzzing build (NUGO_FUZZ) aborts instead, so that libFuzzer saves the input.
[[noreturn]] void exit_fatal();

// What fatal prints after the message: where the goroutine that raised it was. The
// scheduler installs its traceback printer (obs/traceback.hpp) when an instance starts;
// until then there is no goroutine to report, and fatal prints the message alone. base/ is
// below every other room, so it calls up only through this pointer.
using FatalTraceback = void (*)(std::FILE* out) noexcept;
void set_fatal_traceback(FatalTraceback print) noexcept;

}  // namespace nugo::detail
