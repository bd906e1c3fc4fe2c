// schedtrace: Go's GODEBUG=schedtrace=MS and scheddetail=1 (proc.go: schedtrace), printed by
// sysmon every MS milliseconds on stderr, in Go's format, so that tools that read Go's lines
// read these:
//
//   SCHED 1004ms: gomaxprocs=4 idleprocs=4 threads=11 spinningthreads=0 idlethreads=4 runqueue=0 [0 0 0 0]
//
// runqueue is every domain's global queue (and go_on's pinned queues); the bracket lists each
// P's local ring. In NUMA mode a group per domain follows on the same line:
//   node0=[idleprocs=2 spinningthreads=0 idlethreads=2 runqueue=0]
// With scheddetail the bracket gives way to Go's detail fields and a line per P (with its
// node), per M and per live G (with its home node, status and wait reason):
//   P0: status=1 schedtick=5 syscalltick=0 m=0 runqsize=0 gfreecnt=3 timerslen=0 node=0
//   M1: p=-1 curg=-1 spinning=false lockedg=-1
//   G1: status=4(sleep) m=-1 lockedm=-1 home=0
// The scheduler takes the counts under every domain's lock (as Go takes sched.lock) and the
// P, M and G lines without it (as Go's): a line is a snapshot of moving state, for people
// (views.hpp).
// Intervals that sysmon missed (it was late) are skipped, not printed in a burst.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "fdwrite.hpp"
#include "views.hpp"
#include "schedtrace.hpp"

namespace nugo::detail {
namespace {

void add(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string& out, const char* fmt, ...) {
  char buf[512];  // the longest line is under 200 bytes
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out.append(buf, std::min<std::size_t>(n, sizeof buf - 1));
}

// On stderr; a failure is dropped, as a lost trace line would be.
void write_stderr(const std::string& s) {
  int err = 0;
  write_all(2, s.data(), s.size(), &err);
}

}  // namespace

void schedtrace(const SchedCounts& c, const SchedDetail* detail) {
  int idle = 0, spinning = 0, idlethreads = 0, runq = 0, locked = 0;
  for (const DomainCounts& d : c.domains) {
    idle += d.idle_ps;
    spinning += d.spinning;
    idlethreads += d.idle_threads;
    locked += d.idle_locked;
    runq += d.runq;
  }
  std::string out;
  add(out, "SCHED %lldms: gomaxprocs=%d idleprocs=%d threads=%d spinningthreads=%d idlethreads=%d runqueue=%d",
      static_cast<long long>(c.uptime_ms), c.gomaxprocs, idle, c.threads, spinning, idlethreads, runq);
  if (detail) {
    add(out, " gcwaiting=0 nmidlelocked=%d stopwait=0 sysmonwait=%d", locked, c.sysmonwait ? 1 : 0);
  } else {
    out += " [";
    for (std::size_t i = 0; i < c.rings.size(); ++i) add(out, "%s%u", i ? " " : "", c.rings[i]);
    out += "]";
  }
  if (c.domains.size() > 1)
    for (const DomainCounts& d : c.domains)
      add(out, " node%d=[idleprocs=%d spinningthreads=%d idlethreads=%d runqueue=%d]", d.os_node, d.idle_ps,
          d.spinning, d.idle_threads, d.runq);
  out += '\n';
  if (!detail) return write_stderr(out);

  const SchedDetail& d = *detail;
  for (const PDetail& p : d.ps)
    add(out, "  P%d: status=%d schedtick=%u syscalltick=%u m=%d runqsize=%u gfreecnt=%d timerslen=%zu node=%d\n",
        p.id, p.status, p.schedtick, p.syscalltick, p.m, p.runq, p.gfree, p.timers, p.os_node);
  for (const MDetail& m : d.ms)
    add(out, "  M%d: p=%d curg=%lld spinning=%s lockedg=%lld\n", m.id, m.p, static_cast<long long>(m.curg),
        m.spinning ? "true" : "false", static_cast<long long>(m.lockedg));
  for (const GDetail& g : d.gs)
    add(out, "  G%lld: status=%d(%s) m=%d lockedm=%d home=%d\n", static_cast<long long>(g.goid), g.status,
        g.wait_reason, g.m, g.lockedm, g.home_os_node);
  write_stderr(out);
}

}  // namespace nugo::detail
