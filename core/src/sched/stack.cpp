#include "stack.hpp"


#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "fatal.hpp"
#include "nodes.hpp"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace nugo::detail {
namespace {

constexpr std::size_t kSlabBytes = 64u << 20;

long read_long(const char* path, long fallback) {
  std::ifstream in(path);
  long v = 0;
  return (in >> v) ? v : fallback;
}

// The mprotect budget leaves the process half of the map count headroom that remains, for
// malloc arenas, thread stacks and the user's own mappings.
std::size_t mprotect_budget() {
  long max = read_long("/proc/sys/vm/max_map_count", 65530);
  long free = max - count_mappings();
  return free > 0 ? static_cast<std::size_t>(free / 4) : 0;
}

GuardMode probe_guard_mode() {
  long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return GuardMode::mprotect;
  bool ok = madvise(p, page, MADV_GUARD_INSTALL) == 0;
  munmap(p, 2 * page);
  return ok ? GuardMode::madvise : GuardMode::mprotect;
}

std::size_t round_to_pages(std::size_t bytes) {
  auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

StackPool::StackPool(std::size_t stack_size, int id, int os_node, int sharing)
    : stack_size_(round_to_pages(stack_size)),
      slot_size_(kStackGuard + stack_size_),
      slab_slots_(std::max<std::size_t>(1, kSlabBytes / slot_size_)),
      id_(id),
      os_node_(os_node),
      mode_(probe_guard_mode()) {
  if (mode_ == GuardMode::mprotect) mprotect_budget_ = mprotect_budget() / std::max(1, sharing);
  if (mode_ == GuardMode::mprotect && mprotect_budget_ == 0) mode_ = GuardMode::canary;
  slab_index_ = static_cast<Slab*>(std::calloc(kMaxSlabs, sizeof(Slab)));
  if (!slab_index_) fatal("stack pool: out of memory");
}

StackPool::~StackPool() {
  for (const Slab& s : slabs_) munmap(s.base, s.bytes);
  std::free(slab_index_);
}

void StackPool::new_slab() {
  std::size_t bytes = slab_slots_ * slot_size_;
  // Reserved unfaultable until bound and told not to use huge pages (base/nodes.hpp,
  // "Bound before touched": a read-write slab could be faulted in by a neighbour's touch; and
  // with THP set to "always", touching one stack's top page could fault in 2 MiB).
  void* base = reserve_pages(bytes, MAP_NORESERVE | MAP_STACK);
  if (base == MAP_FAILED)
    fatal("cannot reserve %zu bytes for goroutine stacks (%s); lower NUGO_STACK", bytes,
          std::strerror(errno));
  madvise(base, bytes, MADV_NOHUGEPAGE);
  // Every stack page is then allocated on the node while it has memory (preferred, not
  // strict: a full node must not turn a stack fault into the OOM killer).
  if (os_node_ >= 0 && !bind_range(base, bytes, os_node_, /*strict=*/false)) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      std::fprintf(stderr, "nugo: cannot bind goroutine stacks to node %d (%s); they are "
                   "placed by the kernel's default policy\n", os_node_, std::strerror(errno));
  }
  if (!commit_pages(base, bytes))
    fatal("cannot commit %zu bytes for goroutine stacks (%s); lower NUGO_STACK", bytes,
          std::strerror(errno));
  int n = nslabs_.load(std::memory_order_relaxed);
  if (n == kMaxSlabs) fatal("too many goroutine stacks (%d slabs)", n);
  slabs_.push_back({static_cast<char*>(base), bytes});
  slab_index_[n] = slabs_.back();
  nslabs_.store(n + 1, std::memory_order_release);
  carve_next_ = static_cast<char*>(base);
  carve_end_ = carve_next_ + bytes;
}

FreeStack* StackPool::carve() {
  if (carve_next_ == carve_end_) new_slab();
  char* guard = carve_next_;
  carve_next_ += slot_size_;
  Stack s{guard + kStackGuard, guard + slot_size_, false, static_cast<std::int16_t>(id_)};

  const char* fallback = nullptr;  // why this and all later stacks go without a guard
  if (mode_ == GuardMode::madvise) {
    s.guarded = madvise(guard, kStackGuard, MADV_GUARD_INSTALL) == 0;
    if (!s.guarded) fallback = std::strerror(errno);
  } else if (mode_ == GuardMode::mprotect) {
    s.guarded = mprotect(guard, kStackGuard, PROT_NONE) == 0;
    if (!s.guarded)
      fallback = std::strerror(errno);
    else if (--mprotect_budget_ == 0)
      fallback = "the vm.max_map_count budget for guard pages is used up";
  }
  if (fallback) {
    mode_ = GuardMode::canary;
    std::fprintf(stderr,
                 "nugo: %s; further goroutine stacks are checked by canary instead of a guard "
                 "page (use Linux 6.13+ or raise vm.max_map_count)\n",
                 fallback);
  }
  if (!s.guarded) *reinterpret_cast<std::uint64_t*>(s.lo) = kStackCanary;
  return to_free(s);
}

int StackPool::get_batch(FreeStack** list, int n) {
  lock_.lock();
  for (int i = 0; i < n; ++i) {
    FreeStack* f = free_;
    if (f)
      free_ = f->next;
    else
      f = carve();
    f->next = *list;
    *list = f;
  }
  lock_.unlock();
  return n;
}

void StackPool::put_batch(FreeStack** list, int n) {
  lock_.lock();
  for (int i = 0; i < n && *list; ++i) {
    FreeStack* f = *list;
    *list = f->next;
    f->next = free_;
    free_ = f;
  }
  lock_.unlock();
}

bool StackPool::is_guard_address(const void* addr) const {
  auto a = reinterpret_cast<std::uintptr_t>(addr);
  int n = nslabs_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    auto base = reinterpret_cast<std::uintptr_t>(slab_index_[i].base);
    if (a < base || a >= base + slab_index_[i].bytes) continue;
    return (a - base) % slot_size_ < kStackGuard;
  }
  return false;
}

long count_mappings() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  long n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}


}  // namespace nugo::detail
