// Context switching between the scheduler (g0, the M's own thread stack) and goroutines.
//
// Boost.Context's fcontext is the whole mechanism: jump_fcontext saves the callee-saved
// registers on the current stack and returns, on the other side, the context it came from.
// A context is one-shot: every jump hands back a fresh handle for the side that was left,
// which is why callers store t.fctx right after each jump.
//
// Under AddressSanitizer every switch must be announced (start) and acknowledged (finish),
// otherwise ASan believes the thread's stack pointer ran off its stack and reports garbage.
// Under ThreadSanitizer every goroutine is a fiber of its own (created at its first run,
// destroyed when it exits) and every g0 is its thread's own fiber; a switch to a fiber,
// announced just before the jump, is a happens-before edge from the side left to the side
// entered, which is what a switch is. Outside sanitizer builds these helpers compile to
// nothing.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>

#if NUGO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if NUGO_TSAN
#include <sanitizer/tsan_interface.h>
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
#elif NUGO_TSAN
struct SanitizerStack {  // TSan: the fiber (nullptr until created)
  SanitizerStack() = default;
  SanitizerStack(const void*, std::size_t, void*) {}
  void* fiber = nullptr;
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
#elif NUGO_TSAN
  __tsan_switch_to_fiber(to.fiber, 0);
#endif
}

// TSan: the fiber of a goroutine about to run for the first time, of the calling thread's g0,
// and the end of a goroutine's (called on g0, once it will never run again).
inline void sanitizer_new_fiber([[maybe_unused]] SanitizerStack& s) {
#if NUGO_TSAN
  s.fiber = __tsan_create_fiber(0);
#endif
}
inline void sanitizer_thread_fiber([[maybe_unused]] SanitizerStack& s) {
#if NUGO_TSAN
  s.fiber = __tsan_get_current_fiber();
#endif
}
inline void sanitizer_destroy_fiber([[maybe_unused]] SanitizerStack& s) {
#if NUGO_TSAN
  if (s.fiber) __tsan_destroy_fiber(s.fiber);
  s.fiber = nullptr;
#endif
}

// Acknowledge arrival on `self`'s stack.
inline void sanitizer_finish_switch([[maybe_unused]] SanitizerStack& self) {
#if NUGO_ASAN
  __sanitizer_finish_switch_fiber(self.fake_stack, nullptr, nullptr);
#endif
}

// TSan: a happens-before edge it cannot see, through the kernel (a pointer handed to epoll
// by one thread and returned by epoll_pwait2, which TSan does not intercept, to another).
inline void sanitizer_release([[maybe_unused]] void* addr) {
#if NUGO_TSAN
  __tsan_release(addr);
#endif
}
inline void sanitizer_acquire([[maybe_unused]] void* addr) {
#if NUGO_TSAN
  __tsan_acquire(addr);
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
