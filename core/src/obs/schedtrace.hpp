// Go's schedtrace (GODEBUG=schedtrace=X,scheddetail=1), printed by sysmon.
#pragma once

namespace nugo::detail {

struct SchedCounts;  // views.hpp
struct SchedDetail;

// Go's schedtrace line from c (and with detail its P, M and G lines), on stderr. sysmon calls
// it with what the scheduler took (sched/inspect.cpp).
void schedtrace(const SchedCounts& c, const SchedDetail* detail);

}  // namespace nugo::detail
