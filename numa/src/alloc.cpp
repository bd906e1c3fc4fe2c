// Per-node memory for user data (<nugo/numa.hpp>) and the node view behind it (memory.hpp).
//
// Two paths, split at kSmallMax = 2048 bytes:
//
// - Large blocks are anonymous mmap ranges, bound with mbind and given back with munmap. The
//   kernel places memory by page, so a block of a page or more loses nothing by having pages
//   of its own, and two system calls are small next to filling a page.
// - Small blocks come from per-node arenas with power-of-two size classes (16 .. 2048 bytes:
//   2048 is the largest class that still puts two blocks on a page), carved from 1 MiB chunks
//   that are bound to the arena's node before anything touches them. Each (arena, class) has
//   its own free list and std::mutex; carving a new run of blocks from the chunk takes the
//   arena's chunk lock under it (class lock, then chunk lock: the only order). Chunks are
//   1 MiB-aligned with a header at the start, so free(p, bytes) finds a block's arena by
//   masking p: a block goes back to the arena it came from even after the view has changed.
//   Chunks are never returned to the OS, and arenas never freed.
//
// Not built yet: a per-P cache in front of the arenas (Go's mcache), which would make the small
// path lock-free. Today every small allocation takes its class's lock.
//
// Why std::mutex is correct here and a spin lock would not be: under nugo's runtime a goroutine
// holding a pthread mutex is not preempted asynchronously until it unlocks (core/README.md,
// "Locks of the thread"), so another goroutine on the same thread never waits for a holder
// that cannot run. Nothing here blocks while holding a lock (mmap and mbind do not park a G).
//
// The node view (which nodes exist; the published topology while a runtime runs) and binding
// ("Bound before touched": reserved, bound, then committed) are below the scheduler, in
// core/src/base/nodes.hpp; this file is the allocator on top of them. An emulated view binds
// nothing (its nodes do not exist): every allocation takes the same path as it would on a real
// machine, with unbound chunks and ranges, from arenas of their own (emulated nodes must not
// share the real nodes' bound chunks).
#include "memory.hpp"

#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fatal.hpp"
#include "nodes.hpp"
#include "nugo/numa.hpp"
#include "nugo/runtime.hpp"
#include "vtime.hpp"

