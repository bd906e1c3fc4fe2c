// What the scheduler hands observing (obs/views.hpp): views of its state, taken here under
// its own locks; the capture of parked goroutines' stacks for the deadlock report; and the
// public calls that read the scheduler (nugo::stats, nugo::trace), which pass obs what it
// formats.
#include "views.hpp"

#include <unordered_map>

#include "deadlock.hpp"
#include "g.hpp"
#include "m.hpp"
#include "plan.hpp"
#include "proc.hpp"
#include "timer.hpp"
#include "trace.hpp"
#include "traceback.hpp"
#include "nugo/stats.hpp"
#include "nugo/syscall.hpp"
#include "nugo/trace.hpp"

namespace nugo::detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;

// Go's numbering: _Gidle 0, _Grunnable 1, _Grunning 2, _Gsyscall 3, _Gwaiting 4, _Gdead 6.
int go_status(GStatus s) {
  switch (s) {
    case GStatus::idle: return 0;
    case GStatus::runnable: return 1;
    case GStatus::running: return 2;
    case GStatus::syscall: return 3;
    case GStatus::waiting: return 4;
    case GStatus::dead: return 6;
  }
  return -1;
}

// Go's _Pidle 0, _Prunning 1, _Psyscall 2.
int go_status(PStatus s) { return s == PStatus::idle ? 0 : s == PStatus::running ? 1 : 2; }

}  // namespace

RunView run_view(const Sched& s) {
  RunView v;
  v.mode = s.plan.mode;
  v.bind = s.plan.bind;
  // The policy the plan runs, not the one asked for; flat mode has none.
  v.numa_policy = s.plan.mode == Mode::numa ? to_string(numa::setting(s.plan.policy)) : "";
  v.procs = s.plan.gomaxprocs;
  v.seed = s.cfg.seed;
  v.topology_source = s.topology.source;
  v.emulated = s.topology.emulated;
  v.topology_nodes = static_cast<int>(s.topology.nodes.size());
  v.virtual_time = s.cfg.virtual_time.on;
  v.start_ns = s.start_ns;
  v.main_return_ns = s.main_return_ns.load(std::memory_order_acquire);
  if (v.virtual_time && v.main_return_ns != 0) v.clock_at_return = s.clock_at_return;
  v.now_ns = s.run_time_now();
  v.distances = s.plan.distances;
  for (const auto& pp : s.allp) v.ps.push_back({pp->id, s.topology.nodes[pp->node].os_index, &pp->stats});
  for (const auto& d : s.domains)
    v.domains.push_back({d->node >= 0 ? s.topology.nodes[d->node].os_index : -1, d->created_foreign.load(rlx)});
  return v;
}

namespace {

// Runs on top of a parked goroutine's stack (ontop_fcontext): the goroutine's switch appears
// to have called it, so the unwinder continues into the goroutine's own frames. It never
// returns there: it jumps back to the reporter, and the goroutine stays where it was parked.
struct ParkedCapture {
  Traceback* tb;
  G* gp;
  M* m;
};

[[noreturn]] transfer_t unwind_parked(transfer_t t) {
  auto* req = static_cast<ParkedCapture*>(t.data);
  sanitizer_finish_switch(req->gp->san);
  traceback_here(req->tb, 1);  // from the goroutine's switch (mcall) outwards
  sanitizer_start_switch(nullptr, req->m->g0san);  // this stack is left for good
  jump_fcontext(t.fctx, nullptr);
  __builtin_unreachable();
}

// A goroutine that is parked (waiting) and will never run again, captured from the scheduler
// side of M m (its g0, or any stack other than gp's). The process must end afterwards.
void traceback_parked(M* m, G* gp, Traceback* tb) {
  tb->n = 0;
  if (!gp->ctx) return;  // never ran: no frames yet
  // The unwinder runs below the goroutine's saved stack pointer: leave a stack that is
  // nearly full alone rather than fault in its guard page.
  constexpr std::ptrdiff_t kUnwindRoom = 16 * 1024;
  if (static_cast<char*>(gp->ctx) - gp->stack.lo < kUnwindRoom) return;
  ParkedCapture req{tb, gp, m};
  set_default_fp_control(gp->ctx);  // ontop_fcontext loads them (fiber.hpp)
  sanitizer_start_switch(&m->g0san, gp->san);
  boost::context::detail::ontop_fcontext(gp->ctx, &req, unwind_parked);
  sanitizer_finish_switch(m->g0san);
  gp->ctx = nullptr;  // the saved context was consumed; the goroutine cannot be resumed
}

}  // namespace

SchedCounts inspect_counts() {
  SchedCounts out;
  out.uptime_ms = (nanotime() - sched->start_ns) / 1'000'000;
  out.gomaxprocs = sched->plan.gomaxprocs;
  // Each domain's counts read once under its lock (nmspinning moves without it: read once,
  // the node groups still add up to the totals), the rings' lengths too.
  out.domains.reserve(sched->domains.size());
  out.rings.reserve(sched->allp.size());
  lock_all_domains();
  for (const auto& d : sched->domains) {
    d->lock.assert_held();
    out.domains.push_back({d->os_node, d->npidle.load(rlx), d->nmspinning.load(rlx), d->nmidle,
                           d->nmidlelocked, d->runqsize.load(rlx) + d->npinned.load(rlx)});
  }
  for (const auto& pp : sched->allp) out.rings.push_back(runqlen(pp.get()));
  out.sysmonwait = sched->sysmonwait.load(rlx);
  unlock_all_domains();
  out.threads = sched->mcount.load(rlx);
  return out;
}

