// Context switching between the scheduler (g0, the M's own thread stack) and goroutines.
//
// Boost.Context's fcontext is the mechanism: a context is a frame of callee-saved registers
// on a stack, and jump_fcontext saves one on the current stack and returns, on the other side,
// the context it came from. A context is one-shot: every jump hands back a fresh handle for
// the side that was left, which is why callers store t.fctx right after each jump.
//
// With Boost 1.74 the jump is our own (switch_amd64.S), in Boost's frame layout, so that
// Boost's make_fcontext and ontop_fcontext work with it unchanged. It leaves out what Go's
// gogo leaves out: the floating-point control state (MXCSR, the x87 control word), which Boost
// saves and loads at every switch and which cost over half of each switch in a profile of
// fork-join. So, as in Go, the floating-point environment belongs to the thread (base/README.md,
// "The switch"): a goroutine that changes the rounding mode or the exception masks must put
// them back before it blocks or yields, or the next goroutine on that thread, and the
// runtime's own code, run with them; MXCSR's sticky exception flags are the thread's too.
// Preemption is exempt, by signal or cooperative: it keeps the goroutine's state and hands the
// thread on in the defaults (FpControl below).
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
#include <boost/version.hpp>
#include <cstddef>
#include <cstdint>

#if NUGO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if NUGO_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace nugo::detail {

using boost::context::detail::fcontext_t;
using boost::context::detail::make_fcontext;
using boost::context::detail::transfer_t;

#if BOOST_VERSION == 107400
// Boost 1.74's frame, which switch_amd64.S was written against (later releases put more in a
// fresh frame). Any other Boost gets Boost's own jump, control words and all.
#define NUGO_OWN_JUMP 1
extern "C" transfer_t nugo_jump_fcontext(fcontext_t to, void* data);  // switch_amd64.S

// Continues `to`, handing it data; returns when something jumps back here, with the context
// it came from and the data it passed.
inline transfer_t jump_fcontext(fcontext_t to, void* data) { return nugo_jump_fcontext(to, data); }
#else
#define NUGO_OWN_JUMP 0
using boost::context::detail::jump_fcontext;
#endif

// The floating-point control state the switch does not carry: MXCSR (SSE's rounding mode,
// exception masks and sticky flags) and the x87 control word. A preemption, whatever path it
// takes, keeps the goroutine's and hands the thread on in the defaults: the signal's
// trampoline through XSAVE (sched/preempt_amd64.S), the cooperative yield of a goroutine whose
// slice is over with these (sched/preempt.cpp, yield_preempted). An M starts in the defaults
// too, whatever the goroutine that created its thread had set (clone copies the registers).
struct FpControl {
  std::uint32_t mxcsr;
  std::uint16_t x87;
};
inline constexpr FpControl kDefaultFpControl{0x1f80, 0x037f};

// Boost's ontop_fcontext loads MXCSR and the x87 control word from the frame it enters, and
// our jump leaves that slot as it found it: before an ontop_fcontext into a context our jump
// saved, put the defaults there (round to nearest, every exception masked).
// Not instrumented: the slot lies at the parked goroutine's saved stack pointer, in a frame
// only assembly wrote.
__attribute__((no_sanitize("address"))) inline void set_default_fp_control(
    [[maybe_unused]] fcontext_t ctx) {
#if NUGO_OWN_JUMP
  auto* slot = static_cast<std::uint32_t*>(ctx);
  slot[0] = kDefaultFpControl.mxcsr;
  slot[1] = kDefaultFpControl.x87;  // and two bytes of padding
#endif
}

inline FpControl fp_control() {
  FpControl c;
  asm volatile("stmxcsr %0" : "=m"(c.mxcsr));
  asm volatile("fnstcw %0" : "=m"(c.x87));
  return c;
}

inline void set_fp_control(const FpControl& c) {
  asm volatile("ldmxcsr %0" : : "m"(c.mxcsr));
  asm volatile("fldcw %0" : : "m"(c.x87));
}

// Whether make_fcontext lays out a fresh context as switch_amd64.S expects: a 64-byte frame at
// the top of the stack (16-byte aligned) holding the entry function in rbx's slot. The runtime
// checks once at start, so that a Boost patched differently fails loudly instead of jumping
// into the wrong slot.
inline bool fcontext_layout_ok() {
#if NUGO_OWN_JUMP
  alignas(16) static unsigned char stack[512];
  void (*const fn)(transfer_t) = [](transfer_t) {};
  fcontext_t ctx = make_fcontext(stack + sizeof stack, sizeof stack, fn);
  auto* frame = static_cast<void* const*>(ctx);
  return static_cast<unsigned char*>(ctx) == stack + sizeof stack - 0x40 &&
         frame[5] == reinterpret_cast<void*>(fn);
#else
  return true;
#endif
}

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
