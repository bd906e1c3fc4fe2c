// A program the tests run as a child process, for behaviour that ends the process: bad
// configuration, a panicking goroutine, a stack overflow, misuse of channels and locks, the
// limits of the machine running out, fork().
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nugo/net.hpp>
#include <nugo/nugo.hpp>
#include <string>
#include <vector>
#include <nugo/trace.hpp>
#include <stdexcept>

namespace {

// Recurses until the stack runs out, on purpose.
#pragma GCC diagnostic ignored "-Winfinite-recursion"
int recurse(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0];
}

int fib(int n) {
  if (n < 2) return n;
  int a = 0;
  nugo::WaitGroup wg;
  wg.add(1);
  nugo::go([&] {
    a = fib(n - 1);
    wg.done();
  });
  int b = fib(n - 2);
  wg.wait();
  return a + b;
}

// The number of threads of this process, from /proc.
long thread_count() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::strtol(line.c_str() + 8, nullptr, 10);
  return -1;
}

// The process's address space now, in bytes (VmSize).
long long address_space() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::strtoll(line.c_str() + 7, nullptr, 10) * 1024;
  return -1;
}

// Root ignores RLIMIT_NPROC: become nobody, whose processes the limit then counts.
bool drop_root() {
  if (geteuid() != 0) return true;
  if (setgid(65534) == 0 && setuid(65534) == 0) return true;
  std::perror("setuid");
  return false;
}

