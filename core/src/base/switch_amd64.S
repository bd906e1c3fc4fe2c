// nugo_jump_fcontext: Boost.Context's jump_fcontext without the floating-point control words
// (x86-64 System V, Linux). fiber.hpp and base/README.md ("The switch") say why; this says how.
//
//   transfer_t nugo_jump_fcontext(fcontext_t to, void* data);
//
// It saves the callee-saved registers in a 64-byte frame on the current stack, moves RSP to
// `to` (a frame saved the same way, or one made by Boost's make_fcontext) and continues there,
// returning {the frame it left, data} in RAX:RDX, and as the first two arguments (RDI, RSI)
// when `to` is a fresh context entering its function. The frame is Boost 1.74's, slot for slot
// (fiber.hpp checks the version, and the runtime checks a fresh frame at start):
//
//   [rsp+0x00]  MXCSR (4 bytes) and the x87 control word (2 bytes): left as they were. Boost's
//               ontop_fcontext loads them, so the one caller of it (the traceback of a parked
//               goroutine, obs/traceback.cpp) writes valid values first (fiber.hpp,
//               set_default_fp_control).
//   [rsp+0x08]  r12, r13, r14, r15, rbx, rbp
//   [rsp+0x38]  the return address
//
// Boost saves MXCSR and the x87 control word at every switch and loads them back: fnstcw alone
// was 60% of the switch's samples in a profile of fork-join. Go's
// gogo keeps neither: the floating-point environment belongs to the thread, not to the
// goroutine. A preemption keeps the goroutine's and hands the thread on in the defaults (the
// signal's path in sched/preempt_amd64.S, the cooperative one in sched/preempt.cpp).
//
// In the no-preemption section: a switch half done is no place to stop. (Every switch also
// runs with G::locks raised, which is what kept Boost's jump, linked statically into the
// program, safe.)

        .section nugo_nopreempt_text, "ax", @progbits
        .globl  nugo_jump_fcontext
        .hidden nugo_jump_fcontext
        .type   nugo_jump_fcontext, @function
        .p2align 4
nugo_jump_fcontext:
        .cfi_startproc
        leaq    -0x38(%rsp), %rsp
        .cfi_adjust_cfa_offset 0x38
        movq    %r12, 0x8(%rsp)
        movq    %r13, 0x10(%rsp)
        movq    %r14, 0x18(%rsp)
        movq    %r15, 0x20(%rsp)
        movq    %rbx, 0x28(%rsp)
        movq    %rbp, 0x30(%rsp)
        movq    %rsp, %rax              // the frame we leave
        movq    %rdi, %rsp              // the frame we enter: from here on, another stack
        .cfi_undefined rip              // (no unwinding across the switch)
        movq    0x38(%rsp), %r8
        movq    0x8(%rsp), %r12
        movq    0x10(%rsp), %r13
        movq    0x18(%rsp), %r14
        movq    0x20(%rsp), %r15
        movq    0x28(%rsp), %rbx
        movq    0x30(%rsp), %rbp
        leaq    0x40(%rsp), %rsp
        movq    %rsi, %rdx              // transfer_t {rax: from, rdx: data} for a return
        movq    %rax, %rdi              // and as the arguments of a fresh context's function
        jmp     *%r8
        .cfi_endproc
        .size   nugo_jump_fcontext, .-nugo_jump_fcontext

        .section .note.GNU-stack, "", @progbits
