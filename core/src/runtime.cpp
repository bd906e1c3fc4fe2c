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
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "fatal.hpp"
#include "netpoll.hpp"
#include "plan.hpp"
#include "preempt.hpp"
#include "sched.hpp"
#include "signals.hpp"

namespace nugo::detail {
namespace {

std::mutex run_mutex;  // one runtime instance at a time per process

// Constant-initialized, so registration from other files' static initializers finds it ready.
void (*stop_hooks[kMaxStopHooks])() = {};
std::atomic<int> nstop_hooks{0};

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
    : cfg(c), topology(std::move(t)), stacks(c.stack_size) {
  // One P per PU of the topology unless told otherwise, at most Config::kMaxProcs (Go caps
  // GOMAXPROCS at _MaxGomaxprocs the same way; an emulated topology may have more PUs).
  gomaxprocs = cfg.procs > 0 ? cfg.procs : std::min(topology.pu_count(), Config::kMaxProcs);
  timeslice_ns = cfg.timeslice.count();
  netpoll_init();
  lastpoll.store(nanotime());
  for (int i = 0; i < gomaxprocs; ++i) {
    allp.push_back(std::make_unique<P>());
    allp.back()->id = i;
  }
  // The domains and their Ps, as NUMA policy plans them (numa/src/plan.hpp): flat mode is
  // one domain with every P, NUMA mode one per node that got a P.
  numa::Plan plan = numa::make_plan(topology, gomaxprocs, cfg.mode);
  mode = plan.mode;
  for (const numa::DomainPlan& dp : plan.domains) {
    auto d = std::make_unique<Domain>();
    d->id = static_cast<int>(domains.size());
    d->node = dp.node;
    d->os_node = dp.os_node;
    for (int p : dp.ps) {
      allp[p]->domain = d.get();
      d->ps.push_back(allp[p].get());
    }
    // A thread without a P on a CPU of this node queues in this domain (foreign_domain); in
    // flat mode every CPU that runs a P does. Folded emulated CPUs go to the first domain
    // that claims them.
    const std::vector<int>& pus = dp.node >= 0 ? topology.nodes[dp.node].pus : dp.pus;
    for (int pu : pus) {
      int cpu = topology.real_cpu(pu);
      if (cpu < 0) continue;
      if (static_cast<int>(domain_of_cpu.size()) <= cpu) domain_of_cpu.resize(cpu + 1, -1);
      if (domain_of_cpu[cpu] < 0) domain_of_cpu[cpu] = d->id;
    }
    d->steal_order.reset(static_cast<std::uint32_t>(d->ps.size()));
    for (auto it = d->ps.rbegin(); it != d->ps.rend(); ++it) pidleput(*it);  // lowest first out
    domains.push_back(std::move(d));
  }
  // Binding (NUGO_BIND): node in NUMA mode, none in flat mode unless asked for.
  bind = cfg.bind != Bind::automatic ? cfg.bind : mode == Mode::numa ? Bind::node : Bind::none;
  bind_cpus.resize(gomaxprocs);
  bind_key.assign(gomaxprocs, -1);
  if (bind != Bind::none) {
    for (const numa::DomainPlan& dp : plan.domains) {
      Domain* d = allp[dp.ps.front()]->domain;
      std::vector<int> node_cpus;
      if (bind == Bind::node) {
        // Flat mode has no node: bind to the CPUs of the Ps' PUs (fewer than the machine's
        // when there are fewer Ps than PUs).
        const std::vector<int>& pus = dp.node >= 0 ? topology.nodes[dp.node].pus : dp.pus;
        for (int pu : pus) node_cpus.push_back(topology.real_cpu(pu));
        std::sort(node_cpus.begin(), node_cpus.end());
        node_cpus.erase(std::unique(node_cpus.begin(), node_cpus.end()), node_cpus.end());
      }
      for (std::size_t k = 0; k < dp.ps.size(); ++k) {
        int p = dp.ps[k];
        if (bind == Bind::node) {
          bind_cpus[p] = node_cpus;
          bind_key[p] = d->id;
        } else {
          bind_cpus[p] = {topology.real_cpu(dp.pus[k])};
          bind_key[p] = p;
        }
      }
    }
  }
  for (std::size_t i = 0; i < domains.size(); ++i)
    for (const std::vector<int>& tier : plan.remote[i]) {
      std::vector<Domain*> group;
      for (int other : tier) group.push_back(domains[other].get());
      domains[i]->remote.push_back(std::move(group));
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
  for (G* chunk : chunks) {
    for (G* gp = chunk; gp != chunk + kGChunk; ++gp) {
      if (gp->invoke) gp->discard(gp);
      if (gp->ctx) sanitizer_forget_frames(gp->ctx, gp->stack.hi);  // abandoned mid-run
    }
    delete[] chunk;
  }
}

G* Sched::new_gchunk() {
  gchunks.push_back(new G[kGChunk]);
  return gchunks.back();
}

namespace {

topo::Topology load_topology(const Config& cfg, bool exit_on_bad_config) {
  try {
    cfg.validate();
    return topo::Topology::load(cfg.topology);
  } catch (const std::exception& e) {
    if (!exit_on_bad_config) throw;
    std::fprintf(stderr, "nugo: %s\n", e.what());
    std::exit(2);
  }
}

}  // namespace

void run_main(const Config& cfg, void (*body)(void*), void* arg, bool exit_on_bad_config) {
  if (getm()) throw std::logic_error("nugo::run: called from inside the runtime");
  std::unique_lock guard(run_mutex, std::try_to_lock);
  if (!guard.owns_lock()) throw std::logic_error("nugo::run: a runtime is already running");

  topo::Topology topology = load_topology(cfg, exit_on_bad_config);
  if (topology.emulated) announce_emulated(topology);
  signals::install_handlers();
  sched = new Sched(cfg, std::move(topology));
  preempt::init(cfg);
  try {
    sched->sysmon = std::thread(sysmon_main);
  } catch (const std::system_error& e) {
    fatal("nugo: cannot create sysmon's OS thread: %s (raise the limit on processes: ulimit -u, "
          "RLIMIT_NPROC)", e.what());
  }
  foreign_sched.store(sched, std::memory_order_seq_cst);

  struct Main { void (*body)(void*); void* arg; } main{body, arg};
  starting_runtime = true;
  Closure* c = newg();
  auto main_goroutine = [&main] {
    main.body(main.arg);
    sched->main_done.wakeup();
  };
  bind_closure<decltype(main_goroutine)>(c, main_goroutine);
  newproc(c);  // from this thread (no M): global queue + wakep starts the first M
  starting_runtime = false;
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
  foreign_sched.store(nullptr, std::memory_order_seq_cst);
  while (foreign_calls.load(std::memory_order_seq_cst) != 0) sched_yield();
  tearing_down = true;
  delete sched;
  tearing_down = false;
  sched = nullptr;
  netpoll_forget_goroutines();  // the ones parked on descriptors are gone with the rest
  for (int i = 0, n = nstop_hooks.load(std::memory_order_acquire); i < n; ++i)
    stop_hooks[i]();            // and so is what their calls held (sockets)
}

int gomaxprocs() { return sched ? sched->gomaxprocs : 0; }

void add_stop_hook(void (*hook)()) {
  int i = nstop_hooks.load(std::memory_order_relaxed);
  if (i == kMaxStopHooks) fatal("add_stop_hook: more than %d hooks", kMaxStopHooks);
  stop_hooks[i] = hook;
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
