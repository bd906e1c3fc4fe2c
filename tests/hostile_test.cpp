// The hostile programs (hostile.cpp), each run as a child process, repeatedly where a failure
// would be intermittent. Each case names what it guards against: a runtime without the handling
// it checks crashes, hangs or computes a wrong result there, often in only some of the runs.
#include <catch2/catch.hpp>
#include <string>

#include "child_process.hpp"

namespace {

ChildResult hostile(const std::string& env, const std::string& args, int timeout_s = 120) {
  return run_child_process(env, NUGO_HOSTILE " " + args, timeout_s);
}

// Runs the program `runs` times (seeds 1..runs) and requires a clean exit every time.
void require_clean_runs(const std::string& env, const std::string& mode, int runs) {
  for (int seed = 1; seed <= runs; ++seed) {
    ChildResult r = hostile(env, mode + " " + std::to_string(seed));
    INFO(env << " " << mode << " " << seed << " -> exit " << r.exit_code << ", signal " << r.signal
              << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
  }
}

}  // namespace

TEST_CASE("x87 sums in long double under preemption equal a plain thread's", "[hostile]") {
  // The default 10 ms slice ends inside each ~40 ms sum.
  require_clean_runs("NUGO_PROCS=1", "x87-sum", 2);
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=1ms", "x87-sum", 1);
}

TEST_CASE("the x87 register stack survives preemption and migration", "[hostile]") {
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=50us", "x87-stack", 1);
  require_clean_runs("NUGO_PROCS=8 NUGO_TIMESLICE=50us", "x87-stack", 1);
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=50us NUGO_PREEMPT_SIGNAL=SIGUSR1", "x87-stack", 1);
}

TEST_CASE("yields, channels and compute at a 50 us slice neither crash nor hang", "[hostile]") {
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=50us", "mix", 6);
  require_clean_runs("NUGO_PROCS=8 NUGO_TIMESLICE=20us", "mix", 2);
}

TEST_CASE("goroutines yielding beside compute at a 20 us slice do not hang", "[hostile]") {
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=20us", "yield-spin", 6);
}

// Each program is a few hundred goroutines doing everything program.hpp lists; the soak
// (scripts/dev/soak.sh) runs them for hours, the suite five hundred.
TEST_CASE("400 seeded random programs at 20-50 us slices run clean", "[hostile]") {
  for (int batch = 0; batch < 4; ++batch) {
    std::string env = batch == 3 ? "NUGO_PROCS=8 NUGO_TIMESLICE=20us" : "NUGO_PROCS=2 NUGO_TIMESLICE=50us";
    std::string args = "random " + std::to_string(1 + 100 * batch) + " 100";
    ChildResult r = hostile(env, args, 240);
    INFO(env << " " << args << " -> exit " << r.exit_code << ", signal " << r.signal << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
  }
}

// The fuzzer's seed corpus, as programs: each input reaches one operation of the interpreter.
TEST_CASE("the fuzzer's seed corpus runs clean at 1 and 2 Ps", "[hostile]") {
  for (const char* env : {"NUGO_PROCS=1", "NUGO_PROCS=2 NUGO_TIMESLICE=50us"}) {
    ChildResult r = hostile(env, "bytes " NUGO_FUZZ_CORPUS "/*", 240);
    INFO(env << " -> exit " << r.exit_code << ", signal " << r.signal << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.output.find("inputs passed") != std::string::npos);
  }
}

TEST_CASE("random programs and the short-slice mix also run clean in NUMA mode on 4 nodes",
          "[hostile]") {
  const std::string numa =
      "NUGO_MODE=numa NUGO_TOPOLOGY=synthetic:pack:4\\ numa:1\\ core:2\\ pu:1 NUGO_PROCS=8 "
      "NUGO_TIMESLICE=50us";
  ChildResult r = hostile(numa, "random 1 100", 240);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  require_clean_runs(numa, "mix", 2);
  require_clean_runs(numa, "yield-spin", 2);
}

TEST_CASE("a std::mutex or std::shared_mutex held across compute does not hang", "[hostile]") {
  require_clean_runs("NUGO_PROCS=1", "std-mutex", 1);
  require_clean_runs("NUGO_PROCS=1 NUGO_TIMESLICE=50us", "std-mutex", 1);
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=50us", "std-mutex", 1);
  require_clean_runs("NUGO_PROCS=8 NUGO_TIMESLICE=50us", "std-mutex", 1);
}

TEST_CASE("a goroutine that dies holding a std::mutex leaves its G preemptible", "[hostile]") {
  require_clean_runs("NUGO_PROCS=1 NUGO_TIMESLICE=100us", "exit-holding-lock", 1);
}

TEST_CASE("function-local statics with slow initializers do not hang", "[hostile]") {
  require_clean_runs("NUGO_PROCS=1 NUGO_TIMESLICE=100us", "static-init", 1);
  require_clean_runs("NUGO_PROCS=2 NUGO_TIMESLICE=100us", "static-init", 1);
  require_clean_runs("NUGO_PROCS=8 NUGO_TIMESLICE=100us", "static-init", 1);
}

TEST_CASE("no thread to be had is nugo's own clear error with status 2", "[hostile]") {
  ChildResult r = hostile("", "no-threads");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cannot create") != std::string::npos);
  CHECK(r.output.find("RLIMIT_NPROC") != std::string::npos);
  CHECK(r.output.find("terminate called") == std::string::npos);
}
