// skynet on Boost.Fiber: a 10-ary tree of fibers where each leaf sends its number and each
// inner fiber the sum of its children's, on a channel made by its parent. The algorithm of
// Go's `func skynet(c chan int, num, size, div int)`, with children launched as `go` launches
// them (queued, the parent runs on). Shared by fiber-bench (skynet/procs:N) and
// fiber-workload (the sweep's skynet); ../README.md, "Boost.Fiber skynet", has the measurements
// behind the two departures from Go's program below.
#pragma once

#include <boost/fiber/all.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace fiber_skynet {

inline constexpr std::int64_t kFanOut = 10;

// round_robin runs the tree level by level, so at the leaf level every fiber of a
// million-leaf tree is alive at once: Boost's default 128 KiB stacks would reserve 140 GiB.
// 16 KiB stacks are plenty for this fiber function; each
// live fiber still touches about two pages of its stack, so a procs:1 round_robin run peaks
// near 10 GiB of RSS.
inline constexpr std::size_t kStackBytes = 16 * 1024;

// The stacks are pooled, as an expert would pool them for a million short-lived fibers: a stack
// freed by a finished fiber goes to the next new one instead of back to malloc, so a process
// faults each stack's pages in once, not once per tree. One pool for every thread, under a
// lock: with work_stealing a fiber may end on another thread than the one that made it, and
// Boost's own pooled_fixedsize_stack (a boost::pool) is not thread-safe. The pool keeps its
// stacks until the process exits.
class StackPool {
 public:
  boost::context::stack_context allocate() {
    void* base = nullptr;
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        base = free_.back();
        free_.pop_back();
      }
    }
    if (base == nullptr) base = std::malloc(kStackBytes);
    if (base == nullptr) throw std::bad_alloc();
    boost::context::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char*>(base) + kStackBytes;  // stacks grow down
    return sc;
  }

  void deallocate(boost::context::stack_context& sc) noexcept {
    void* base = static_cast<char*>(sc.sp) - sc.size;
    std::lock_guard lock(mu_);
    free_.push_back(base);  // reserved below, so this does not allocate in the common case
  }

  static StackPool& instance() {
    static StackPool pool;
    return pool;
  }

 private:
  StackPool() { free_.reserve(1 << 21); }  // above the 1,111,111 fibers of a tree
  std::mutex mu_;
  std::vector<void*> free_;
};

// The StackAllocator a fiber keeps (Boost copies it into the fiber): a handle on the pool.
struct PooledStack {
  boost::context::stack_context allocate() { return StackPool::instance().allocate(); }
  void deallocate(boost::context::stack_context& sc) noexcept { StackPool::instance().deallocate(sc); }
};

// Go's program uses unbuffered channels. boost::fibers::unbuffered_channel holds a single
// value, so nine of a parent's ten children must wait for a retry each, every one a further
// pass of the scheduler over the whole level: on the development machine that took 65 s
// instead of 52-63 s at procs:1, and 118 s instead of 6-16 s at procs:2. A buffered_channel
// with room for all children (Boost requires a power of two) lets each child's push complete
// at once, as a Go child's send does when its parent already waits in its receive.
inline constexpr std::size_t kChannelCapacity = 16;
static_assert(kChannelCapacity >= kFanOut);
using Channel = boost::fibers::buffered_channel<std::int64_t>;

inline void fiber(std::shared_ptr<Channel> out, std::int64_t num, std::int64_t size);

// The parent and its children share the channel: a child may still be on its way out of
// push() when the parent has received its value and returned (Go's garbage collector covers
// this; here reference counting does).
inline void launch(std::shared_ptr<Channel> out, std::int64_t num, std::int64_t size) {
  boost::fibers::fiber(std::allocator_arg, PooledStack{}, fiber, std::move(out), num, size).detach();
}

inline void fiber(std::shared_ptr<Channel> out, std::int64_t num, std::int64_t size) {
  if (size == 1) {
    out->push(num);
    return;
  }
  auto children = std::make_shared<Channel>(kChannelCapacity);
  const std::int64_t child_size = size / kFanOut;
  for (std::int64_t i = 0; i < kFanOut; ++i) launch(children, num + i * child_size, child_size);
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < kFanOut; ++i) sum += children->value_pop();
  out->push(sum);
}

// One whole tree of `leaves` leaves (a power of 10), from a fiber of the scheduler that is to
// run it; the root's sum.
inline std::int64_t run(std::int64_t leaves) {
  auto root = std::make_shared<Channel>(kChannelCapacity);
  launch(root, 0, leaves);
  return root->value_pop();
}

}  // namespace fiber_skynet
