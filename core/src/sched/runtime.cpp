// A runtime instance: created by run(), destroyed when its main goroutine returns.
//
// Start: build Ps (all idle) and one domain, start sysmon, queue the main goroutine globally
// and wakep(), which starts the first M exactly as it would start any other. Stop: when main
// returns, `stopping` is set, every M is woken, sysmon preempts whatever still runs, every M
// leaves its scheduling loop the next time it is on g0, and run() joins them, then sysmon.
// Goroutines still alive are abandoned as Go abandons them at exit: never resumed; their
// closures are destroyed and their stacks unmapped. Two things can still hold run() up: a
// goroutine inside nugo::syscall (its M returns when the call does) and, with
// asyncpreemptoff=1, a goroutine in a loop without scheduling points.
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "fatal.hpp"
#include "views.hpp"
#include "nodes.hpp"
#include "netpoll.hpp"
#include "plan.hpp"
#include "preempt.hpp"
#include "proc.hpp"
#include "sched.hpp"
#include "signals.hpp"
#include "trace.hpp"
#include "traceback.hpp"

namespace nugo::detail {
namespace {

std::mutex run_mutex;  // one runtime instance at a time per process

// The child of a fork() taken while an instance ran inherits the instance's memory but only
// the forking thread: see forked_child. Registered once, at the first run().
void note_fork_in_child() {
  if (!sched) return;
  forked_child = true;
  signals::reset_quit_in_child();
}

// Constant-initialized, so registration from other files' static initializers finds it ready.
struct StopHook {
  StopPhase when;
  void (*hook)();
};
StopHook stop_hooks[kMaxStopHooks] = {};
std::atomic<int> nstop_hooks{0};

void run_stop_hooks(StopPhase when) {
  for (int i = 0, n = nstop_hooks.load(std::memory_order_acquire); i < n; ++i)
    if (stop_hooks[i].when == when) stop_hooks[i].hook();
}

void announce_emulated(const topo::Topology& t) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "nugo: emulated topology %s (%zu NUMA nodes, %d PUs) folded onto %zu real "
                 "CPUs; memory is not bound to its nodes\n",
                 t.source.c_str(), t.nodes.size(), t.pu_count(), t.real_cpus.size());
  });
}

}  // namespace

Sched::Sched(const Config& c, topo::Topology t)
    : cfg(c), topology(std::move(t)), plan(numa::make_plan(this->topology, this->cfg)) {
  timeslice_ns = cfg.timeslice.count();
  start_ns = nanotime();
  netpoll_init();
  lastpoll.store(nanotime());
  for (int i = 0; i < plan.gomaxprocs; ++i) {
    allp.push_back(std::make_unique<P>());
    allp.back()->id = i;
  }
  // The domains and their Ps, as the plan says: flat mode is one domain with every P, NUMA
  // mode one per node that got a P.
  for (const numa::DomainPlan& dp : plan.domains) {
    auto d = std::make_unique<Domain>();
    d->id = static_cast<int>(domains.size());
    d->node = dp.node;
    d->os_node = dp.os_node;
    for (std::size_t k = 0; k < dp.ps.size(); ++k) {
      P* pp = allp[dp.ps[k]].get();
      pp->domain = d.get();
      pp->stack_pool = static_cast<std::int16_t>(d->id);
      pp->node = static_cast<std::int16_t>(topology.pus[dp.pus[k]].node);
      d->ps.push_back(pp);
    }
    for (int p : plan.victims[domains.size()]) d->victims.push_back(allp[p].get());
    d->steal_order.reset(static_cast<std::uint32_t>(d->victims.size()));
    d->ps_order.reset(static_cast<std::uint32_t>(d->ps.size()));
    d->stacks = std::make_unique<StackPool>(cfg.stack_size, d->id, dp.memory_node,
                                            static_cast<int>(plan.domains.size()));
    stack_size = d->stacks->stack_size();
    {
      LockGuard lock(d->lock);  // nobody else can see d yet; the lists' rule holds anyway
      for (auto it = d->ps.rbegin(); it != d->ps.rend(); ++it) pidleput(d.get(), *it);  // lowest first out
    }
    domains.push_back(std::move(d));
  }
  for (auto& pp : allp) {  // statistics: moved_remote and steals_remote by distance class
    pp->stats.moved_remote_by_distance = std::make_unique<PCounters::Counter[]>(plan.distances.size());
    pp->stats.steals_remote_by_distance = std::make_unique<PCounters::Counter[]>(plan.distances.size());
  }
  const auto domain_groups = [this](const std::vector<std::vector<int>>& tiers) {
    std::vector<std::vector<Domain*>> out;
    for (const std::vector<int>& tier : tiers) {
      std::vector<Domain*> group;
      for (int other : tier) group.push_back(domains[other].get());
      out.push_back(std::move(group));
    }
    return out;
  };
  for (std::size_t i = 0; i < domains.size(); ++i) {
    domains[i]->remote = domain_groups(plan.remote[i]);
    domains[i]->steal_groups = domain_groups(plan.steal_groups[i]);
  }
}

