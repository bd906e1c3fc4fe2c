// One million goroutines alive at once, with the default configuration: every one has bound
// its (guarded) stack and is parked when the last one starts.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>

#include "sched.hpp"

namespace {

}  // namespace

// Resident pages of a goroutine's stack, by mincore.
long resident_pages(const nugo::detail::Stack& s) {
  long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec(s.size() / page);
  REQUIRE(mincore(s.lo, s.size(), vec.data()) == 0);
  long n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST_CASE("one million goroutines are alive at the same time", "[scale][manygoroutines]") {
  constexpr int kN = 1000000;
  constexpr int kSampleEvery = 1000;
  std::atomic<long> sum{0};
  long mappings_alive = 0;
  long max_resident = 0;
  std::vector<nugo::detail::Stack> sampled(kN / kSampleEvery);
  nugo::detail::GuardMode mode{};
  nugo::run([&] {
    nugo::WaitGroup started, gate, finished;
    gate.add(1);
    started.add(kN);
    finished.add(kN);
    for (int i = 0; i < kN; ++i)
      nugo::go([&, i] {
        if (i % kSampleEvery == 0) sampled[i / kSampleEvery] = nugo::detail::getg()->stack;
        started.done();
        gate.wait();
        sum.fetch_add(i, std::memory_order_relaxed);
        finished.done();
      });
    started.wait();
    mappings_alive = nugo::detail::count_mappings();
    for (const auto& stack : sampled) max_resident = std::max(max_resident, resident_pages(stack));
    mode = nugo::detail::sched->domains.front()->stacks->guard_mode();
    gate.done();
    finished.wait();
  }, nugo::Config::from_env());
  CHECK(sum.load() == static_cast<long>(kN) * (kN - 1) / 2);
  INFO("mappings with 1M goroutines alive: " << mappings_alive);
  // Whatever the guard mode, stacks must not have run the process out of mappings.
  CHECK(mappings_alive < 65530);
  if (mode == nugo::detail::GuardMode::madvise) CHECK(mappings_alive < 10000);
  // Stacks are committed lazily: a parked goroutine holds a page or two of its 256 KiB.
  INFO("most resident pages of a sampled parked goroutine's stack: " << max_resident);
  CHECK(max_resident <= 4);
}
