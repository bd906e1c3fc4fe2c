// Goroutine stacks.
//
// A stack is a fixed-size slot carved from a large anonymous mapping (a slab) reserved with
// MAP_NORESERVE: its pages are committed only when touched, so a goroutine that uses 3 KiB of
// a 256 KiB stack costs one page of RAM. Below each stack lies a guard region; a goroutine that
// runs off its stack faults there and the SIGSEGV handler (signals.cpp) names it.
//
// Why slabs and not one mmap per stack: Linux limits a process to vm.max_map_count mappings
// (65530 by default), and a PROT_NONE guard page splits a mapping in two, so one-mmap-per-stack
// with mprotect'd guards stops at ~32k goroutines. nugo needs a million. Three guard modes, the
// best one the kernel allows, chosen once per process:
//   madvise:  MADV_GUARD_INSTALL (Linux 6.13+) marks guard pages in the page tables without
//             splitting the mapping: every stack is guarded and a slab stays one mapping.
//   mprotect: older kernels; guards are mprotect'd, two mappings per stack, so only stacks
//             within a budget derived from vm.max_map_count get one.
//   canary:   stacks beyond that budget carry a canary word at their lowest address, checked
//             whenever the goroutine switches out; overflow is still reported, after the fact.
// The runtime says once on stderr when it has to fall back to canaries.
//
// Stacks are never freed while the runtime runs: a dead goroutine's stack goes to its P's
// stack cache (stackfree), and beyond that to the pool's free list, for the next goroutine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "futex.hpp"

namespace nugo::detail {

struct Stack {
  char* lo = nullptr;  // lowest usable address (the guard lies below it)
  char* hi = nullptr;  // one past the highest address; the stack grows down from here
  bool guarded = false;
  std::int16_t pool = 0;  // the StackPool it came from (its domain's id; fits the padding)

  explicit operator bool() const { return lo != nullptr; }
  std::size_t size() const { return static_cast<std::size_t>(hi - lo); }
};

// A free stack, linked through its own (already committed) top bytes.
struct FreeStack {
  FreeStack* next;
  bool guarded;
  std::int16_t pool;
};

enum class GuardMode { madvise, mprotect, canary };

inline constexpr std::uint64_t kStackCanary = 0x6e75676f5f737461ull;  // "nugo_sta"
inline constexpr std::size_t kStackGuard = 16 * 1024;

// One pool per scheduling domain (Domain::stacks): in NUMA mode on a real multi-node machine
// its slabs are bound to the domain's node (mbind before any page is touched, so every page
// of every stack is allocated there), and a stack freed on another node goes back to its own
// pool, not into the freeing P's cache.
class StackPool {
 public:
  // id: the domain's; os_node: the node to bind slabs to, or -1; sharing: how many pools
  // share the process's guard-page budget (mprotect mode).
  explicit StackPool(std::size_t stack_size, int id = 0, int os_node = -1, int sharing = 1);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // Moves up to n free stacks (allocating new ones as needed) onto *list; returns how many.
  int get_batch(FreeStack** list, int n);
  // Takes n stacks from the head of *list.
  void put_batch(FreeStack** list, int n);
  int id() const { return id_; }

  std::size_t stack_size() const { return stack_size_; }
  GuardMode guard_mode() const { return mode_; }
  // Which stack, if any, has its guard region at addr. For the SIGSEGV handler: lock-free,
  // reads only immutable slab geometry.
  bool is_guard_address(const void* addr) const;

  // Inline: on every first run and every exit, and a Stack returned through memory from an
  // out-of-line call was a store-forwarding stall in fork-join's profile.
  static Stack from_free(FreeStack* f, std::size_t stack_size) {
    char* hi = reinterpret_cast<char*>(f) + sizeof(FreeStack);
    return Stack{hi - stack_size, hi, f->guarded, f->pool};
  }
  static FreeStack* to_free(const Stack& s) {
    auto* f = reinterpret_cast<FreeStack*>(s.hi - sizeof(FreeStack));
    f->next = nullptr;
    f->guarded = s.guarded;
    f->pool = s.pool;
    return f;
  }

 private:
  FreeStack* carve();
  void new_slab();

  const std::size_t stack_size_;  // usable bytes, a multiple of the page size
  const std::size_t slot_size_;   // guard + stack
  const std::size_t slab_slots_;
  const int id_;
  const int os_node_;
  GuardMode mode_;
  std::size_t mprotect_budget_ = 0;  // stacks that may still get an mprotect'd guard

  Lock lock_;
  FreeStack* free_ = nullptr;
  char* carve_next_ = nullptr;  // next unused slot of the newest slab
  char* carve_end_ = nullptr;
  struct Slab { char* base; std::size_t bytes; };
  std::vector<Slab> slabs_;
  // Slab addresses for is_guard_address, published without the lock (see stack.cpp).
  static constexpr int kMaxSlabs = 1 << 16;
  Slab* slab_index_ = nullptr;
  std::atomic<int> nslabs_{0};
};

// The process's current number of memory mappings (lines of /proc/self/maps).
long count_mappings();

}  // namespace nugo::detail
