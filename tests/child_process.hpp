// Runs a test program as a child process and collects what it printed and how it ended. A
// child that hangs is killed after `timeout_s` seconds (exit_code -1, signal 9), so a hang
// fails the test that ran it instead of stalling the suite.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct ChildResult {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr together
};

// `env` is a list of NAME=value words, `args` the program and its arguments (shell words).
inline ChildResult run_child_process(const std::string& env, const std::string& args, int timeout_s = 60) {
  std::string cmd = "exec timeout -s KILL " + std::to_string(timeout_s) + " env " + env + " " + args + " 2>&1";
  ChildResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  // `timeout -s KILL` reports its child's death by SIGKILL as exit status 137.
  if (r.exit_code == 137) {
    r.exit_code = -1;
    r.signal = 9;
  }
  return r;
}
