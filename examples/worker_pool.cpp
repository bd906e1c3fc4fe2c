// A worker pool with a context: 4 workers take jobs from a channel and send results back.
// The batch has a deadline (nugo::with_timeout), and each job a timeout of its own (a child
// context, cancelled with its parent). One job waits for something that never comes and is
// cut off by its timeout; another is a CPU hog, a loop that makes no call into the runtime,
// which the runtime preempts so that the other jobs go on meanwhile, even with one P.
//
// What "the others go on while the hog runs" means is made a fact of the program, not of a
// lucky schedule: the jobs after the hog are handed out only once the hog has started, and
// the hog spins until it has seen at least kDuringHog of them finish. At one P they can only run if
// the runtime takes the P from the hog; at two, while it holds one. If nothing preempts it, the
// hog gives up after kHogLimit and the program says so.
//
// Exit status 0 and "worker_pool: ok" only if every job's result is right, the slow job
// reports its deadline, and jobs finished while the hog was running.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

constexpr int kJobs = 100;
constexpr int kHog = 0;   // the first job, so that the others run while it does
constexpr int kSlow = 13;
constexpr int kDuringHog = 10;  // jobs the hog waits to see finish
constexpr auto kHogLimit = 20s;  // then it stops anyway: the runtime did not preempt it

struct Result {
  int job = 0;
  std::uint64_t value = 0;
  std::error_code err;  // the job's context error, if it was cut off
};

std::atomic<bool> hog_running{false};
std::atomic<int> finished_during_hog{0};

std::uint64_t sum_to(int n) {
  std::uint64_t s = 0;
  for (int i = 1; i <= n; ++i) s += static_cast<std::uint64_t>(i);
  return s;
}

// Arithmetic with no call into the runtime in its loop, until kDuringHog other jobs have
// finished: only the preemption signal can take the P from it. It looks at the clock once in
// a million rounds, only to give up after kHogLimit.
[[gnu::noinline]] std::uint64_t hog() {
  const auto give_up = std::chrono::steady_clock::now() + kHogLimit;
  std::uint64_t x = 1;
  for (std::uint64_t i = 1; finished_during_hog.load(std::memory_order_relaxed) < kDuringHog; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    if (i % (1 << 20) == 0 && std::chrono::steady_clock::now() > give_up) break;
  }
  return x | 1;  // never 0
}

Result run_job(const nugo::Context& batch, int job, const nugo::Chan<bool>& hog_started) {
  auto [ctx, cancel] = nugo::with_timeout(batch, 50ms);  // cancelled with the batch too
  Result r{job, 0, {}};
  if (job == kHog) {
    hog_running = true;
    hog_started.send(true);  // buffered: the dispatcher may now hand out the others
    r.value = hog();
    hog_running = false;
  } else if (job == kSlow) {  // waits for an answer that comes too late
    nugo::select(nugo::on_recv(nugo::after(10s)), nugo::on_recv(ctx.done()));
    r.err = ctx.err();
  } else {
    r.value = sum_to(job);
    if (hog_running) ++finished_during_hog;
  }
  cancel();  // releases the job's timer now rather than at its deadline
  return r;
}

void worker(const nugo::Context& batch, const nugo::Chan<int>& jobs,
            const nugo::Chan<Result>& results, const nugo::Chan<bool>& hog_started) {
  for (;;) {
    // select_value: the chosen case's handler gives the result, here "is there a job?".
    std::optional<int> job = nugo::select_value(
        nugo::on_recv(batch.done(), [](auto) { return std::optional<int>(); }),
        nugo::on_recv(jobs, [](std::optional<int> j) { return j; }));
    if (!job) return;  // the batch was cancelled, or no jobs are left
    results.send(run_job(batch, *job, hog_started));
  }
}

}  // namespace

int main() {
  return nugo::run([] {
    auto [batch, cancel_batch] = nugo::with_timeout(nugo::Context::background(), 60s);
    nugo::Chan<int> jobs;
    nugo::Chan<Result> results(kJobs);
    nugo::Chan<bool> hog_started(1);
    nugo::WaitGroup workers;
    for (int w = 0; w < 4; ++w) {
      workers.add(1);
      nugo::go([&, batch = batch] {
        worker(batch, jobs, results, hog_started);
        workers.done();
      });
    }
    nugo::go([&] {
      static_assert(kHog == 0);
      jobs.send(kHog);
      hog_started.recv();  // the rest only once the hog holds a P
      for (int j = 1; j < kJobs; ++j) jobs.send(j);
      jobs.close();
    });

    std::vector<Result> by_job(kJobs);
    for (int i = 0; i < kJobs; ++i) {
      Result r = *results.recv();
      by_job[r.job] = r;
    }
    cancel_batch();  // the workers are done with the jobs; this would stop them otherwise
    workers.wait();

    int wrong = 0;
    for (int j = 0; j < kJobs; ++j) {
      const Result& r = by_job[j];
      bool ok = j == kSlow ? r.err == nugo::ContextErrc::deadline_exceeded
                : j == kHog ? r.value != 0 && !r.err
                            : r.value == sum_to(j) && !r.err;
      if (!ok) {
        std::printf("FAILED: job %d: value %llu, error \"%s\"\n", j,
                    static_cast<unsigned long long>(r.value), r.err.message().c_str());
        ++wrong;
      }
    }
    std::printf("%d Ps; the slow job: %s; %d jobs finished while the hog ran\n",
                nugo::gomaxprocs(), by_job[kSlow].err.message().c_str(), finished_during_hog.load());
    if (finished_during_hog.load() < kDuringHog) {
      std::printf("FAILED: the hog ran %lld s and saw only %d of %d jobs finish: it was not "
                  "preempted\n", static_cast<long long>(kHogLimit.count()),
                  finished_during_hog.load(), kDuringHog);
      ++wrong;
    }
    if (wrong) return 1;
    std::printf("worker_pool: ok, %d jobs\n", kJobs);
    return 0;
  });
}
