// Unrecoverable runtime errors, reported as Go reports them: "fatal error: ..." on stderr and
// exit status 2. Used for broken invariants (named after the invariant) and for misuse that
// Go also treats as fatal.
#pragma once

namespace nugo::detail {

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace nugo::detail
