// Random programs that check themselves: the soak's generator (hostile.cpp "random SEED",
// scripts/dev/soak.sh) and the fuzzer's interpreter (tests/fuzz/fuzz_program.cpp) are one
// interpreter fed by two kinds of choices, a seeded generator or the fuzzer's bytes.
//
// A program is a tree of goroutines. Each takes up to 60 steps, every step one operation
// chosen from its own stream of choices: spawn a child (nugo::go, or go_on to a node), yield,
// compute, compute with preemption as the only way out (a hog spinning on a flag another
// goroutine sets), x87 / SSE / AVX arithmetic checked bit for bit against a plain thread's,
// channel round trips, select with and without default, close while senders and receivers
// are blocked, Mutex / RWMutex / Cond / Once / WaitGroup, a std::mutex held across compute
// (a lock owned by the thread), function-local statics with slow initializers, sleeps,
// timers and tickers (stop and reset racing with their firing and with each other, and
// durations from negative to the largest), nugo::syscall around real sleeps, and
// lock_os_thread around blocking operations.
//
// Invariants, checked when the program ends: every value sent was received exactly once (a
// token balance returns to zero, counting sends that panicked on a closed channel), no
// goroutine was lost (each is joined on a WaitGroup: a lost wake-up is a hang, which the
// caller's watchdog turns into a goroutine dump), the locks excluded, Once ran once, every
// float result equals the reference, go_on's goroutines started at home, and the runtime's
// statistics add up (each goroutine created counted once, runs split into home and away,
// totals equal to the sum of the Ps' and of the nodes').
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nugo/config.hpp>

namespace program {

// What a run found: ok, or the first broken invariant.
struct Outcome {
  bool ok = true;
  std::string failure;
  int goroutines = 0;  // created by the program, main included
};

// The program of a seed.
Outcome run_seed(std::uint32_t seed, const nugo::Config& cfg);
// The program the bytes describe (each choice takes the next byte; zeros once they run out).
Outcome run_bytes(const std::uint8_t* data, std::size_t size, const nugo::Config& cfg);

}  // namespace program
