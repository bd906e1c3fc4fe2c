// Counting the locks a thread holds (see threadlocks.hpp for why).
//
// Every entry point that takes or releases a lock of the thread is defined here and forwards
// to the next definition in the symbol search order (libc's, libstdc++'s, or a sanitizer's
// interceptor), found with dlsym(RTLD_NEXT). Code linked with nugo binds to these at link
// time; shared libraries bind to them at load time when the executable exports them, which
// the linker does for every symbol a linked shared library uses (libstdc++ uses the mutex and
// rwlock entry points).
//
// Only a successful acquisition counts. The functions live in the no-preemption section, so
// the signal cannot land between the real call and the count (a lock taken, not yet counted).
//
// What is not seen: locks taken inside libc with its internal functions (C11 mtx_*, stdio,
// malloc; all in text that is never preempted anyway), hand-written spin locks, and locks a
// thread takes through raw futex calls. core/README.md lists them in the rules.
#include "threadlocks.hpp"

#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace nugo::detail {

thread_local ThreadLocks thread_locks __attribute__((tls_model("initial-exec")));

namespace preempt {
void deferred(std::uintptr_t caller_pc);  // preempt.cpp
}

NUGO_NOPREEMPT ThreadLocks& current_thread_locks() { return thread_locks; }

extern "C" {
extern const char __start_nugo_nopreempt_text[] __attribute__((visibility("hidden")));
extern const char __stop_nugo_nopreempt_text[] __attribute__((visibility("hidden")));
}

bool in_nopreempt_section(std::uintptr_t pc) {
  return pc >= reinterpret_cast<std::uintptr_t>(__start_nugo_nopreempt_text) &&
         pc < reinterpret_cast<std::uintptr_t>(__stop_nugo_nopreempt_text);
}

namespace {

// The next definition of a symbol, looked up once. No function-local statics here: their
// guard is one of the functions we define.
template <class Fn>
class Next {
 public:
  explicit constexpr Next(const char* name, Fn* fallback = nullptr) : name_(name), fallback_(fallback) {}
  Fn* get() {
    Fn* f = fn_.load(std::memory_order_acquire);
    return f ? f : resolve();
  }

 private:
  Fn* resolve() {
    auto* f = reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name_));
    if (!f) f = fallback_;
    if (!f) {
      static const char kMsg[] = "fatal error: nugo: cannot find the next definition of ";
      (void)!write(2, kMsg, sizeof kMsg - 1);
      (void)!write(2, name_, std::strlen(name_));
      (void)!write(2, "\n", 1);
      std::_Exit(2);
    }
    fn_.store(f, std::memory_order_release);
    return f;
  }
  const char* name_;
  Fn* fallback_;
  std::atomic<Fn*> fn_{nullptr};
};

