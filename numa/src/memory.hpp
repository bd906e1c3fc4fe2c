// What the runtime tells <nugo/numa.hpp> and asks of it: the node view that decides which
// nodes exist, and the binding of ranges it maps itself (the per-node stack slabs).
//
// The view is the published topology while a runtime runs, else this machine's (loaded once,
// lazily, on the first call that needs it). A published view is never freed: plain threads
// may still be reading one when the runtime stops and publishes the next, and there is one
// per run() call, so keeping them all costs little. See numa/src/alloc.cpp.
#pragma once

#include <cstddef>

#include "nugo/topology.hpp"

namespace nugo::numa::detail {

// Called by the runtime at start with its topology, and at stop with nullptr (back to this
// machine). t is copied: the caller may destroy it after. With an emulated t, no memory is
// bound to nodes until the next publish; with verbose, the first allocation says so on stderr
// (once per process). Calls must not overlap each other (run() serializes them).
void publish_topology(const nugo::topo::Topology* t, bool verbose);

// Binds the page-aligned range [p, p + bytes) to OS node os_node (pages already touched stay
// where they are): strictly (MPOL_BIND: a full node fails the fault, which for memory the
// kernel faults in on touch means the OOM killer) or as a preference (MPOL_PREFERRED: another
// node when os_node is full; what goroutine stacks use). Returns false with errno set on
// failure (EINVAL for a node outside the view or a range that is not page-aligned). For an
// emulated view it binds nothing and returns true.
bool bind_range(void* p, std::size_t bytes, int os_node, bool strict = true);

// Anonymous private memory (mmap flags `flags` beside MAP_PRIVATE | MAP_ANONYMOUS) that no
// access can fault in until commit() makes it readable and writable, so that whatever binds it
// in between binds every page it will ever have (alloc.cpp, "Bound before touched": a mapping
// made read-write at once can be faulted in by a neighbour's first touch, on the neighbour's
// node). MAP_FAILED with errno on failure.
void* reserve(std::size_t bytes, int flags = 0);

// Makes a reserved range readable and writable; false with errno on failure.
bool commit(void* p, std::size_t bytes);

// The OS node alloc_local would use now for the caller (see <nugo/numa.hpp>).
int local_node();

}  // namespace nugo::numa::detail
