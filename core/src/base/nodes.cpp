// The node view and binding primitives (nodes.hpp).
#include "nodes.hpp"

#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "threadlocks.hpp"  // NUGO_NOPREEMPT

namespace nugo::detail {
namespace {

constexpr unsigned kWordBits = sizeof(unsigned long) * 8;

NodeView make_view(const topo::Topology& t, bool verbose) {
  NodeView v;
  v.source = t.source;
  v.emulated = t.emulated;
  v.verbose = verbose;
  for (const topo::Node& n : t.nodes) v.nodes.push_back(n.os_index);
  // A node whose CPUs an affinity mask forbids still has memory this process may use.
  v.nodes.insert(v.nodes.end(), t.masked_nodes.begin(), t.masked_nodes.end());
  std::sort(v.nodes.begin(), v.nodes.end());
  v.nodes.erase(std::unique(v.nodes.begin(), v.nodes.end()), v.nodes.end());
  // Emulated PUs are folded onto the real CPUs, so several nodes may claim one CPU: the first
  // one wins.
  for (const topo::Node& n : t.nodes) {
    if (n.pus.empty()) continue;
    if (v.first_cpu_node < 0) v.first_cpu_node = n.os_index;
    for (int pu : n.pus) {
      const int cpu = t.real_cpu(pu);
      if (cpu < 0) continue;
      if (static_cast<std::size_t>(cpu) >= v.node_of_cpu.size()) v.node_of_cpu.resize(cpu + 1, -1);
      if (v.node_of_cpu[cpu] < 0) v.node_of_cpu[cpu] = n.os_index;
    }
  }
  if (v.first_cpu_node < 0 && !v.nodes.empty()) v.first_cpu_node = v.nodes.front();
  if (!v.emulated) v.interleave = mask_of(v.nodes);
  return v;
}

std::atomic<const NodeView*> g_published{nullptr};
std::mutex g_publish_mu;
const NodeView* g_published_list = nullptr;  // under g_publish_mu; newest first, never freed

// Loaded on first use, never freed (plain threads may use it up to exit).
const NodeView& machine_view() {
  static const NodeView* const view = new NodeView(make_view(topo::Topology::load(""), false));
  return *view;
}

std::atomic<bool> g_said_emulated{false};
std::atomic<bool> g_cannot_bind{false};

// The system calls with their errno, in the no-preemption text: a goroutine moved to another
// thread between the call and the read would read that thread's errno.
NUGO_NOPREEMPT int mbind_errno(void* p, std::size_t bytes, int mode, const NodeMask& mask) {
  return mbind(p, bytes, mode, mask.words.data(), mask.maxnode(), 0) == 0 ? 0 : errno;
}

NUGO_NOPREEMPT int munmap_errno(void* p, std::size_t bytes) { return munmap(p, bytes) == 0 ? 0 : errno; }

}  // namespace

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

NodeMask mask_of(const std::vector<int>& os_nodes) {
  NodeMask m;
  int top = 0;
  for (int n : os_nodes) top = std::max(top, n);
  m.words.assign(static_cast<std::size_t>(top) / kWordBits + 2, 0);
  for (int n : os_nodes)
    if (n >= 0) m.words[n / kWordBits] |= 1UL << (n % kWordBits);
  return m;
}

bool NodeView::has(int node) const { return std::binary_search(nodes.begin(), nodes.end(), node); }

const NodeView& current_node_view() {
  if (const NodeView* v = g_published.load(std::memory_order_acquire)) return *v;
  return machine_view();
}

void publish_topology(const topo::Topology* t, bool verbose) {
  std::lock_guard<std::mutex> lock(g_publish_mu);
  if (t == nullptr) {
    g_published.store(nullptr, std::memory_order_release);
    return;
  }
  auto* view = new NodeView(make_view(*t, verbose));
  view->older = g_published_list;
  g_published_list = view;
  g_published.store(view, std::memory_order_release);
}

void note_unbound(const NodeView& v) {
  if (v.verbose && !g_said_emulated.load(std::memory_order_relaxed) && !g_said_emulated.exchange(true))
    std::fputs("nugo: numa: emulated topology: memory is not bound to nodes\n", stderr);
}

bool bind_or_unbound(void* p, std::size_t bytes, int mode, const NodeMask& mask, const NodeView& v,
                     int* err) {
  if (g_cannot_bind.load(std::memory_order_relaxed)) return true;
  const int e = mbind_errno(p, bytes, mode, mask);
  if (e == 0) return true;
  if (e == ENOSYS || e == EPERM) {
    if (!g_cannot_bind.exchange(true) && v.nodes.size() > 1)
      std::fprintf(stderr, "nugo: numa: mbind: %s: memory is not bound to nodes\n", std::strerror(e));
    return true;
  }
  *err = e;
  return false;
}

bool bind_range(void* p, std::size_t bytes, int os_node, bool strict) {
  const NodeView& v = current_node_view();
  if (!v.has(os_node) || reinterpret_cast<std::uintptr_t>(p) % page_size() != 0) {
    errno = EINVAL;
    return false;
  }
  if (v.emulated) {
    note_unbound(v);
    return true;
  }
  const int e = mbind_errno(p, bytes, strict ? MPOL_BIND : MPOL_PREFERRED, mask_of({os_node}));
  errno = e;
  return e == 0;
}

void* reserve_pages(std::size_t bytes, int flags) {
  return mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

bool commit_pages(void* p, std::size_t bytes) { return mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0; }

int unmap_pages(void* p, std::size_t bytes) { return munmap_errno(p, bytes); }

}  // namespace nugo::detail