// The C++ ABI's static-initializer guards, for an executable that carries the C++ runtime
// (-static-libstdc++): ours are then the only definitions in the process (the archive's are not
// linked), so there is no next one, and these are used instead. The Itanium ABI fixes only
// the first byte (non-zero once initialized, read by the compiled fast path with acquire
// semantics); the word after it is ours: 0 free, 1 an initializer runs, 2 and others wait.
namespace guard {

// In the no-preemption section, with GCC's atomic built-ins (never out-of-line functions,
// even at -O0): a goroutine stopped between taking the guard and counting it as held would
// leave the guard's other waiters on its thread asleep for good.
NUGO_NOPREEMPT int acquire(std::int64_t* g) {
  auto* done = reinterpret_cast<std::uint8_t*>(g);
  auto* state = reinterpret_cast<std::uint32_t*>(g) + 1;
  for (;;) {
    if (__atomic_load_n(done, __ATOMIC_ACQUIRE)) return 0;
    std::uint32_t s = 0;
    if (__atomic_compare_exchange_n(state, &s, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      if (!__atomic_load_n(done, __ATOMIC_ACQUIRE)) return 1;  // the caller initializes it
      if (__atomic_exchange_n(state, 0, __ATOMIC_RELEASE) == 2)
        syscall(SYS_futex, state, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
      return 0;
    }
    if (s == 1 &&
        !__atomic_compare_exchange_n(state, &s, 2, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
        s == 0)
      continue;
    syscall(SYS_futex, state, FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
  }
}
NUGO_NOPREEMPT void end(std::int64_t* g, bool initialized) {
  auto* state = reinterpret_cast<std::uint32_t*>(g) + 1;
  if (initialized) __atomic_store_n(reinterpret_cast<std::uint8_t*>(g), 1, __ATOMIC_RELEASE);
  if (__atomic_exchange_n(state, 0, __ATOMIC_RELEASE) == 2)
    syscall(SYS_futex, state, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}
NUGO_NOPREEMPT void release(std::int64_t* g) { end(g, true); }
NUGO_NOPREEMPT void abort(std::int64_t* g) { end(g, false); }

}  // namespace guard

Next<int(pthread_mutex_t*)> next_mutex_lock("pthread_mutex_lock");
Next<int(pthread_mutex_t*)> next_mutex_trylock("pthread_mutex_trylock");
Next<int(pthread_mutex_t*, const timespec*)> next_mutex_timedlock("pthread_mutex_timedlock");
Next<int(pthread_mutex_t*, clockid_t, const timespec*)> next_mutex_clocklock("pthread_mutex_clocklock");
Next<int(pthread_mutex_t*)> next_mutex_unlock("pthread_mutex_unlock");
Next<int(pthread_rwlock_t*)> next_rwlock_rdlock("pthread_rwlock_rdlock");
Next<int(pthread_rwlock_t*)> next_rwlock_tryrdlock("pthread_rwlock_tryrdlock");
Next<int(pthread_rwlock_t*, const timespec*)> next_rwlock_timedrdlock("pthread_rwlock_timedrdlock");
Next<int(pthread_rwlock_t*, clockid_t, const timespec*)> next_rwlock_clockrdlock("pthread_rwlock_clockrdlock");
Next<int(pthread_rwlock_t*)> next_rwlock_wrlock("pthread_rwlock_wrlock");
Next<int(pthread_rwlock_t*)> next_rwlock_trywrlock("pthread_rwlock_trywrlock");
Next<int(pthread_rwlock_t*, const timespec*)> next_rwlock_timedwrlock("pthread_rwlock_timedwrlock");
Next<int(pthread_rwlock_t*, clockid_t, const timespec*)> next_rwlock_clockwrlock("pthread_rwlock_clockwrlock");
Next<int(pthread_rwlock_t*)> next_rwlock_unlock("pthread_rwlock_unlock");
Next<int(pthread_spinlock_t*)> next_spin_lock("pthread_spin_lock");
Next<int(pthread_spinlock_t*)> next_spin_trylock("pthread_spin_trylock");
Next<int(pthread_spinlock_t*)> next_spin_unlock("pthread_spin_unlock");
Next<int(std::int64_t*)> next_guard_acquire("__cxa_guard_acquire", guard::acquire);
Next<void(std::int64_t*)> next_guard_release("__cxa_guard_release", guard::release);
Next<void(std::int64_t*)> next_guard_abort("__cxa_guard_abort", guard::abort);

// Resolve before main, so that no lock operation on a hot path pays for dlsym.
// Resolve before main: no lock operation pays for dlsym on a hot path, and none calls it
// while holding the lock it is about to release (dlsym takes the loader's lock, which a
// thread inside dlopen may hold while it waits for that very lock).
__attribute__((constructor)) void resolve_all() {
  next_mutex_lock.get();
  next_mutex_trylock.get();
  next_mutex_timedlock.get();
  next_mutex_clocklock.get();
  next_mutex_unlock.get();
  next_rwlock_rdlock.get();
  next_rwlock_tryrdlock.get();
  next_rwlock_timedrdlock.get();
  next_rwlock_clockrdlock.get();
  next_rwlock_wrlock.get();
  next_rwlock_trywrlock.get();
  next_rwlock_timedwrlock.get();
  next_rwlock_clockwrlock.get();
  next_rwlock_unlock.get();
  next_spin_lock.get();
  next_spin_trylock.get();
  next_spin_unlock.get();
  next_guard_acquire.get();
  next_guard_release.get();
  next_guard_abort.get();
}

// Always inlined into the interposers, so in the no-preemption section too at any
// optimization level. A robust mutex whose owner died is acquired all the same.
__attribute__((always_inline)) inline int acquired(int r) {
  if (r == 0 || r == EOWNERDEAD) ++thread_locks.held;
  return r;
}

__attribute__((always_inline)) inline void released(void* caller) {
  ThreadLocks& t = thread_locks;
  if (t.held > 0 && --t.held == 0 && t.preempt_deferred)
    preempt::deferred(reinterpret_cast<std::uintptr_t>(caller));
}

__attribute__((always_inline)) inline int released(int r, void* caller) {
  if (r == 0) released(caller);
  return r;
}

}  // namespace
}  // namespace nugo::detail

using namespace nugo::detail;

#define NUGO_CALLER __builtin_return_address(0)

extern "C" {

NUGO_NOPREEMPT int pthread_mutex_lock(pthread_mutex_t* m) {
  return acquired(next_mutex_lock.get()(m));
}
NUGO_NOPREEMPT int pthread_mutex_trylock(pthread_mutex_t* m) {
  return acquired(next_mutex_trylock.get()(m));
}
NUGO_NOPREEMPT int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* t) {
  return acquired(next_mutex_timedlock.get()(m, t));
}
NUGO_NOPREEMPT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t c, const timespec* t) {
  return acquired(next_mutex_clocklock.get()(m, c, t));
}
NUGO_NOPREEMPT int pthread_mutex_unlock(pthread_mutex_t* m) {
  return released(next_mutex_unlock.get()(m), NUGO_CALLER);
}

NUGO_NOPREEMPT int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  return acquired(next_rwlock_rdlock.get()(l));
}
NUGO_NOPREEMPT int pthread_rwlock_tryrdlock(pthread_rwlock_t* l) {
  return acquired(next_rwlock_tryrdlock.get()(l));
}
NUGO_NOPREEMPT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* t) {
  return acquired(next_rwlock_timedrdlock.get()(l, t));
}
NUGO_NOPREEMPT int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t c, const timespec* t) {
  return acquired(next_rwlock_clockrdlock.get()(l, c, t));
}
NUGO_NOPREEMPT int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  return acquired(next_rwlock_wrlock.get()(l));
}
NUGO_NOPREEMPT int pthread_rwlock_trywrlock(pthread_rwlock_t* l) {
  return acquired(next_rwlock_trywrlock.get()(l));
}
NUGO_NOPREEMPT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* t) {
  return acquired(next_rwlock_timedwrlock.get()(l, t));
}
NUGO_NOPREEMPT int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t c, const timespec* t) {
  return acquired(next_rwlock_clockwrlock.get()(l, c, t));
}
NUGO_NOPREEMPT int pthread_rwlock_unlock(pthread_rwlock_t* l) {
  return released(next_rwlock_unlock.get()(l), NUGO_CALLER);
}

NUGO_NOPREEMPT int pthread_spin_lock(pthread_spinlock_t* l) {
  return acquired(next_spin_lock.get()(l));
}
NUGO_NOPREEMPT int pthread_spin_trylock(pthread_spinlock_t* l) {
  return acquired(next_spin_trylock.get()(l));
}
NUGO_NOPREEMPT int pthread_spin_unlock(pthread_spinlock_t* l) {
  return released(next_spin_unlock.get()(l), NUGO_CALLER);
}

// A static's initializer runs between acquire (returning 1: "you initialize it") and release
// or abort; meanwhile every other thread that reaches the static waits for it.
NUGO_NOPREEMPT int __cxa_guard_acquire(std::int64_t* g) {
  int r = next_guard_acquire.get()(g);
  if (r) ++thread_locks.held;
  return r;
}
NUGO_NOPREEMPT void __cxa_guard_release(std::int64_t* g) {
  next_guard_release.get()(g);
  released(NUGO_CALLER);
}
NUGO_NOPREEMPT void __cxa_guard_abort(std::int64_t* g) {
  next_guard_abort.get()(g);
  released(NUGO_CALLER);
}

}  // extern "C"