Sched::~Sched() {
  for (M* m : allm) delete m;
  for (auto& pp : allp) {  // timers that never fired give up what they hold
    for (TimerEntry e : pp->timers) {
      Timer* t = e.t;
      t->pp.store(nullptr);
      if (t->discard) t->discard(t->arg);
    }
    pp->timers.clear();
  }
  std::vector<G*> chunks = std::move(gchunks);
  for_each_g_in(chunks, [](G* gp) {  // every M is gone
    if (gp->invoke) gp->discard(gp);
    if (gp->ctx) {  // abandoned mid-run
      sanitizer_forget_frames(gp->ctx, gp->stack.hi);
      sanitizer_destroy_fiber(gp->san);
    }
    gp->~G();
  });
  for (const GSlab& s : gslabs) unmap_pages(s.mem, s.bytes);
}

// G descriptors of d's node: the G of a goroutine created there is written there first and
// most. (They are recycled through the P caches of wherever they die, like Go's; only new
// chunks are placed.)
G* Sched::new_gchunk(Domain* d) {
  if (d->gslab_next == d->gslab_end) {
    constexpr std::size_t bytes = std::size_t{kGSlabChunks} * kGChunk * sizeof(G);
    // Reserved, bound to the node, then committed (base/nodes.hpp, "Bound before touched").
    void* mem = reserve_pages(bytes);
    if (mem == MAP_FAILED) fatal("cannot allocate goroutine descriptors: %s", std::strerror(errno));
    if (d->os_node >= 0) {
      const NodeView& v = current_node_view();
      int err = 0;
      if (v.emulated)
        note_unbound(v);
      else if (!bind_or_unbound(mem, bytes, MPOL_BIND, mask_of({d->os_node}), v, &err))
        fatal("cannot bind goroutine descriptors to node %d: %s", d->os_node, std::strerror(err));
    }
    if (!commit_pages(mem, bytes)) fatal("cannot allocate goroutine descriptors: %s", std::strerror(errno));
    if (reinterpret_cast<std::uintptr_t>(mem) + bytes > std::uintptr_t{1} << Domain::Entry::kShift)
      fatal("goroutine descriptors at %p: above the 48-bit addresses run queues can tag", mem);
    gslabs.push_back({mem, bytes});
    d->gslab_next = static_cast<G*>(mem);
    d->gslab_end = d->gslab_next + std::size_t{kGSlabChunks} * kGChunk;
  }
  G* chunk = d->gslab_next;
  d->gslab_next += kGChunk;
  for (G* gp = chunk; gp != chunk + kGChunk; ++gp) ::new (static_cast<void*>(gp)) G;
  if (head(chunk) != static_cast<GHead*>(chunk))  // g.hpp: the layout library code relies on
    fatal("a G's GHead is not where link.hpp's head() looks for it: rebuild with the same compiler");
  gchunks.push_back(chunk);
  return chunk;
}

