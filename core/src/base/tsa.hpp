// Lock rules the compiler checks: clang's thread-safety analysis (-Wthread-safety), the way
// marl's tsa.h and Abseil's thread_annotations.h use it. A Lock is a capability; a field
// GUARDED_BY a lock may be touched only with it held; a function that REQUIRES a lock may be
// called only with it held; one that ACQUIREs or RELEASEs says so. The analysis is static
// and per function: where a lock is taken in one function and released in another, the
// annotations say which does what, and where the analysis cannot follow (every domain's lock
// taken in a loop), Lock::assert_held tells it, and checks it at run time in checked builds.
// The CI's clang build compiles the runtime with -Wthread-safety -Werror; other compilers
// see nothing.
#pragma once

#if defined(__clang__)
#define NUGO_TSA(x) __attribute__((x))
#else
#define NUGO_TSA(x)
#endif

#define NUGO_CAPABILITY(name) NUGO_TSA(capability(name))
#define NUGO_SCOPED_CAPABILITY NUGO_TSA(scoped_lockable)
#define NUGO_GUARDED_BY(lock) NUGO_TSA(guarded_by(lock))
#define NUGO_PT_GUARDED_BY(lock) NUGO_TSA(pt_guarded_by(lock))
#define NUGO_REQUIRES(...) NUGO_TSA(requires_capability(__VA_ARGS__))
#define NUGO_ACQUIRE(...) NUGO_TSA(acquire_capability(__VA_ARGS__))
#define NUGO_RELEASE(...) NUGO_TSA(release_capability(__VA_ARGS__))
#define NUGO_EXCLUDES(...) NUGO_TSA(locks_excluded(__VA_ARGS__))
#define NUGO_ASSERT_CAPABILITY(lock) NUGO_TSA(assert_capability(lock))
#define NUGO_RETURN_CAPABILITY(lock) NUGO_TSA(lock_returned(lock))
#define NUGO_NO_THREAD_SAFETY_ANALYSIS NUGO_TSA(no_thread_safety_analysis)
