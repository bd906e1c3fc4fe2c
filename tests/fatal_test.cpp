// What ends a process, checked in a child process: configuration errors name the variable and
// exit with 2; a panicking goroutine and a stack overflow name the goroutine.
#include <csignal>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <nugo/nugo.hpp>
#include <string>

#include "child_process.hpp"

namespace {

ChildResult run_child(const std::string& env, const std::string& mode) {
  return run_child_process(env, NUGO_TEST_CHILD " " + mode);
}

}  // namespace

TEST_CASE("a valid environment runs", "[fatal]") {
  auto r = run_child("NUGO_PROCS=2 NUGO_STACK=64k", "run");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("ran") != std::string::npos);
}

TEST_CASE("a malformed environment variable is named, with exit status 2", "[fatal]") {
  struct Case { const char* env; const char* names; };
  for (Case c : {Case{"NUGO_PROCS=0", "NUGO_PROCS"}, Case{"NUGO_PROCS=abc", "NUGO_PROCS"},
                 Case{"NUGO_PROCS=4x", "NUGO_PROCS"}, Case{"NUGO_PROCS=100000", "NUGO_PROCS"},
                 Case{"NUGO_STACK=lots", "NUGO_STACK"}, Case{"NUGO_STACK=4k", "NUGO_STACK"},
                 Case{"NUGO_STACK=2g", "NUGO_STACK"}, Case{"NUGO_TOPOLOGY=bogus", "NUGO_TOPOLOGY"},
                 Case{"NUGO_TOPOLOGY=xml:/nonexistent.xml", "NUGO_TOPOLOGY"},
                 Case{"NUGO_TOPOLOGY=synthetic:not-a-topology", "NUGO_TOPOLOGY"}}) {
    INFO(c.env);
    auto r = run_child(c.env, "run");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.names) != std::string::npos);
    CHECK(r.output.find("ran") == std::string::npos);
  }
}

TEST_CASE("Config::from_env throws ConfigError naming the variable", "[fatal]") {
  setenv("NUGO_STACK", "12q", 1);
  try {
    (void)nugo::Config::from_env();
    FAIL("no exception");
  } catch (const nugo::ConfigError& e) {
    CHECK(std::string(e.what()).find("NUGO_STACK=\"12q\"") != std::string::npos);
  }
  unsetenv("NUGO_STACK");
  nugo::Config bad;
  bad.stack_size = 100;
  CHECK_THROWS_AS(nugo::run([] {}, bad), nugo::ConfigError);
}

TEST_CASE("sizes parse like NUGO_STACK documents", "[fatal]") {
  setenv("NUGO_STACK", "1m", 1);
  CHECK(nugo::Config::from_env().stack_size == (1u << 20));
  setenv("NUGO_STACK", "256K", 1);
  CHECK(nugo::Config::from_env().stack_size == (256u << 10));
  setenv("NUGO_STACK", "65536", 1);
  CHECK(nugo::Config::from_env().stack_size == 65536u);
  unsetenv("NUGO_STACK");
}

TEST_CASE("an exception escaping a goroutine ends the process naming the goroutine", "[fatal]") {
  auto r = run_child("", "panic");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("panic: boom from a goroutine") != std::string::npos);
  CHECK(r.output.find("goroutine 2 [running]") != std::string::npos);
}

TEST_CASE("a stack overflow hits the guard and is reported, then aborts", "[fatal]") {
  auto r = run_child("NUGO_STACK=64k", "overflow");
  CHECK(r.signal == SIGABRT);
  CHECK(r.output.find("goroutine 2: stack overflow (stack size 65536, raise NUGO_STACK)") !=
        std::string::npos);
}

TEST_CASE("a stack size that is not a page multiple is rounded up and still guarded", "[fatal]") {
  auto r = run_child("NUGO_STACK=100000", "overflow");
  CHECK(r.signal == SIGABRT);
  CHECK(r.output.find("goroutine 2: stack overflow (stack size 102400, raise NUGO_STACK)") !=
        std::string::npos);
  CHECK(r.output.find("canary") == std::string::npos);
}

TEST_CASE("a negative WaitGroup counter is a fatal error", "[fatal]") {
  auto r = run_child("", "negative-waitgroup");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: sync: negative WaitGroup counter") != std::string::npos);
}

TEST_CASE("all goroutines asleep is reported as Go reports it, with exit status 2", "[fatal]") {
  // Several Ms go idle together at 2 and 8 Ps: exactly one must see itself as the last. At
  // 1 P the only M may reach its idle loop before run() has returned from starting it (a
  // regression hung here under load), so each setting runs a few times.
  for (int round = 0; round < 3; ++round) {
    for (const char* procs : {"NUGO_PROCS=1", "NUGO_PROCS=2", "NUGO_PROCS=8"}) {
      INFO(procs);
      auto r = run_child(procs, "deadlock");
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("fatal error: all goroutines are asleep - deadlock!") !=
            std::string::npos);
      CHECK(r.output.find("goroutine 1 [chan receive]:") != std::string::npos);
      CHECK(r.output.find("[sync.Mutex.Lock]:") != std::string::npos);
    }
  }
}

TEST_CASE("a pending timer is not a deadlock", "[fatal]") {
  auto r = run_child("", "timer-not-deadlock");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("got 7") != std::string::npos);
  CHECK(r.output.find("deadlock") == std::string::npos);
}

TEST_CASE("NUGO_DEBUG=deadlock=0 turns the report off, and bad settings are named", "[fatal]") {
  setenv("NUGO_DEBUG", "deadlock=0", 1);
  CHECK_FALSE(nugo::Config::from_env().detect_deadlock);
  setenv("NUGO_DEBUG", "deadlock=1,", 1);
  CHECK(nugo::Config::from_env().detect_deadlock);
  unsetenv("NUGO_DEBUG");
  auto r = run_child("NUGO_DEBUG=deadlok=0", "run");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("NUGO_DEBUG") != std::string::npos);
  CHECK(r.output.find("deadlok=0") != std::string::npos);
}

// Issue 9.7: one P per PU, but never more than Config::kMaxProcs, as Go caps GOMAXPROCS.
TEST_CASE("the P count is capped at Config::kMaxProcs on a topology with more PUs", "[fatal]") {
  nugo::Config cfg;
  cfg.topology = "synthetic:pack:2 core:512 pu:2";  // 2,048 PUs
  int procs = 0;
  nugo::run([&] { procs = nugo::gomaxprocs(); }, cfg);
  CHECK(procs == nugo::Config::kMaxProcs);
  cfg.procs = 3;
  nugo::run([&] { procs = nugo::gomaxprocs(); }, cfg);
  CHECK(procs == 3);
  cfg.procs = nugo::Config::kMaxProcs + 1;
  CHECK_THROWS_AS(nugo::run([] {}, cfg), nugo::ConfigError);
}
