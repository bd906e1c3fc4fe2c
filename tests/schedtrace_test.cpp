// schedtrace and scheddetail (NUGO_DEBUG=schedtrace=MS,scheddetail=1), Go's format: the lines
// parse, and their numbers agree with the runtime's state at a quiescent point (main asleep,
// one goroutine blocked: every P idle, nothing queued, nobody spinning).
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

const std::string kTwoNodes = "NUGO_TOPOLOGY=synthetic:pack:2\\ numa:1\\ core:2\\ pu:1 ";

}  // namespace

TEST_CASE("schedtrace prints Go's SCHED line, and it agrees with a quiescent runtime", "[schedtrace]") {
  ChildResult r = run_child_process("NUGO_PROCS=4 NUGO_MODE=flat NUGO_DEBUG=schedtrace=20", NUGO_TEST_CHILD " trace-sleep");
  REQUIRE(r.exit_code == 0);
  const std::regex line(R"(SCHED (\d+)ms: gomaxprocs=4 idleprocs=(\d+) threads=(\d+) spinningthreads=(\d+) idlethreads=(\d+) runqueue=(\d+) \[(\d+) (\d+) (\d+) (\d+)\])");
  int parsed = 0, quiet = 0;
  long last_ms = -1;
  for (const std::string& l : lines_of(r.output)) {
    if (l.rfind("SCHED", 0) != 0) continue;
    std::smatch m;
    INFO(l);
    REQUIRE(std::regex_match(l, m, line));
    ++parsed;
    long ms = std::stol(m[1]);
    CHECK(ms > last_ms);  // one line per interval, in order
    last_ms = ms;
    int idle = std::stoi(m[2]), threads = std::stoi(m[3]), idlethreads = std::stoi(m[5]);
    CHECK(idle <= 4);
    CHECK(idlethreads <= threads);
    if (idle == 4 && m[4] == "0" && m[6] == "0" && m[7] == "0" && m[8] == "0" && m[9] == "0" && m[10] == "0") ++quiet;
  }
  INFO(r.output);
  CHECK(parsed >= 3);  // 150 ms at 20 ms: generous, as lines come from a sleeping sysmon too
  CHECK(quiet >= 1);   // while main sleeps: every P idle, nothing queued, nobody spinning
}

TEST_CASE("schedtrace in NUMA mode adds a group per node", "[schedtrace]") {
  ChildResult r = run_child_process(kTwoNodes + "NUGO_PROCS=2 NUGO_MODE=numa NUGO_DEBUG=schedtrace=20",
                                    NUGO_TEST_CHILD " trace-sleep");
  REQUIRE(r.exit_code == 0);
  const std::regex line(R"(SCHED \d+ms: gomaxprocs=2 idleprocs=(\d) .* runqueue=\d+ \[\d+ \d+\] node0=\[idleprocs=(\d) spinningthreads=\d+ idlethreads=\d+ runqueue=\d+\] node1=\[idleprocs=(\d) spinningthreads=\d+ idlethreads=\d+ runqueue=\d+\])");
  int parsed = 0;
  for (const std::string& l : lines_of(r.output)) {
    if (l.rfind("SCHED", 0) != 0) continue;
    std::smatch m;
    INFO(l);
    REQUIRE(std::regex_match(l, m, line));
    ++parsed;
    // Counted under every domain's lock: the nodes' idle Ps add up to the total.
    CHECK(std::stoi(m[2]) + std::stoi(m[3]) == std::stoi(m[1]));
  }
  CHECK(parsed >= 3);
}

TEST_CASE("scheddetail adds a line per P, per M and per live G, and bad settings are named", "[schedtrace]") {
  // One node, so that every home and P node is 0 whatever the host is.
  ChildResult r = run_child_process("NUGO_TOPOLOGY=synthetic:pack:1\\ core:2\\ pu:1 NUGO_PROCS=2 NUGO_MODE=flat "
                                    "NUGO_DEBUG=schedtrace=30,scheddetail=1",
                                    NUGO_TEST_CHILD " trace-sleep");
  REQUIRE(r.exit_code == 0);
  INFO(r.output);
  CHECK(std::regex_search(r.output, std::regex(R"(SCHED \d+ms: gomaxprocs=2 idleprocs=\d+ threads=\d+ spinningthreads=\d+ idlethreads=\d+ runqueue=\d+ gcwaiting=0 nmidlelocked=\d+ stopwait=0 sysmonwait=\d)")));
  CHECK(std::regex_search(r.output, std::regex(R"(\n  P0: status=\d schedtick=\d+ syscalltick=\d+ m=-?\d+ runqsize=\d+ gfreecnt=\d+ timerslen=\d+ node=0\n  P1: )")));
  CHECK(std::regex_search(r.output, std::regex(R"(\n  M\d+: p=-?\d+ curg=-?\d+ spinning=(true|false) lockedg=-?\d+\n)")));
  // The main goroutine asleep, the other blocked on its channel.
  CHECK(std::regex_search(r.output, std::regex(R"(\n  G1: status=4\(sleep\) m=-1 lockedm=-1 home=0\n)")));
  CHECK(std::regex_search(r.output, std::regex(R"(\n  G\d+: status=4\(chan receive\) m=-1 lockedm=-1 home=0\n)")));

  for (const char* bad : {"schedtrace=abc", "schedtrace=-5", "schedtrace=99999999", "scheddetail=2"}) {
    ChildResult b = run_child_process(std::string("NUGO_DEBUG=") + bad, NUGO_TEST_CHILD " run");
    CAPTURE(bad, b.output);
    CHECK(b.exit_code == 2);
    CHECK(b.output.find(std::string("NUGO_DEBUG=\"") + bad + "\"") != std::string::npos);
  }
}
