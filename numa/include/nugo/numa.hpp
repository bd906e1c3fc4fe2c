// Memory on a chosen NUMA node, for user data: the last point of Vyukov's proposal ("hand out
// memory from the node of the current P"). A goroutine that allocates with alloc_local gets
// memory on the node of the P running it, so the data it builds sits next to the CPUs its
// node's Ps run on, and stays there when the goroutine is stolen within the node.
//
// Nodes are the OS's node numbers, as numactl prints them. Which nodes exist is decided by the
// current node view: while a runtime runs, the nodes of its topology (memory-only nodes
// included); otherwise those of this machine. On an emulated topology (NUGO_TOPOLOGY=xml:… or
// synthetic:…) its nodes are valid, but nothing is bound to them: the memory is ordinary memory,
// so that programs written for a 4-node machine run unchanged on one node.
//
// Memory comes from the kernel bound to its node (mbind), never from malloc, so the placement
// holds whatever the first toucher's node is. Every function is thread-safe and may be called
// from goroutines and plain threads alike. Outside a runtime, the first call reads this
// machine's topology (hwloc), which throws topo::TopologyError if it cannot be read.
#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <type_traits>

namespace nugo::numa {

// Memory of `bytes` bytes on OS node `node`. bytes == 0 gives a unique non-null pointer, to be
// freed with free(p, 0). Alignment: 16 bytes at least; a block of up to 4096 bytes is aligned to
// its size rounded up to a power of two, and a larger one to a page.
// Throws std::invalid_argument (naming the node and the valid ones) for a node that is not in
// the current view, std::bad_alloc when the kernel has no memory for it (or refuses to bind to
// that node, e.g. a node without memory or outside the process's cpuset).
[[nodiscard]] void* alloc_on(int node, std::size_t bytes);

// On the caller's node: the node of the P running the calling goroutine; for a plain thread,
// the node of the CPU it runs on (on the real machine in real time; on an emulated topology
// and in virtual time, where that CPU means nothing, and on a CPU of no node: the first node
// with CPUs). Throws std::bad_alloc.
[[nodiscard]] void* alloc_local(std::size_t bytes);

// Pages spread round-robin over every node of the view (MPOL_INTERLEAVE), for data that every
// node reads alike. Blocks smaller than a page lie on one page, so on one node; only the whole
// of many of them is spread. Throws std::bad_alloc.
[[nodiscard]] void* alloc_interleaved(std::size_t bytes);

// Gives back memory from any of the above, whichever view was current when it was allocated.
// bytes must be the size asked for at allocation. free(nullptr, n) does nothing.
void free(void* p, std::size_t bytes) noexcept;

// Where an Allocator puts its memory.
enum class Placement {
  node,         // alloc_on(node)
  local,        // alloc_local: the node of whoever allocates, at the time of allocation
  interleaved,  // alloc_interleaved
};

// An STL allocator over the functions above:
//   std::vector<int, nugo::numa::Allocator<int>> v(nugo::numa::Allocator<int>(1));
// The node is checked when memory is allocated, not when the allocator is made, so an
// allocator may be made before run() for a node of the topology the runtime will have.
//
// Any Allocator can deallocate what any other allocated (free() finds the block's arena by
// itself), but two compare equal only when they place memory alike, so that a container's
// allocator always says where its buffer lives: a move or a swap carries the buffer, and so the
// allocator with it; a copy assignment allocates new storage in the destination's placement.
template <class T>
class Allocator {
 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;
  template <class U>
  struct rebind {
    using other = Allocator<U>;
  };

  // Large blocks are only page-aligned (mmap).
  static_assert(alignof(T) <= 4096, "nugo::numa::Allocator: alignment above a page");

  // Local placement.
  Allocator() noexcept = default;
  // On OS node `node`.
  explicit Allocator(int node) noexcept : placement_(Placement::node), node_(node) {}
  static Allocator local() noexcept { return Allocator(); }
  static Allocator interleaved() noexcept { return Allocator(Placement::interleaved, -1); }

  template <class U>
  Allocator(const Allocator<U>& other) noexcept  // NOLINT: implicit, as allocators rebind
      : placement_(other.placement()), node_(other.node()) {}

  Placement placement() const noexcept { return placement_; }
  // The node of Placement::node, -1 otherwise.
  int node() const noexcept { return node_; }

  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    switch (placement_) {
      case Placement::node:
        return static_cast<T*>(alloc_on(node_, bytes));
      case Placement::interleaved:
        return static_cast<T*>(alloc_interleaved(bytes));
      case Placement::local:
        break;
    }
    return static_cast<T*>(alloc_local(bytes));
  }

  void deallocate(T* p, std::size_t n) noexcept { numa::free(p, n * sizeof(T)); }

  template <class U>
  friend bool operator==(const Allocator& a, const Allocator<U>& b) noexcept {
    return a.placement() == b.placement() && a.node() == b.node();
  }

 private:
  Allocator(Placement placement, int node) noexcept : placement_(placement), node_(node) {}

  Placement placement_ = Placement::local;
  int node_ = -1;
};

}  // namespace nugo::numa
