// What ends a process, checked in a child process: configuration errors name the variable and
// exit with 2; a panicking goroutine and a stack overflow name the goroutine; misuse of a
// channel or a lock, and the machine's limits running out (threads, address space,
// descriptors), end in a message and a documented exit status, never a hang or a bare signal.
#include <algorithm>
#include <chrono>
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
                 Case{"NUGO_TOPOLOGY=synthetic:not-a-topology", "NUGO_TOPOLOGY"},
                 Case{"NUGO_TOPOLOGY=xml:" NUGO_TEST_DATA "/corrupt-topology.xml", "NUGO_TOPOLOGY"},
                 Case{"NUGO_TOPOLOGY=xml:" NUGO_TEST_DATA "/empty-topology.xml", "NUGO_TOPOLOGY"},
                 Case{"NUGO_MODE=numb", "NUGO_MODE"}, Case{"NUGO_BIND=socket", "NUGO_BIND"},
                 Case{"NUGO_TIMESLICE=5", "NUGO_TIMESLICE"}, Case{"NUGO_TIMESLICE=1us", "NUGO_TIMESLICE"},
                 Case{"NUGO_PREEMPT_SIGNAL=SIGKILL", "NUGO_PREEMPT_SIGNAL"},
                 Case{"NUGO_PREEMPT_SIGNAL=99", "NUGO_PREEMPT_SIGNAL"},
                 Case{"NUGO_DEBUG=schedtrace=abc", "NUGO_DEBUG"}, Case{"NUGO_NUMA=bogus", "NUGO_NUMA"},
                 Case{"NUGO_NUMA=remote_take=all", "NUGO_NUMA"},
                 Case{"NUGO_STATS=/nonexistent/dir/s.json", "NUGO_STATS"},
                 Case{"NUGO_TRACE=/nonexistent/dir/t.json", "NUGO_TRACE"},
                 Case{"NUGO_TRACE_MAX=1k", "NUGO_TRACE_MAX"}, Case{"NUGO_TRACE_MAX=huge", "NUGO_TRACE_MAX"},
                 Case{"NUGO_SEED=abc", "NUGO_SEED"}, Case{"NUGO_SEED=-1", "NUGO_SEED"},
                 Case{"NUGO_SEED=99999999999999999999999", "NUGO_SEED"},
                 // Strict syntax: no spaces on either side, no sign, nothing after the unit.
                 Case{"NUGO_PROCS=' 2'", "NUGO_PROCS"}, Case{"NUGO_PROCS='2 '", "NUGO_PROCS"},
                 Case{"NUGO_PROCS=+2", "NUGO_PROCS"}, Case{"NUGO_STACK=' 256k'", "NUGO_STACK"},
                 Case{"NUGO_STACK=256kx", "NUGO_STACK"}, Case{"NUGO_STACK=256ib", "NUGO_STACK"},
                 Case{"NUGO_TIMESLICE=' 1ms'", "NUGO_TIMESLICE"},
                 Case{"NUGO_TIMESLICE=+1ms", "NUGO_TIMESLICE"},
                 Case{"NUGO_PREEMPT_SIGNAL=' 23'", "NUGO_PREEMPT_SIGNAL"}}) {
    INFO(c.env);
    auto r = run_child(c.env, "run");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.names) != std::string::npos);
    CHECK(r.output.find("ran") == std::string::npos);
  }
}

TEST_CASE("Config::from_env_or_exit reports a bad variable and exits with 2, as run does",
          "[fatal]") {
  auto bad = run_child("NUGO_PROCS=abc", "config-or-exit");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("nugo: NUGO_PROCS=\"abc\"") != std::string::npos);
  CHECK(bad.output.find("ran") == std::string::npos);
  auto good = run_child("NUGO_PROCS=1", "config-or-exit");
  CHECK(good.exit_code == 0);
  CHECK(good.output.find("ran") != std::string::npos);
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

