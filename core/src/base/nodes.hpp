// The machine's NUMA nodes as the runtime sees them now, and binding memory to them. Below the
// scheduler, which binds its goroutine stacks and G descriptors with these, and below
// nugo::numa's user allocator (numa/src/alloc.cpp), which places user data with them.
//
// The view: which nodes exist, which are the nodes of the CPUs, and how to interleave. It is
// the topology the runtime published (publish_topology) or, when none is, this machine's
// (loaded once, lazily, on the first call that needs it). An emulated view binds nothing (its
// nodes do not exist). Views are immutable and never freed: plain threads may still be reading
// one when the runtime stops and publishes the next, and there is one per run() call.
//
// Bound before touched. mbind without MPOL_MF_MOVE leaves the pages a range already has where
// they are, so a range must be bound before any of its pages exists. Binding right after mmap
// is not enough: a fresh read-write mapping of the default policy merges with a neighbouring
// one of the same flags (malloc's, a new thread's stack), and with transparent huge pages on
// ("always" in Debian's kernel) the neighbour's first touch can fault in a 2 MiB page that
// covers our range too, on the toucher's node. Under a node-1 binding every page of a 1 MiB
// block can then be on node 0 (about 1 call in 100 in the 2-node guest with a thread mapping
// and touching beside it). So ranges are reserved PROT_NONE (reserve_pages: merging with no
// read-write neighbour, and not faultable), bound, and only then made read-write
// (commit_pages); by then they have a policy of their own and merge only with neighbours of
// the same policy.
//
// Binding is the mbind system call through <numaif.h> (libnuma), not numa_tonode_memory: that
// reports failure through numa_error(), which prints and returns nothing, while callers need
// errno. A kernel without NUMA support (ENOSYS) or a sandbox that forbids mbind (EPERM, e.g.
// Docker's default seccomp profile) cannot bind at all: bind_or_unbound then leaves memory
// unbound, said once on stderr when the view has more than one node.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nugo/topology.hpp"

namespace nugo::detail {

std::size_t page_size();

// A node mask as mbind reads it. The kernel reads maxnode - 1 bits (it decrements maxnode, a
// quirk libnuma pads for too), so there is always one spare word.
struct NodeMask {
  std::vector<unsigned long> words;
  unsigned long maxnode() const { return words.size() * sizeof(unsigned long) * 8; }
};
NodeMask mask_of(const std::vector<int>& os_nodes);

struct NodeView {
  std::string source;            // Topology::source, for messages
  bool emulated = false;
  bool verbose = false;          // NUGO_DEBUG=numa=1: say once that nothing is bound
  std::vector<int> nodes;        // OS node numbers, ascending, memory-only nodes included
  int first_cpu_node = -1;       // the first node with CPUs (else the first node)
  std::vector<int> node_of_cpu;  // by real CPU number; -1: no node holds it
  NodeMask interleave;           // every node; the kernel skips those without memory
  const NodeView* older = nullptr;  // the list of published views, kept for good

  bool has(int node) const;
};

// The published view, else this machine's.
const NodeView& current_node_view();

// Called by the runtime at start with its topology, and at stop with nullptr (back to this
// machine). t is copied: the caller may destroy it after. With an emulated t, no memory is
// bound to nodes until the next publish; with verbose, the first binding says so on stderr
// (once per process). Calls must not overlap each other (run() serializes them).
void publish_topology(const topo::Topology* t, bool verbose);

// On an emulated view with verbose, says once per process that memory is not bound.
void note_unbound(const NodeView& v);

// mbind(p, bytes, mode, mask): true when bound, or when this kernel or sandbox cannot bind at
// all (ENOSYS, EPERM: memory stays unbound, said once); false with the error in *err for any
// other failure. The call and its errno are read on one thread: the preemption signal does not
// stop the code between them (the no-preemption text, threadlocks.hpp).
bool bind_or_unbound(void* p, std::size_t bytes, int mode, const NodeMask& mask, const NodeView& v,
                     int* err);

// Binds the page-aligned range [p, p + bytes) to OS node os_node (pages already touched stay
// where they are): strictly (MPOL_BIND: a full node fails the fault, which for memory the
// kernel faults in on touch means the OOM killer) or as a preference (MPOL_PREFERRED: another
// node when os_node is full; what goroutine stacks use). Returns false with errno set on
// failure (EINVAL for a node outside the view or a range that is not page-aligned; ENOSYS or
// EPERM where nothing can be bound). For an emulated view it binds nothing and returns true.
bool bind_range(void* p, std::size_t bytes, int os_node, bool strict = true);

// Anonymous private memory (mmap flags `flags` beside MAP_PRIVATE | MAP_ANONYMOUS) that no
// access can fault in until commit_pages makes it readable and writable, so that whatever
// binds it in between binds every page it will ever have. MAP_FAILED with errno on failure.
void* reserve_pages(std::size_t bytes, int flags = 0);

// Makes a reserved range readable and writable; false with errno on failure.
bool commit_pages(void* p, std::size_t bytes);

// munmap(p, bytes): 0, or the errno of the failure, read on the calling thread.
int unmap_pages(void* p, std::size_t bytes);

}  // namespace nugo::detail
