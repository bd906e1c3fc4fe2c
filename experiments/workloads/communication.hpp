// The communication workloads (experiments/workloads/README.md): Go's concurrent prime sieve,
// a ping-pong pair beside CPU hogs, and a fan-in of producers into one consumer. Each function
// must be called from a goroutine.
#pragma once

#include <atomic>
#include <cstdint>
#include <nugo/nugo.hpp>
#include <vector>

#include "work.hpp"

namespace workloads {

// ---- sieve: test/chan/sieve1.go, a goroutine per prime found ----

inline void sieve_filter(nugo::Chan<long> in, nugo::Chan<long> out, long prime) {
  for (long v : in)
    if (v % prime != 0) out.send(v);
  out.close();
}

// The first n primes, found by the pipeline: a generator of 2, 3, 4, ..., then a filter per
// prime found.
inline std::vector<long> sieve(int n) {
  nugo::Chan<long> numbers;
  std::atomic<bool> stop{false};
  nugo::go([numbers, &stop] {
    for (long i = 2; !stop.load(std::memory_order_relaxed); ++i) numbers.send(i);
    numbers.close();
  });
  std::vector<long> primes;
  nugo::Chan<long> in = numbers;
  for (int i = 0; i < n; ++i) {
    long prime = *in.recv();
    primes.push_back(prime);
    nugo::Chan<long> out;
    nugo::go([in, out, prime] { sieve_filter(in, out, prime); });
    in = out;
  }
  // Wind the pipeline down: the generator stops, and each filter closes its output as its
  // input closes; drain the last one so that nobody stays blocked.
  stop = true;
  for (long v : in) (void)v;
  return primes;
}

// ---- ping-pong beside CPU hogs ----
//
// `hogs` goroutines compute without blocking; meanwhile two goroutines pass a token back and
// forth `rounds` times over unbuffered channels. Every round needs both of them scheduled, so
// this measures how the scheduler shares Ps between blocked-and-readied goroutines and hogs
// (preemption, runnext, the global queue). The check: every round happened, every hog ended.

struct PingPongResult {
  bool ok;
  long rounds;
};

inline PingPongResult pingpong_hogs(long rounds, int hogs) {
  std::atomic<bool> stop{false};
  std::atomic<int> hogs_done{0};
  nugo::WaitGroup hogs_left;
  hogs_left.add(hogs);
  for (int h = 0; h < hogs; ++h)
    nugo::go([&] {
      std::uint64_t x = 1;
      while (!stop.load(std::memory_order_relaxed))
        for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005u + 1;
      if (x != 0) ++hogs_done;  // x is never 0: the loop is not optimized away
      hogs_left.done();
    });
  nugo::Chan<long> ping, pong;
  nugo::go([=] {
    for (long v : ping) pong.send(v + 1);
    pong.close();
  });
  long v = 0;
  for (long r = 0; r < rounds; ++r) {
    ping.send(v);
    v = *pong.recv();
  }
  ping.close();
  stop = true;
  hogs_left.wait();
  return {v == rounds && hogs_done.load() == hogs, rounds};
}

// ---- fan-in: producers sending into one channel, one consumer ----

struct FanInResult {
  bool ok;
  long messages;
};

inline FanInResult fan_in(int producers, long each, std::size_t buffer) {
  nugo::Chan<long> c(buffer);
  nugo::WaitGroup sending;
  sending.add(producers);
  for (int p = 0; p < producers; ++p)
    nugo::go([=, &sending] {
      for (long i = 0; i < each; ++i) c.send(i);
      sending.done();
    });
  nugo::go([c, &sending] {
    sending.wait();
    c.close();
  });
  long count = 0, sum = 0;
  for (long v : c) {
    ++count;
    sum += v;
  }
  const long total = static_cast<long>(producers) * each;
  return {count == total && sum == producers * (each * (each - 1) / 2), total};
}

}  // namespace workloads
