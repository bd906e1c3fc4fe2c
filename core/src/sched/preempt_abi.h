/* Constants shared by the preemption signal handler (preempt.cpp) and the trampoline it
   injects (preempt_amd64.S). Plain C preprocessor: the assembler includes it too. */
#ifndef NUGO_PREEMPT_ABI_H
#define NUGO_PREEMPT_ABI_H

/* The x86-64 System V red zone: the 128 bytes below RSP a leaf function may use without
   moving RSP. The injected call must leave them alone. */
#define NUGO_RED_ZONE 128

#endif
