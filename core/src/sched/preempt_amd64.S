// nugo_async_preempt: where a preempted goroutine goes (x86-64 System V, Linux).
//
// The preemption signal handler (preempt.cpp) injects a call to this function: it moves the
// interrupted RSP down past the 128-byte red zone the interrupted function may be using,
// pushes the interrupted PC there as a return address, and sets PC here. So on entry:
//
//   [rsp]        interrupted PC
//   [rsp+8]      128 bytes of the interrupted code's red zone (untouched)
//   [rsp+136]    the interrupted RSP points here
//
// Nothing else has changed: every register, the flags and the extended state (x87, SSE,
// AVX, AVX-512, AMX) still hold the interrupted code's values. We save all of them, call
// nugo_async_preempt2 (which yields the goroutine to the global run queue and returns when
// some M runs it again, possibly on another thread, with errno carried over), restore
// everything and return to the interrupted instruction with `ret $128`, which pops the PC
// and steps back over the red zone.
//
// The extended state is saved with XSAVE using the mask of features the OS enabled (XCR0),
// in an area sized by CPUID leaf 0xD; without XSAVE, FXSAVE (x87 and SSE) is all there is.

#include "preempt_abi.h"

        .text
        .globl  nugo_async_preempt
        .hidden nugo_async_preempt
        .type   nugo_async_preempt, @function
        .p2align 4
nugo_async_preempt:
        .cfi_startproc
        .cfi_adjust_cfa_offset NUGO_RED_ZONE  // the red zone lies between us and the caller
        .cfi_offset %rip, -(NUGO_RED_ZONE + 8)
        push    %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_offset %rbp, -(NUGO_RED_ZONE + 16)
        mov     %rsp, %rbp                  // frame pointer chain for debuggers and ASan
        .cfi_def_cfa_register %rbp
        pushfq
        cld                                 // the ABI wants DF clear at calls
        push    %rax
        push    %rbx
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %r12
        push    %r13
        push    %r14
        push    %r15                        // rsp = rbp - 120

        sub     nugo_xsave_size(%rip), %rsp
        and     $-64, %rsp                  // XSAVE needs 64-byte alignment
        cmpb    $0, nugo_have_xsave(%rip)
        je      1f
        // XRSTOR faults on a non-zero reserved header; XSAVE writes only XSTATE_BV.
        xor     %eax, %eax
        mov     %rax, 512(%rsp)
        mov     %rax, 520(%rsp)
        mov     %rax, 528(%rsp)
        mov     %rax, 536(%rsp)
        mov     %rax, 544(%rsp)
        mov     %rax, 552(%rsp)
        mov     %rax, 560(%rsp)
        mov     %rax, 568(%rsp)
        mov     nugo_xsave_mask(%rip), %eax
        mov     nugo_xsave_mask+4(%rip), %edx
        xsave64 (%rsp)
        jmp     2f
1:      fxsave64 (%rsp)
2:
        // XSAVE and FXSAVE leave the registers as they were, and the switch to the next
        // goroutine carries no floating-point state (base/README.md, "The switch"): what the
        // interrupted code left in force would be in force for the runtime and the next
        // goroutine on this thread. The x87 register stack matters most: the ABI wants it
        // empty at every call, and a goroutine interrupted in x87 code leaves values on it, so
        // the next x87 computation deep enough overflows into NaN. FNINIT empties it and
        // resets the x87 control word; LDMXCSR puts the default MXCSR back (round to nearest,
        // exceptions masked, no flush-to-zero), so a rounding mode the goroutine set stays
        // its own. XRSTOR below gives it all back.
        fninit
        sub     $16, %rsp
        movl    $0x1f80, (%rsp)
        ldmxcsr (%rsp)
        add     $16, %rsp
        call    nugo_async_preempt2

        cmpb    $0, nugo_have_xsave(%rip)
        je      3f
        mov     nugo_xsave_mask(%rip), %eax
        mov     nugo_xsave_mask+4(%rip), %edx
        xrstor64 (%rsp)
        jmp     4f
3:      fxrstor64 (%rsp)
4:
        lea     -120(%rbp), %rsp
        pop     %r15
        pop     %r14
        pop     %r13
        pop     %r12
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rbx
        pop     %rax
        popfq
        pop     %rbp
        .cfi_def_cfa %rsp, NUGO_RED_ZONE + 8
        ret     $NUGO_RED_ZONE
        .cfi_endproc
        .size   nugo_async_preempt, .-nugo_async_preempt

        .section .note.GNU-stack,"",@progbits
