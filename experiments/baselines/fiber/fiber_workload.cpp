// fiber-workload: the Boost.Fiber twin of nugo-workload's communication workloads and skynet
// (experiments/baselines/README.md, "The peers"): the workloads that need channels, which TBB
// and OpenMP do not have.
//
// Written as a Boost.Fiber programmer writes them: detached fibers, Boost's channels, and
// boost::fibers::algo::work_stealing on --procs N threads (the calling thread and N - 1 more,
// each with its own ready queue, stealing from the others when empty: Boost.Fiber's closest
// match to Go's Ps; work_stealing at N = 1 too, so that every P count runs the same
// scheduler). Its threads spin while they have nothing to run (work_stealing without
// `suspend`, like Go's spinning Ms: with it, an idle thread sleeps and is woken only for
// fibers made ready on it, never to steal). --bind pu pins thread k to the k-th CPU of --cpus
// (nugo's Ps' CPUs; else the usable CPUs in order).
//
// The departures from Go's programs, all forced by Boost.Fiber:
//   - skynet (skynet.hpp): pooled 16 KiB stacks and a buffered channel of 16 per parent;
//   - the hogs of pingpong_hogs yield every 1,000 iterations (this_fiber::yield): a fiber is
//     never preempted, so a hog that did not yield would keep its thread until the end, and
//     with a hog per thread the ping-pong pair would never run again. nugo and Go preempt the
//     hog; here the hog gives way on its own. Same work, cooperative manners;
//   - fan-in's last producer closes the channel (Go's program has a goroutine wait for all
//     producers, then close): Boost's channel needs no WaitGroup for that.
#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/fiber/all.hpp>

#include <atomic>
#include <memory>
#include <thread>

#include "../cpp/twin.hpp"
#include "skynet.hpp"

namespace {

// ---- the runtime: N threads under work_stealing ----

class Pool {
 public:
  // The calling thread and procs - 1 helpers; returns once all of them run work_stealing.
  void start(int procs, const twin::Placement& where) {
    const bool pin = where.bind == twin::Bind::pu;
    const std::vector<int> cpus = where.cpus();
    for (int k = 1; k < procs; ++k)
      helpers_.emplace_back([this, procs, pin, cpus, k] {
        if (pin) twin::pin_to_slot(cpus, k);
        boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(static_cast<std::uint32_t>(procs));
        // The helper's main fiber blocks here while the thread's dispatcher runs and steals.
        std::unique_lock<boost::fibers::mutex> lock(mutex_);
        stopped_.wait(lock, [this] { return stopping_; });
      });
    if (pin) twin::pin_to_slot(cpus, 0);
    // Waits on work_stealing's barrier for the helpers.
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(static_cast<std::uint32_t>(procs));
  }

  // Releases the helpers and joins them (before the calling thread's scheduler goes away at
  // exit: not in a static destructor).
  void stop() {
    {
      std::lock_guard<boost::fibers::mutex> lock(mutex_);
      stopping_ = true;
    }
    stopped_.notify_all();
    for (auto& t : helpers_) t.join();
    helpers_.clear();
  }

 private:
  std::vector<std::thread> helpers_;
  boost::fibers::mutex mutex_;
  boost::fibers::condition_variable stopped_;
  bool stopping_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

twin::Started start(int procs, const twin::Placement& where) {
  pool().start(procs, where);
  return {where.bind, 1, "work_stealing(" + std::to_string(procs) + "), spinning when idle"};
}

template <class T>
using Unbuffered = boost::fibers::unbuffered_channel<T>;

// Launches f as a detached fiber.
template <class F>
void go(F f) {
  boost::fibers::fiber(std::move(f)).detach();
}

// ---- sieve: test/chan/sieve1.go, a fiber per prime found ----

std::vector<long> sieve(int n) {
  auto numbers = std::make_shared<Unbuffered<long>>();
  auto stop = std::make_shared<std::atomic<bool>>(false);
  go([numbers, stop] {
    for (long i = 2; !stop->load(std::memory_order_relaxed); ++i)
      if (numbers->push(i) != boost::fibers::channel_op_status::success) break;
    numbers->close();
  });
  std::vector<long> primes;
  std::shared_ptr<Unbuffered<long>> in = numbers;
  for (int i = 0; i < n; ++i) {
    const long prime = in->value_pop();
    primes.push_back(prime);
    auto out = std::make_shared<Unbuffered<long>>();
    go([in, out, prime] {
      long v;
      while (in->pop(v) == boost::fibers::channel_op_status::success)
        if (v % prime != 0) out->push(v);
      out->close();
    });
    in = out;
  }
  // Wind the pipeline down as nugo's does: the generator stops, each filter closes its output
  // as its input closes; drain the last one so that nobody stays blocked.
  stop->store(true);
  for (long v; in->pop(v) == boost::fibers::channel_op_status::success;) {
  }
  return primes;
}

// ---- ping-pong beside CPU hogs (the hogs yield: see above) ----

bool pingpong_hogs(long rounds, int hogs) {
  // Shared with the hogs: one may still be on its way out of the barrier when this returns.
  struct Hogs {
    explicit Hogs(int n) : ended(static_cast<std::size_t>(n) + 1) {}
    std::atomic<bool> stop{false};
    std::atomic<int> done{0};
    boost::fibers::barrier ended;
  };
  auto h = std::make_shared<Hogs>(hogs);
  for (int i = 0; i < hogs; ++i)
    go([h] {
      std::uint64_t x = 1;
      while (!h->stop.load(std::memory_order_relaxed)) {
        for (int j = 0; j < 1000; ++j) x = x * 6364136223846793005u + 1;
        boost::this_fiber::yield();
      }
      if (x != 0) ++h->done;  // x is never 0: the loop is not optimized away
      h->ended.wait();
    });
  auto ping = std::make_shared<Unbuffered<long>>(), pong = std::make_shared<Unbuffered<long>>();
  go([ping, pong] {
    long v;
    while (ping->pop(v) == boost::fibers::channel_op_status::success) pong->push(v + 1);
    pong->close();
  });
  long v = 0;
  for (long r = 0; r < rounds; ++r) {
    ping->push(v);
    v = pong->value_pop();
  }
  ping->close();
  h->stop = true;
  h->ended.wait();
  return v == rounds && h->done.load() == hogs;
}

// ---- fan-in: producers sending into one buffered channel, one consumer ----

long fanin(int producers, long each, std::size_t buffer, long* sum) {
  auto c = std::make_shared<boost::fibers::buffered_channel<long>>(buffer);
  auto sending = std::make_shared<std::atomic<int>>(producers);
  for (int p = 0; p < producers; ++p)
    go([c, sending, each] {
      for (long i = 0; i < each; ++i) c->push(i);
      if (sending->fetch_sub(1) == 1) c->close();
    });
  long count = 0;
  *sum = 0;
  for (long v; c->pop(v) == boost::fibers::channel_op_status::success;) {
    ++count;
    *sum += v;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  twin::Kernels k;
  k.skynet = [](long leaves) { return static_cast<long>(fiber_skynet::run(leaves)); };
  k.sieve = sieve;
  k.pingpong_hogs = pingpong_hogs;
  k.fanin = fanin;
  const int status = twin::main(argc, argv, {"fiber-workload", "fiber", k, start});
  pool().stop();
  return status;
}