namespace {

[[noreturn]] void bad_config(const std::exception& e) {
  std::fprintf(stderr, "nugo: %s\n", e.what());
  std::exit(2);
}

topo::Topology load_topology(const Config& cfg, bool exit_on_bad_config) {
  try {
    cfg.validate();
    return topo::Topology::load(cfg.topology);
  } catch (const std::exception& e) {
    if (!exit_on_bad_config) throw;
    bad_config(e);
  }
}

// Config::stats_path, opened before anything runs, so that a path that cannot be written is
// reported as bad input rather than found out after the program's work is done.
std::FILE* open_stats_file(const Config& cfg, bool exit_on_bad_config) {
  if (cfg.stats_path.empty()) return nullptr;
  if (cfg.stats_path == "-") return stderr;
  std::FILE* f = std::fopen(cfg.stats_path.c_str(), "w");
  if (f) return f;
  ConfigError e("NUGO_STATS=\"" + cfg.stats_path + "\": cannot write the statistics there: " +
                std::strerror(errno));
  if (!exit_on_bad_config) throw e;
  bad_config(e);
}

}  // namespace

bool forked_child = false;

void forked_child_fatal(const char* what) {
  fatal("%s in a child of fork(): the runtime was running when the process forked, and only "
        "the forking thread survives in the child, so nothing can be scheduled there; a "
        "forked child may only call exec or _exit (as Go's syscall.ForkExec does)", what);
}