TEST_CASE("sizes and durations parse like nugo/config.hpp documents", "[fatal]") {
  for (const char* v : {"256k", "256K", "256kb", "256KB", "256kib", "256KiB", "262144", "262144b"}) {
    INFO(v);
    setenv("NUGO_STACK", v, 1);
    CHECK(nugo::Config::from_env().stack_size == (256u << 10));
  }
  setenv("NUGO_STACK", "1m", 1);
  CHECK(nugo::Config::from_env().stack_size == (1u << 20));
  unsetenv("NUGO_STACK");
  for (const char* v : {"500us", "500\u00b5s", "500000ns"}) {
    INFO(v);
    setenv("NUGO_TIMESLICE", v, 1);
    CHECK(nugo::Config::from_env().timeslice == std::chrono::microseconds(500));
  }
  unsetenv("NUGO_TIMESLICE");
}

TEST_CASE("an unknown NUGO_ variable is named in a warning, with the nearest known name",
          "[fatal]") {
  auto r = run_child("NUGO_PROC=2 NUGO_DEBG=deadlock=0 NUGO_SOMETHING_ELSE=1", "run");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("ran") != std::string::npos);
  CHECK(r.output.find("nugo: warning: unknown environment variable NUGO_PROC (did you mean "
                      "NUGO_PROCS?) is ignored") != std::string::npos);
  CHECK(r.output.find("NUGO_DEBG (did you mean NUGO_DEBUG?)") != std::string::npos);
  CHECK(r.output.find("unknown environment variable NUGO_SOMETHING_ELSE is ignored") !=
        std::string::npos);
  auto quiet = run_child("NUGO_PROCS=2", "run");  // known names: no warning
  CHECK(quiet.output.find("warning") == std::string::npos);
}

TEST_CASE("a runtime call inside a nugo::syscall body is a fatal error naming the goroutine, "
          "the call and where", "[fatal][syscall]") {
  struct Case { const char* arg; const char* call; };
  for (Case c : {Case{"yield", "nugo::yield"}, Case{"send", "nugo::Chan::send"},
                 Case{"try_send", "nugo::Chan::try_send"}, Case{"recv", "nugo::Chan::recv"},
                 Case{"try_recv", "nugo::Chan::try_recv"}, Case{"close", "nugo::Chan::close"},
                 Case{"select", "nugo::select"}, Case{"go", "nugo::go"},
                 Case{"after", "nugo::after or nugo::Timer"},
                 Case{"sleep", "nugo::sleep_for/sleep_until"},
                 Case{"lock", "nugo::Mutex::lock"}, Case{"unlock", "nugo::Mutex::unlock"},
                 Case{"done", "nugo::WaitGroup::done"}, Case{"wait", "nugo::WaitGroup::wait"}}) {
    INFO(c.arg);
    for (const char* procs : {"NUGO_PROCS=1", "NUGO_PROCS=2"}) {
      auto r = run_child(procs, std::string("syscall-misuse ") + c.arg);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find(std::string("fatal error: goroutine 1: ") + c.call +
                          " inside a nugo::syscall body") != std::string::npos);
      CHECK(r.output.find("goroutine 1 [running]:") != std::string::npos);
      CHECK(r.output.find("child.cpp:") != std::string::npos);  // where: the caller's line
      CHECK(r.output.find("returned") == std::string::npos);
    }
  }
  // What the body may do: system calls (nested wrappers are plain calls), preempt_point,
  // lock_os_thread, and queries.
  auto r = run_child("", "syscall-misuse allowed");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("allowed: goroutine 1,") != std::string::npos);
  CHECK(r.output.find("byte x") != std::string::npos);
  CHECK(r.output.find("returned") != std::string::npos);
}

