// Go's schedtrace (GODEBUG=schedtrace=X,scheddetail=1), printed by sysmon.
#pragma once

namespace nugo::detail {

// Go's schedtrace line (and with detail its P, M and G lines), on stderr.
void schedtrace(bool detail);

}  // namespace nugo::detail