namespace nugo::numa {
namespace {

constexpr std::size_t kSmallMax = 2048;
constexpr std::size_t kMinClass = 16;
constexpr int kClasses = 8;  // 16, 32, ..., 2048
static_assert(kMinClass << (kClasses - 1) == kSmallMax);
constexpr std::size_t kChunk = std::size_t{1} << 20;
// Blocks of one class are carved a run at a time, so that the classes share a chunk without
// taking the chunk lock for every block. A multiple of every class size.
constexpr std::size_t kRun = 16 * 1024;
constexpr std::size_t kChunkHeader = 64;
constexpr std::uint64_t kChunkMagic = 0x6e75676f6e756d61;  // "nugonuma"
// Linux's MAX_NUMNODES is at most 1024 (NODES_SHIFT <= 10), so a real OS node indexes a table.
constexpr int kMaxOsNodes = 1024;

using nugo::detail::NodeMask;
using nugo::detail::NodeView;
using nugo::detail::mask_of;
using nugo::detail::page_size;
using View = NodeView;

const View& current_view() { return nugo::detail::current_node_view(); }

// mbind, with the kernels and sandboxes that cannot bind at all treated as "unbound"
// (nodes.hpp). False for a failure, with errno set.
bool mbind_or_unbound(void* p, std::size_t bytes, int mode, const NodeMask& mask, const View& v) {
  int err = 0;
  if (nugo::detail::bind_or_unbound(p, bytes, mode, mask, v, &err)) return true;
  errno = err;
  return false;
}

// Where memory goes: one node (MPOL_BIND), or every node of the view (MPOL_INTERLEAVE).
struct Where {
  bool interleaved = false;
  int node = -1;
};

bool bind_where(void* p, std::size_t bytes, Where w, const View& v) {
  if (w.interleaved) return mbind_or_unbound(p, bytes, MPOL_INTERLEAVE, v.interleave, v);
  return mbind_or_unbound(p, bytes, MPOL_BIND, mask_of({w.node}), v);
}

[[noreturn]] void no_such_node(const View& v, int node) {
  std::string valid;
  for (int n : v.nodes) valid += (valid.empty() ? "" : ", ") + std::to_string(n);
  throw std::invalid_argument("nugo::numa: no NUMA node " + std::to_string(node) +
                              "; valid nodes: " + (valid.empty() ? "none" : valid) + " (" +
                              v.source + ")");
}

// --- Large blocks -----------------------------------------------------------------------------

std::size_t pages_of(std::size_t bytes) {
  const std::size_t page = page_size();
  if (bytes > SIZE_MAX - page) throw std::bad_alloc();
  return (bytes + page - 1) & ~(page - 1);
}

// Makes the reserved range [p, p + len) read-write, bound to w first when `bound` ("Bound
// before touched"); on failure it is unmapped and std::bad_alloc thrown.
void bind_and_commit(const View& v, Where w, void* p, std::size_t len, bool bound) {
  if ((bound && !bind_where(p, len, w, v)) || !nugo::detail::commit_pages(p, len)) {
    munmap(p, len);
    throw std::bad_alloc();
  }
}

void* allocate_large(const View& v, Where w, std::size_t bytes, bool bound) {
  const std::size_t len = pages_of(bytes);
  void* p = nugo::detail::reserve_pages(len);
  if (p == MAP_FAILED) throw std::bad_alloc();
  bind_and_commit(v, w, p, len, bound);
  return p;
}

void free_large(void* p, std::size_t bytes) {
  const std::size_t len = pages_of(bytes);
  const int err = nugo::detail::unmap_pages(p, len);  // the call and its errno on one thread
  if (err == 0) return;
  // Unmapping from the middle of a merged mapping splits it, which fails with ENOMEM at
  // vm.max_map_count: the block stays mapped (a leak, not a fault).
  if (err == ENOMEM) return;
  nugo::detail::fatal("nugo::numa::free: munmap(%p, %zu): %s (not a block of nugo::numa, or "
                      "bytes is not the size it was allocated with)",
                      p, len, std::strerror(err));
}

// --- Small blocks -----------------------------------------------------------------------------

int class_of(std::size_t bytes) {
  return static_cast<int>(std::bit_width(std::max(bytes, kMinClass) - 1)) -
         static_cast<int>(std::bit_width(kMinClass - 1));
}

struct Block {
  Block* next;
};

struct alignas(64) SizeClass {  // one line each: the classes' locks do not share lines
  std::mutex mu;
  Block* free = nullptr;  // blocks given back
  char* next = nullptr;   // the current run: never handed out yet
  char* end = nullptr;
};

class Arena;

struct ChunkHeader {
  std::uint64_t magic;
  Arena* arena;
};
static_assert(sizeof(ChunkHeader) <= kChunkHeader);

class Arena {
 public:
  Arena(Where where, bool bound) : where_(where), bound_(bound) {}

  void* allocate(const View& v, int cls) {
    SizeClass& c = classes_[cls];
    const std::size_t size = kMinClass << cls;
    std::lock_guard<std::mutex> lock(c.mu);
    if (Block* b = c.free) {
      c.free = b->next;
      return b;
    }
    if (static_cast<std::size_t>(c.end - c.next) < size) refill(v, c, size);
    void* p = c.next;
    c.next += size;
    return p;
  }

  void deallocate(void* p, int cls) {
    SizeClass& c = classes_[cls];
    std::lock_guard<std::mutex> lock(c.mu);
    c.free = ::new (p) Block{c.free};
  }

 private:
  // A new run for class c, aligned to its size, so that every block is aligned to its class.
  void refill(const View& v, SizeClass& c, std::size_t size) {
    std::lock_guard<std::mutex> lock(chunk_mu_);
    auto fits = [&] {
      if (bump_ == nullptr) return false;
      bump_ = align_up(bump_, size);
      return bump_ < limit_ && static_cast<std::size_t>(limit_ - bump_) >= size;
    };
    if (!fits()) {
      new_chunk(v);
      fits();
    }
    c.next = bump_;
    c.end = bump_ + std::min(kRun, static_cast<std::size_t>(limit_ - bump_));
    bump_ = c.end;
  }

  static char* align_up(char* p, std::size_t a) {
    return reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(p) + a - 1) & ~(a - 1));
  }