TEST_CASE("a deadlock report folds goroutines parked at the same place, and says where",
          "[fatal]") {
  auto r = run_child("NUGO_PROCS=2", "deadlock-many");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: all goroutines are asleep - deadlock!") != std::string::npos);
  CHECK(r.output.find("goroutine 1 [sync.WaitGroup.Wait]:") != std::string::npos);
  CHECK(r.output.find("1000 goroutines [chan receive] (goroutines 2, 3, 4 and 997 more):") !=
        std::string::npos);
  CHECK(r.output.find("wait_for_work") != std::string::npos);
  CHECK(r.output.find("nugo::Chan<int>::recv() const") != std::string::npos);
  CHECK(r.output.find("child.cpp:") != std::string::npos);
  // One entry per place, not a line per goroutine; no runtime internals.
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') < 40);
  CHECK(r.output.find("nugo::detail") == std::string::npos);
  // No frame of the runtime's own files (chan.cpp, proc.cpp, ... inlined into the program's
  // frames): every file a line names is the program's.
  for (size_t at = r.output.find(".cpp:"); at != std::string::npos; at = r.output.find(".cpp:", at + 1)) {
    size_t start = r.output.find_last_of(" /(", at) + 1;
    CHECK(r.output.substr(start, at + 4 - start) == "child.cpp");
  }
}

// What a program built without -g gets (a user's Release build, with a Release or a -g
// runtime: nugo_test_child_nodebug has the debug information of both stripped): the names the
// symbol table gives, the program's callable named through the runtime's entry it was inlined
// into, the runtime's own functions left out as in a -g build, and the hint.
TEST_CASE("without debug information, fatal reports name the program's functions from the "
          "symbol table and say how to get lines", "[fatal]") {
  auto misuse = run_child_process("NUGO_PROCS=1", NUGO_TEST_CHILD_NODEBUG " syscall-misuse yield");
  CHECK(misuse.exit_code == 2);
  CHECK(misuse.output.find("fatal error: goroutine 1: nugo::yield inside a nugo::syscall body") !=
        std::string::npos);
  CHECK(misuse.output.find("goroutine 1 [running]:\n") != std::string::npos);
  CHECK(misuse.output.find("misuse_in_syscall(") != std::string::npos);
  CHECK(misuse.output.find("no line information: build with -g") != std::string::npos);
  CHECK(misuse.output.find("child.cpp") == std::string::npos);  // no lines: none invented
  CHECK(misuse.output.find("nugo::detail") == std::string::npos);
  // Calls whose runtime side is a template or has template-typed parameters: no runtime frame,
  // and no type is taken for a function (a frame line that starts with a type's name). A
  // public template such as nugo::after<long, ...> may show, as in a -g build, when the
  // compiler did not inline it (ASan builds).
  for (const char* call : {"after", "sleep", "select", "send"}) {
    INFO(call);
    auto r = run_child_process("NUGO_PROCS=1", NUGO_TEST_CHILD_NODEBUG " syscall-misuse " +
                                                   std::string(call));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("misuse_in_syscall(") != std::string::npos);
    CHECK(r.output.find("nugo::detail") == std::string::npos);
    CHECK(r.output.find("\nstd::") == std::string::npos);
  }

  auto dead = run_child_process("NUGO_PROCS=2", NUGO_TEST_CHILD_NODEBUG " deadlock-many");
  CHECK(dead.exit_code == 2);
  CHECK(dead.output.find("fatal error: all goroutines are asleep - deadlock!") != std::string::npos);
  CHECK(dead.output.find("1000 goroutines [chan receive] (goroutines 2, 3, 4 and 997 more):") !=
        std::string::npos);
  CHECK(dead.output.find("wait_for_work(nugo::Chan<int> const&)") != std::string::npos);
  CHECK(dead.output.find("(no line information: build with -g)") != std::string::npos);
  CHECK(dead.output.find("nugo::detail") == std::string::npos);
  CHECK(dead.output.find("nugo::WaitGroup::") == std::string::npos);  // the runtime's own
  CHECK(std::count(dead.output.begin(), dead.output.end(), '\n') < 40);
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

// One P per PU, but never more than Config::kMaxProcs, as Go caps GOMAXPROCS.
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