SchedDetail inspect_detail() {
  SchedDetail out;
  const auto& nodes = sched->topology.nodes;
  for (const auto& owned : sched->allp) {
    P* pp = owned.get();
    M* m = std::atomic_ref<M*>(pp->m).load(rlx);
    pp->timerslock.lock();
    std::size_t timers = pp->timers.size();
    pp->timerslock.unlock();
    out.ps.push_back({pp->id, go_status(pp->status.load(rlx)), pp->schedtick.load(rlx),
                      pp->syscalltick.load(rlx), m ? m->id : -1, runqlen(pp),
                      std::atomic_ref<int>(pp->ngfree).load(rlx), timers, nodes[pp->node].os_index});
  }
  // The lists are copied under their locks and walked without them (Ms and G chunks are never
  // freed while the runtime runs, and a chunk is listed only once its Gs are constructed):
  // copying thousands of goroutines must not hold up goroutine creation or thread start.
  sched->mlock.lock();
  std::vector<M*> all_ms = sched->allm;
  sched->mlock.unlock();
  sched->glock.lock();
  std::vector<G*> chunks = sched->gchunks;
  sched->glock.unlock();
  std::unordered_map<const G*, int> m_of;  // which M runs each running G
  for (M* m : all_ms) {
    P* p = std::atomic_ref<P*>(m->p).load(rlx);
    G* curg = std::atomic_ref<G*>(m->curg).load(rlx);
    G* lockedg = std::atomic_ref<G*>(m->lockedg).load(rlx);
    if (curg) m_of[curg] = m->id;
    out.ms.push_back({m->id, p ? p->id : -1, curg ? curg->goid : -1, lockedg ? lockedg->goid : -1,
                      std::atomic_ref<bool>(m->spinning).load(rlx)});
  }
  for_each_g_in(chunks, [&](G* gp) {  // a copy: glock is not held
    GStatus st = gp->status.load(rlx);
    if (st == GStatus::idle || st == GStatus::dead) return;
    auto it = m_of.find(gp);
    M* locked_m = std::atomic_ref<M*>(gp->lockedm).load(rlx);
    out.gs.push_back({gp->goid, go_status(st), st == GStatus::waiting ? to_string(gp->waitreason) : "",
                      it == m_of.end() ? -1 : it->second, locked_m ? locked_m->id : -1,
                      nodes[gp->home].os_index});
  });
  return out;
}

TraceSetup inspect_trace_setup() {
  const Sched& s = *sched;
  TraceSetup out;
  for (const auto& pp : s.allp) out.p_node.push_back(s.topology.nodes[pp->node].os_index);
  for (const auto& n : s.topology.nodes) out.node_os.push_back(n.os_index);
  out.mode = s.plan.mode == Mode::numa ? "numa" : "flat";
  out.topology = s.cfg.topology.empty() ? "this machine" : s.cfg.topology;
  out.emulated = s.topology.emulated;
  out.cpus = s.topology.real_cpus;
  for (unsigned r = 0; r <= static_cast<unsigned>(WaitReason::io_wait); ++r)
    out.wait_reasons.emplace_back(to_string(static_cast<WaitReason>(r)));
  return out;
}

void for_each_trace_slot(void (*fn)(TraceSlot& slot, void* arg), void* arg) {
  NoPreempt np;  // a runtime lock, maybe taken on a goroutine's stack (threadlocks.hpp)
  sched->mlock.lock();
  for (M* m : sched->allm) fn(m->trace, arg);
  sched->mlock.unlock();
}

void print_goroutine_traceback(std::FILE* out) noexcept {
  // Not in a child of fork(): it may not start a thread (the symbolizer runs on one), and a
  // lock of the allocator may be held by a thread that did not survive the fork.
  G* gp = getg();
  if (!gp || !gp->stack || forked_child) return;
  print_current_traceback(out, CurrentGoroutine{gp->goid, gp->stack.lo, gp->stack.hi});
}

void capture_waiting_goroutines(M* m, WaitingReport& report) {
  for_each_g_in(sched->gchunks, [&](G* gp) {  // glock held (checkdead)
    if (gp->status.load() != GStatus::waiting) return;
    Traceback tb;
    traceback_parked(m, gp, &tb);
    report.add(gp->goid, to_string(gp->waitreason), tb);
  });
}

}  // namespace nugo::detail

namespace nugo {

Stats stats() {
  using namespace detail;
  ForeignCall runtime(ForeignCall::Purpose::read);
  if (runtime.running()) return snapshot(run_view(*sched));  // the instance stays until it returns
  return final_stats();
}

std::string stats_json() { return to_json(stats()); }

namespace trace {
namespace {

// The calls below come from goroutines or from threads outside nugo: the instance must not go
// away under them (ForeignCall, read only), and a goroutine should not hold its P through the
// file's writing: the tracer's work runs as a blocking system call, so the goroutine's P goes
// on without it while files are opened or written (nugo::blocking_syscall carries an
// exception out).
class InRuntime {
 public:
  InRuntime() : call_(detail::ForeignCall::Purpose::read) {
    if (!call_.running())
      throw std::logic_error("nugo::trace: the runtime is not running (call within nugo::run)");
  }

 private:
  detail::ForeignCall call_;
};

}  // namespace

void start(const std::string& path, std::size_t max_bytes) {
  InRuntime in;
  const detail::TraceSetup setup = detail::inspect_trace_setup();
  blocking_syscall([&] {
    detail::trace_start(path, max_bytes, setup);
    return true;
  });
}

bool stop() {
  InRuntime in;
  return blocking_syscall([] { return detail::trace_stop(true, detail::for_each_trace_slot); });
}

bool discard() {
  InRuntime in;
  return blocking_syscall([] { return detail::trace_stop(false, detail::for_each_trace_slot); });
}

bool active() { return detail::trace_active(); }

}  // namespace trace
}  // namespace nugo
