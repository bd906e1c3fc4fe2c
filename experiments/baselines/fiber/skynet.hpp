// skynet on Boost.Fiber: a 10-ary tree of fibers where each leaf sends its number and each
// inner fiber the sum of its children's, on a channel made by its parent. The algorithm of
// Go's `func skynet(c chan int, num, size, div int)`, with children launched as `go` launches
// them (queued, the parent runs on). Shared by fiber-bench (skynet/procs:N) and
// fiber-workload (the sweep's skynet); ../README.md, "Boost.Fiber skynet", has the measurements
// behind the two departures from Go's program below.
#pragma once

#include <boost/fiber/all.hpp>

#include <cstdint>
#include <memory>

namespace fiber_skynet {

inline constexpr std::int64_t kFanOut = 10;

// round_robin runs the tree level by level, so at the leaf level every fiber of a
// million-leaf tree is alive at once: Boost's default 128 KiB stacks would reserve 140 GiB.
// 16 KiB stacks (still a malloc'ed fixedsize_stack) are plenty for this fiber function; each
// live fiber still touches about two pages of its stack, so a procs:1 round_robin run peaks
// near 10 GiB of RSS.
inline constexpr std::size_t kStackBytes = 16 * 1024;

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
  boost::fibers::fiber(std::allocator_arg, boost::fibers::fixedsize_stack(kStackBytes), fiber, std::move(out), num, size)
      .detach();
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