  // The rest of the old chunk (less than one block) is abandoned. The chunk is aligned by
  // reserving twice its size and giving back the ends; bound before anything can touch it
  // ("Bound before touched"), then the header is written.
  void new_chunk(const View& v) {
    void* raw = nugo::detail::reserve_pages(2 * kChunk);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t chunk = (start + kChunk - 1) & ~(kChunk - 1);
    if (chunk > start) munmap(raw, chunk - start);
    if (const std::uintptr_t tail = start + 2 * kChunk - (chunk + kChunk); tail > 0)
      munmap(reinterpret_cast<void*>(chunk + kChunk), tail);
    auto* base = reinterpret_cast<char*>(chunk);
    bind_and_commit(v, where_, base, kChunk, bound_);
    ::new (base) ChunkHeader{kChunkMagic, this};
    bump_ = base + kChunkHeader;
    limit_ = base + kChunk;
  }

  const Where where_;
  const bool bound_;
  std::mutex chunk_mu_;
  char* bump_ = nullptr;  // the unused rest of the current chunk
  char* limit_ = nullptr;
  SizeClass classes_[kClasses];
};

// [bound][node]: bound arenas are per real OS node; unbound ones (emulated views) per node
// number modulo the table, since unbound memory is the same wherever it is counted.
std::atomic<Arena*> g_node_arenas[2][kMaxOsNodes];
std::atomic<Arena*> g_interleaved_arenas[2];

Arena& arena_for(Where w, bool bound) {
  std::atomic<Arena*>* slot = &g_interleaved_arenas[bound];
  if (!w.interleaved) {
    const auto index = static_cast<unsigned>(w.node);
    if (bound && index >= kMaxOsNodes) throw std::bad_alloc();
    slot = &g_node_arenas[bound][index % kMaxOsNodes];
  }
  Arena* arena = slot->load(std::memory_order_acquire);
  if (arena != nullptr) return *arena;
  auto fresh = std::make_unique<Arena>(w, bound);
  if (slot->compare_exchange_strong(arena, fresh.get(), std::memory_order_acq_rel,
                                    std::memory_order_acquire))
    return *fresh.release();
  return *arena;  // another thread made it first
}

void free_small(void* p, std::size_t bytes) {
  auto* header =
      reinterpret_cast<ChunkHeader*>(reinterpret_cast<std::uintptr_t>(p) & ~(kChunk - 1));
  if (header->magic != kChunkMagic)
    nugo::detail::fatal("nugo::numa::free: %p (%zu bytes) is not a small block of nugo::numa "
                        "(bytes must be the size it was allocated with)",
                        p, bytes);
  header->arena->deallocate(p, class_of(bytes));
}

// --- Both -------------------------------------------------------------------------------------

void* allocate(const View& v, Where w, std::size_t bytes) {
  const bool bound = !v.emulated;
  if (!bound) nugo::detail::note_unbound(v);
  if (bytes > kSmallMax) return allocate_large(v, w, bytes, bound);
  return arena_for(w, bound).allocate(v, class_of(bytes));
}

int local_node_in(const View& v) {
  const int mine = nugo::this_g::node();
  if (mine >= 0 && v.has(mine)) return mine;
  // The real CPU says where a plain thread is only on the real machine in real time (on an
  // emulated topology it is an accident of folding, in virtual time of the host's scheduling):
  // elsewhere a plain thread's memory is the first node's, as its goroutines are.
  if (v.emulated || nugo::detail::vtime::on()) return v.first_cpu_node;
  const int cpu = sched_getcpu();
  if (cpu >= 0 && static_cast<std::size_t>(cpu) < v.node_of_cpu.size() && v.node_of_cpu[cpu] >= 0)
    return v.node_of_cpu[cpu];
  return v.first_cpu_node;
}

}  // namespace

void* alloc_on(int node, std::size_t bytes) {
  const View& v = current_view();
  if (!v.has(node)) no_such_node(v, node);
  return allocate(v, Where{false, node}, bytes);
}

void* alloc_local(std::size_t bytes) {
  const View& v = current_view();
  const int node = local_node_in(v);
  if (node < 0) throw std::bad_alloc();  // a view without nodes: hwloc never makes one
  return allocate(v, Where{false, node}, bytes);
}

void* alloc_interleaved(std::size_t bytes) {
  return allocate(current_view(), Where{true, -1}, bytes);
}

void free(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes > kSmallMax)
    free_large(p, bytes);
  else
    free_small(p, bytes);
}

namespace detail {

int local_node() { return local_node_in(current_view()); }

}  // namespace detail
}  // namespace nugo::numa
