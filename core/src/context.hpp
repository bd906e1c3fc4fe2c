// Context switching between the scheduler (g0, the M's own thread stack) and goroutines.
//
// Boost.Context's fcontext is the whole mechanism: jump_fcontext saves the callee-saved
// registers on the current stack and returns, on the other side, the context it came from.
// A context is one-shot: every jump hands back a fresh handle for the side that was left,
// which is why callers store t.fctx right after each jump.
//
// Under AddressSanitizer every switch must be announced (start) and acknowledged (finish),
// otherwise ASan believes the thread's stack pointer ran off its stack and reports garbage.
// Outside sanitizer builds these helpers compile to nothing.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>

#if NUGO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace nugo::detail {

using boost::context::detail::fcontext_t;
using boost::context::detail::jump_fcontext;
using boost::context::detail::make_fcontext;
using boost::context::detail::transfer_t;

// One side of a switch as ASan needs to know it: the stack's lowest address and size, and
// the slot where its fake stack (use-after-return frames) is parked while it is switched out.
// Empty, and stored with [[no_unique_address]], outside sanitizer builds.
#if NUGO_ASAN
struct SanitizerStack {
  const void* bottom = nullptr;
  std::size_t size = 0;
  void* fake_stack = nullptr;
};
#else
struct SanitizerStack {
  SanitizerStack() = default;
  SanitizerStack(const void*, std::size_t, void*) {}
};
#endif

// Announce a switch from `from` (nullptr when it will never run again) to `to`.
inline void sanitizer_start_switch([[maybe_unused]] SanitizerStack* from,
                                   [[maybe_unused]] const SanitizerStack& to) {
#if NUGO_ASAN
  __sanitizer_start_switch_fiber(from ? &from->fake_stack : nullptr, to.bottom, to.size);
#endif
}

// Acknowledge arrival on `self`'s stack.
inline void sanitizer_finish_switch([[maybe_unused]] SanitizerStack& self) {
#if NUGO_ASAN
  __sanitizer_finish_switch_fiber(self.fake_stack, nullptr, nullptr);
#endif
}

// A goroutine that dies or is abandoned leaves the redzones of its live frames poisoned, and
// its stack is reused (or its address range remapped) later. Only [sp, hi) can hold frames:
// unpoisoning just that keeps ASan from writing, and committing, shadow for whole stacks.
inline void sanitizer_forget_frames([[maybe_unused]] const void* sp, [[maybe_unused]] const void* hi) {
#if NUGO_ASAN
  __asan_unpoison_memory_region(sp, static_cast<const char*>(hi) - static_cast<const char*>(sp));
#endif
}

}  // namespace nugo::detail
