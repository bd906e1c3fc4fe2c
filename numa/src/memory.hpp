// What nugo::numa's allocator tells its tests beyond <nugo/numa.hpp>. The node view and the
// binding primitives it allocates with are core/src/base/nodes.hpp's.
#pragma once

namespace nugo::numa::detail {

// The OS node alloc_local would use now for the caller (see <nugo/numa.hpp>).
int local_node();

}  // namespace nugo::numa::detail