// Goroutines block in system calls until the runtime needs more threads than the limit
// allows: the M that cannot be created must be a fatal error that says so.
int thread_storm() {
  if (!drop_root()) return 3;
  return nugo::run([] {
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(thread_count() + 2);
    if (setrlimit(RLIMIT_NPROC, &lim) != 0) {
      std::perror("setrlimit");
      return 3;
    }
    nugo::WaitGroup wg;
    for (int i = 0; i < 64; ++i) {
      wg.add(1);
      nugo::go([&] {
        nugo::syscall([] { usleep(200'000); });
        wg.done();
      });
    }
    wg.wait();
    std::puts("64 blocking syscalls completed under the thread limit?");
    return 0;
  });
}

// A million goroutines blocked on a channel, with the address space capped: the stacks run out.
int stack_exhaustion() {
  return nugo::run([] {
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(address_space() + (1LL << 30));
    if (setrlimit(RLIMIT_AS, &lim) != 0) {
      std::perror("setrlimit");
      return 3;
    }
    nugo::Chan<int> never;
    for (int i = 0; i < 1'000'000; ++i) nugo::go([never]() mutable { never.recv(); });
    std::puts("a million stacks fit in a gigabyte?");
    return 0;
  });
}

// Sockets until the descriptors run out: the call that cannot get one fails with EMFILE, and
// once some are closed the poller works again.
int fd_exhaustion() {
  return nugo::run([] {
    rlimit lim{64, 64};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
      std::perror("setrlimit");
      return 3;
    }
    auto ln = nugo::net::listen("127.0.0.1", 0);
    if (!ln) return 3;
    std::vector<nugo::net::Conn> conns;
    std::error_code error;
    for (int i = 0; i < 200 && !error; ++i) {
      auto c = nugo::net::dial("127.0.0.1", ln->port());
      if (!c) {
        error = c.error();
        break;
      }
      conns.push_back(std::move(*c));
    }
    // Descriptors back first: UBSan's vptr check of the error's category needs a pipe.
    std::size_t dialled = conns.size();
    conns.clear();
    std::printf("dial %zu: %s\n", dialled, error.message().c_str());
    if (error != std::errc::too_many_files_open) return 1;
    // The poller still serves descriptors: a round trip over a fresh connection (to a fresh
    // listener: the first one's backlog holds the connections just closed).
    ln = nugo::net::listen("127.0.0.1", 0);
    if (!ln) return 3;
    nugo::Chan<int> accepted(1);
    nugo::go([&ln, accepted]() mutable {
      auto s = ln->accept();
      char b = 0;
      if (s && s->read_full(&b, 1).n == 1) (void)s->write_all(&b, 1);
      accepted.send(s ? 1 : 0);
    });
    auto c = nugo::net::dial("127.0.0.1", ln->port());
    char b = 'x', back = 0;
    bool ok = c && c->write_all(&b, 1) && c->read_full(&back, 1).n == 1 && back == 'x';
    ok = *accepted.recv() == 1 && ok;
    std::printf("after closing: round trip %s\n", ok ? "ok" : "failed");
    return ok ? 0 : 1;
  });
}

// fork() from a goroutine: a child that execs works; a child that goes on running goroutines
// is stopped with a message (`then`: "exec", "go" or "block").
int fork_child(const char* then) {
  return nugo::run([then] {
    nugo::Chan<int> status(1);
    nugo::go([then, status]() mutable {
      pid_t pid = fork();
      if (pid == 0) {
        if (std::strcmp(then, "exec") == 0) {
          execl("/bin/sh", "sh", "-c", "exit 7", static_cast<char*>(nullptr));
          _exit(127);
        }
        if (std::strcmp(then, "go") == 0) nugo::go([] {});
        nugo::Chan<int> c(1);
        c.send(1);
        nugo::yield();  // the child's goroutine gives up the thread: nothing can run next
        _exit(0);
      }
      int st = 0;
      nugo::syscall([&] { return waitpid(pid, &st, 0); });
      status.send(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    });
    int st = *status.recv();
    std::printf("child exited with %d\n", st);
    return 0;
  });
}

// A little of everything the tracer records (trace_test.cpp, tests/CMakeLists.txt): fork-join
// goroutines (creates, runs, steals, unblocks), a channel ping-pong, sleeps (timers), system
// calls that sysmon takes the P from and one that hands it off at once, and a goroutine that
// spins until the preemption signal stops it.
void trace_workload() {
  nugo::WaitGroup wg;
  wg.add(4);
  nugo::go([&] {
    if (fib(14) != 377) std::abort();
    wg.done();
  });
  nugo::go([&] {
    nugo::Chan<int> ping, pong;
    nugo::go([=]() mutable {
      for (int i = 0; i < 200; ++i) pong.send(*ping.recv() + 1);
    });
    for (int i = 0; i < 200; ++i) {
      ping.send(i);
      if (*pong.recv() != i + 1) std::abort();
    }
    wg.done();
  });
  nugo::go([&] {
    for (int i = 0; i < 3; ++i) {
      nugo::sleep_for(std::chrono::milliseconds(2));
      nugo::syscall([] { usleep(30'000); });  // outlasts a sysmon tick: the P is retaken
    }
    nugo::blocking_syscall([] { usleep(1000); });
    wg.done();
  });
  nugo::go([&] {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
    std::atomic<long> spins{0};
    while (std::chrono::steady_clock::now() < until) spins.fetch_add(1, std::memory_order_relaxed);
    wg.done();
  });
  wg.wait();
}

// A worker that blocks forever on a channel nobody sends to, in a function of its own so
// that the deadlock report can name it.
[[gnu::noinline]] void wait_for_work(const nugo::Chan<int>& work) { (void)work.recv(); }

// Each call a nugo::syscall body must not make (nugo/syscall.hpp), by the name the test
// passes; and the calls it may make ("allowed"), which must all run.
int misuse_in_syscall(const std::string& call) {
  return nugo::run([&] {
    nugo::Chan<int> buffered(4), unbuffered;
    nugo::Mutex mu;
    nugo::WaitGroup wg;
    wg.add(1);
    if (call == "unlock") mu.lock();
    nugo::syscall([&] {
      if (call == "yield") nugo::yield();
      if (call == "send") buffered.send(1);
      if (call == "try_send") (void)unbuffered.try_send(1);
      if (call == "recv") (void)unbuffered.recv();
      if (call == "try_recv") (void)buffered.try_recv();
      if (call == "close") buffered.close();
      if (call == "select") nugo::select(nugo::on_recv(buffered), nugo::on_default());
      if (call == "go") nugo::go([] {});
      if (call == "after") (void)nugo::after(std::chrono::seconds(1));
      if (call == "sleep") nugo::sleep_for(std::chrono::milliseconds(1));
      if (call == "lock") mu.lock();
      if (call == "unlock") mu.unlock();
      if (call == "done") wg.done();
      if (call == "wait") wg.wait();
      if (call == "allowed") {
        // Nested calls are plain calls; queries read without the scheduler.
        char byte = 0;
        int fds[2];
        if (pipe(fds) != 0 || nugo::sys::write(fds[1], "x", 1) != 1 ||
            nugo::syscall([&] { return ::read(fds[0], &byte, 1); }) != 1)
          std::exit(3);
        nugo::preempt_point();
        nugo::lock_os_thread();
        nugo::unlock_os_thread();
        std::printf("allowed: goroutine %lld, %d Ps, %d goroutines, len %zu, byte %c, node %d\n",
                    static_cast<long long>(nugo::this_g::id()), nugo::gomaxprocs(),
                    nugo::num_goroutines(), buffered.len(), byte, nugo::this_g::home_node());
      }
    });
    wg.done();
    std::puts("returned");
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "run") == 0) {
    return nugo::run([] {
      std::puts("ran");
      return 0;
    });
  }
  if (std::strcmp(mode, "trace-workload") == 0) {
    return nugo::run([] {
      trace_workload();
      return 0;
    });
  }
  if (std::strcmp(mode, "trace-sleep") == 0) {
    // Quiet for 150 ms: main asleep, one goroutine blocked on a channel (schedtrace_test).
    return nugo::run([] {
      nugo::Chan<int> c;
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([c, &wg]() mutable {
        c.recv();
        wg.done();
      });
      nugo::sleep_for(std::chrono::milliseconds(150));
      c.close();
      wg.wait();
      return 0;
    });
  }
  if (std::strcmp(mode, "panic") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([] { throw std::runtime_error("boom from a goroutine"); });
      wg.wait();
    });
  }
  if (std::strcmp(mode, "overflow") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.add(1);
      nugo::go([&] {
        recurse(0);
        wg.done();
      });
      wg.wait();
    });
  }
  if (std::strcmp(mode, "negative-waitgroup") == 0) {
    return nugo::run([] {
      nugo::WaitGroup wg;
      wg.done();
    });
  }
  if (std::strcmp(mode, "deadlock") == 0) {
    return nugo::run([] {
      nugo::Mutex mu;
      mu.lock();
      nugo::go([&] { mu.lock(); });  // blocks on the mutex forever
      nugo::Chan<int> never;
      never.recv();  // and main on a channel nobody sends to
    });
  }
  if (std::strcmp(mode, "deadlock-many") == 0) {
    return nugo::run([] {
      nugo::Chan<int> work;
      for (int i = 0; i < 1000; ++i) nugo::go([=] { wait_for_work(work); });
      nugo::WaitGroup never;
      never.add(1);
      never.wait();
    });
  }
  if (std::strcmp(mode, "config-or-exit") == 0) {
    nugo::Config cfg = nugo::Config::from_env_or_exit();  // the documented pattern
    cfg.detect_deadlock = false;
    return nugo::run([] { std::puts("ran"); }, cfg);
  }
  if (std::strcmp(mode, "syscall-misuse") == 0 && argc > 2) return misuse_in_syscall(argv[2]);
  if (std::strcmp(mode, "timer-not-deadlock") == 0) {
    return nugo::run([] {
      // Everything is blocked, but a timer is pending: not a deadlock.
      nugo::Chan<int> later;
      nugo::go([=] {
        nugo::sleep_for(std::chrono::milliseconds(300));
        later.send(7);
      });
      std::printf("got %d\n", *later.recv());
      return 0;
    });
  }
  if (std::strcmp(mode, "send-closed") == 0) {
    return nugo::run([] {
      nugo::Chan<int> c(1);
      c.close();
      c.send(1);
    });
  }
  if (std::strcmp(mode, "close-closed") == 0) {
    return nugo::run([] {
      nugo::Chan<int> c;
      c.close();
      c.close();
    });
  }
  if (std::strcmp(mode, "close-nil") == 0) {
    return nugo::run([] { nugo::Chan<int>::nil().close(); });
  }
  if (std::strcmp(mode, "unlock-unlocked") == 0) {
    return nugo::run([] {
      nugo::Mutex mu;
      mu.unlock();
    });
  }
  if (std::strcmp(mode, "runlock-unlocked") == 0) {
    return nugo::run([] {
      nugo::RWMutex mu;
      mu.unlock_shared();
    });
  }
  if (std::strcmp(mode, "sigquit") == 0) {
    // A program that waits forever (but is no deadlock: a goroutine sleeps in a long timer)
    // is sent SIGQUIT, as `kill -QUIT` would: it must say where each goroutine waits.
    return nugo::run([] {
      nugo::Chan<int> never;
      nugo::go([] { nugo::sleep_for(std::chrono::hours(1)); });
      nugo::Chan<int> unread;
      nugo::go([unread]() mutable { unread.send(1); });
      nugo::go([] {
        nugo::sleep_for(std::chrono::milliseconds(100));
        kill(getpid(), SIGQUIT);
      });
      never.recv();
      std::puts("not reached");
      return 0;
    });
  }
  if (std::strcmp(mode, "thread-storm") == 0) return thread_storm();
  if (std::strcmp(mode, "stack-exhaustion") == 0) return stack_exhaustion();
  if (std::strcmp(mode, "fd-exhaustion") == 0) return fd_exhaustion();
  if (std::strcmp(mode, "fork-exec") == 0) return fork_child("exec");
  if (std::strcmp(mode, "fork-go") == 0) return fork_child("go");
  if (std::strcmp(mode, "fork-block") == 0) return fork_child("block");
  std::fprintf(stderr, "usage: nugo_test_child run|panic|overflow|negative-waitgroup|deadlock|"
                       "timer-not-deadlock|send-closed|close-closed|close-nil|unlock-unlocked|"
                       "runlock-unlocked|sigquit|thread-storm|stack-exhaustion|fd-exhaustion|fork-exec|"
                       "fork-go|fork-block\n");
  return 64;
}