void run_main(const Config& cfg, void (*body)(void*), void* arg, bool exit_on_bad_config) {
  if (forked_child) forked_child_fatal("nugo::run");
  if (getm()) throw std::logic_error("nugo::run: called from inside the runtime");
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] {
    if (int e = pthread_atfork(nullptr, nullptr, note_fork_in_child))
      fatal("pthread_atfork failed (%s)", std::strerror(e));
    if (!fcontext_layout_ok())
      fatal("libboost_context lays out a fresh context otherwise than Boost %s's headers "
            "describe (a patched or mismatched library?): the switch in core/src/base/switch_amd64.S was "
            "written for Boost 1.74's frame",
            BOOST_LIB_VERSION);
  });
  std::unique_lock guard(run_mutex, std::try_to_lock);
  if (!guard.owns_lock()) throw std::logic_error("nugo::run: a runtime is already running");

  topo::Topology topology = load_topology(cfg, exit_on_bad_config);
  std::FILE* stats_file = open_stats_file(cfg, exit_on_bad_config);
  if (topology.emulated) announce_emulated(topology);
  signals::install_handlers();
  set_fatal_traceback(print_goroutine_traceback);  // from now on a fatal error says where
  // nugo::numa's allocations (and the stack pools' binding) see this run's nodes from now on.
  publish_topology(&topology, cfg.debug_numa);
  // Before the instance: its clocks start in virtual time.
  if (cfg.virtual_time.on) vtime::start(cfg.virtual_time, topology, preempt::vtime_pause_filter());
  try {
    sched = new Sched(cfg, std::move(topology));
  } catch (...) {
    vtime::stop();
    publish_topology(nullptr, false);
    if (stats_file && stats_file != stderr) std::fclose(stats_file);
    throw;
  }
  sched->stats_file = stats_file;
  publish_run_seed(cfg.seed);
  if (!cfg.trace_path.empty()) {
    // Before any goroutine exists, so that the trace has the whole run; a path that cannot
    // be written is bad input, as for the statistics.
    try {
      trace_start(cfg.trace_path, cfg.trace_max, inspect_trace_setup());
    } catch (const std::exception& e) {
      ConfigError bad("NUGO_TRACE=\"" + cfg.trace_path + "\": " + e.what());
      delete sched;
      sched = nullptr;
      vtime::stop();
      publish_topology(nullptr, false);
      if (stats_file && stats_file != stderr) std::fclose(stats_file);
      if (!exit_on_bad_config) throw bad;
      bad_config(bad);
    }
  }
  preempt::init(cfg);
  if (vtime::on()) sched->sysmon_vmember = vtime::prepare_member();
  try {
    sched->sysmon = std::thread(sysmon_main);
  } catch (const std::system_error& e) {
    fatal("nugo: cannot create sysmon's OS thread: %s (raise the limit on processes: ulimit -u, "
          "RLIMIT_NPROC)", e.what());
  }
  signals::install_quit_handler();  // sysmon runs: a SIGQUIT from now on gets its dump
  foreign_sched.store(sched, std::memory_order_seq_cst);

  struct Main { void (*body)(void*); void* arg; } main{body, arg};
  starting_runtime = true;
  Closure* c = newg();
  auto main_goroutine = [&main] {
    main.body(main.arg);
    const std::int64_t returned = nanotime();
    // Virtual time's counts as the run ends, before the teardown adds its own turns; published
    // with main_return_ns.
    if (vtime::on()) sched->clock_at_return = vtime::report();
    sched->main_return_ns.store(returned, std::memory_order_release);
    sched->main_returned.store(true, std::memory_order_seq_cst);
    sched->main_done.wakeup();
  };
  bind_closure<decltype(main_goroutine)>(c, main_goroutine);
  newproc(c);  // from this thread (no M): global queue + wakep starts the first M
  starting_runtime = false;
  // sysmon and the first M exist: both start at the same virtual clock, the earlier made first.
  vtime::open();
  sched->main_done.sleep();

  sched->stopping.store(true, std::memory_order_seq_cst);
  sched->sysmon_note.wakeup();  // from now on it preempts every running G, to end the Ms
  netpoll_break();               // the M blocked in netpoll, if any, looks again
  for (auto& d : sched->domains) {
    d->lock.lock();
    d->midle = nullptr;
    d->lock.unlock();
  }
  sched->mlock.lock();
  for (M* m : sched->allm) m->park.wakeup();  // idle, locked-idle, exiting: all look again
  sched->mlock.unlock();
  // newm refuses once stopping is set, so allm stops growing; join what it has.
  for (std::size_t joined = 0;;) {
    sched->mlock.lock();
    std::size_t n = sched->allm.size();
    M* m = joined < n ? sched->allm[joined] : nullptr;
    sched->mlock.unlock();
    if (!m) break;
    if (m->thread.joinable()) m->thread.join();
    ++joined;
  }
  sched->sysmon_exit.store(true, std::memory_order_seq_cst);
  sched->sysmon_note.wakeup();
  sched->sysmon.join();
  preempt::stop();  // sysmon, the only sender, is gone
  run_stop_hooks(StopPhase::abandoned);  // while their stacks and closures still exist
  foreign_sched.store(nullptr, std::memory_order_seq_cst);
  signals::remove_quit_handler();
  while (foreign_calls.load(std::memory_order_seq_cst) != 0) sched_yield();
  if (signals::quit_requested.load(std::memory_order_seq_cst)) {
    // Asked after sysmon's last look: every M is gone, so there is nothing left to show.
    std::fputs("SIGQUIT: quit (while the runtime was stopping; every goroutine had ended or "
               "been abandoned)\n", stderr);
    exit_fatal();
  }
  // Every M is gone: the counts are final.
  save_final_stats(run_view(*sched), sched->stats_file, sched->cfg.stats_path);
  trace_stop_run(for_each_trace_slot);          // and the trace, if one is still on, is complete
  vtime::stop();             // every member has left: the clock is the real one again
  tearing_down = true;
  delete sched;
  tearing_down = false;
  sched = nullptr;
  publish_topology(nullptr, false);  // plain threads: the real machine again
  netpoll_forget_goroutines();  // the ones parked on descriptors are gone with the rest
  run_stop_hooks(StopPhase::freed);  // and so is what their calls held (sockets)
}

int gomaxprocs() { return sched ? sched->plan.gomaxprocs : 0; }

void add_stop_hook(StopPhase when, void (*hook)()) {
  static std::mutex adding;  // registrations from several threads' first uses
  std::lock_guard lock(adding);
  int i = nstop_hooks.load(std::memory_order_relaxed);
  if (i == kMaxStopHooks) fatal("add_stop_hook: more than %d hooks", kMaxStopHooks);
  stop_hooks[i] = {when, hook};
  nstop_hooks.store(i + 1, std::memory_order_release);
}

Config config_from_env_or_exit() {
  try {
    return Config::from_env();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "nugo: %s\n", e.what());
    std::exit(2);
  }
}

}  // namespace nugo::detail

namespace nugo {
Config Config::from_env_or_exit() { return detail::config_from_env_or_exit(); }
}  // namespace nugo