// [asyncsignal]: not under TSan, which holds the signal until the next interceptor, and every
// thread here sleeps in a futex the runtime calls through syscall(2) (tests/CMakeLists.txt).
TEST_CASE("SIGQUIT prints every goroutine and where it waits, then exits 2, as Go does",
          "[fatal][asyncsignal]") {
  auto r = run_child("NUGO_PROCS=2", "sigquit");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("SIGQUIT: quit") != std::string::npos);
  CHECK(r.output.find("G1: status=4(chan receive)") != std::string::npos);
  CHECK(r.output.find("status=4(chan send)") != std::string::npos);
  CHECK(r.output.find("status=4(sleep)") != std::string::npos);
  CHECK(r.output.find("P1: status=") != std::string::npos);
  CHECK(r.output.find("not reached") == std::string::npos);
}

// ---- misuse: Go panics or throws, and so does nugo ----

TEST_CASE("channel misuse panics with Go's message, exit status 2", "[fatal]") {
  struct Case { const char* mode; const char* message; };
  for (Case c : {Case{"send-closed", "panic: send on closed channel"},
                 Case{"close-closed", "panic: close of closed channel"},
                 Case{"close-nil", "panic: close of nil channel"}}) {
    INFO(c.mode);
    auto r = run_child("", c.mode);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.message) != std::string::npos);
    CHECK(r.output.find("goroutine 1 [running]") != std::string::npos);
  }
}

TEST_CASE("unlocking an unlocked Mutex or RWMutex is a fatal error, exit status 2", "[fatal]") {
  auto r = run_child("", "unlock-unlocked");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: sync: unlock of unlocked mutex") != std::string::npos);
  r = run_child("", "runlock-unlocked");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: sync: RUnlock of unlocked RWMutex") != std::string::npos);
}

// ---- the machine's limits ----

TEST_CASE("no thread for a blocking syscall is a fatal error naming the limit", "[fatal]") {
  // RLIMIT_NPROC lowered to the threads running, then 64 goroutines block in syscalls: the
  // hand-off needs Ms the kernel refuses.
  auto r = run_child("NUGO_PROCS=2", "thread-storm");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: newm: cannot create an OS thread") != std::string::npos);
  CHECK(r.output.find("RLIMIT_NPROC") != std::string::npos);
  CHECK(r.output.find("completed") == std::string::npos);
}

// [manygoroutines]: under TSan its own allocator runs out first (a fiber costs it 768k).
TEST_CASE("running out of address space for stacks is a fatal error naming NUGO_STACK",
          "[fatal][manygoroutines]") {
  // RLIMIT_AS a gigabyte above what the process has, then a million blocked goroutines.
  auto r = run_child("NUGO_PROCS=2", "stack-exhaustion");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fatal error: cannot reserve") != std::string::npos);
  CHECK(r.output.find("lower NUGO_STACK") != std::string::npos);
}

TEST_CASE("running out of descriptors fails the call with EMFILE and the poller recovers", "[fatal]") {
  auto r = run_child("NUGO_PROCS=2", "fd-exhaustion");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Too many open files") != std::string::npos);
  CHECK(r.output.find("after closing: round trip ok") != std::string::npos);
}

// ---- fork ----

TEST_CASE("fork from a goroutine, then exec, works", "[fatal]") {
  auto r = run_child("NUGO_PROCS=2", "fork-exec");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("child exited with 7") != std::string::npos);
}

TEST_CASE("a forked child that goes on scheduling goroutines stops with a message", "[fatal]") {
  // The child has only the forking thread: its nugo::go, and its goroutine's next switch,
  // are fatal errors (exit 2, which the parent prints) instead of a hang.
  for (const char* mode : {"fork-go", "fork-block"}) {
    INFO(mode);
    auto r = run_child("NUGO_PROCS=2", mode);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("in a child of fork()") != std::string::npos);
    CHECK(r.output.find("may only call exec or _exit") != std::string::npos);
    CHECK(r.output.find("child exited with 2") != std::string::npos);
  }
}
