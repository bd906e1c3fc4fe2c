// Virtual time (vtime.hpp): the members, the turn, and the quantum.
//
// State. Every member has a record: its clock, its state (running, ready, waiting, outside),
// for a waiter the word it waits on, its deadline and the order it began waiting in, and the
// word `turn` it sleeps on in the kernel until it is given the turn. All of it is guarded by
// one spin lock, `reg`. Only the member holding the turn (the holder) and threads outside
// virtual time ever take it, so it is almost never contended.
//
// The clock of a member. While it holds the turn its clock is the clock its turn began at
// plus the real time since (the TSC, calibrated against CLOCK_MONOTONIC at start: a read
// costs about 13 ns here, a vDSO clock_gettime about 25), never less than any value it has
// already been shown. Whenever it gives up the turn (to itself too, at a quantum's end) its
// clock is settled: the clock its turn began at plus the CPU time its thread used since
// (CLOCK_THREAD_CPUTIME_ID, one system call), or the last value shown if that is later. The
// two differ only when the host took the CPU away from the holder; so a member that read the
// clock late in its turn (the tracer, the timers) is charged that time too.
//
// Giving up the turn (switch_out, under reg): the holder's clock is settled, it takes its new
// state, and the next member is picked: the ready member with the smallest clock, or a waiter
// with a deadline that comes earlier, which then times out at its deadline. Ties go to the
// member created first. The holder then sleeps on its own `turn` word until it is picked.
//
// The quantum. A member keeps the turn for at most a quantum of its clock while others are
// due: checkpoint, called on every pass of schedule and findrunnable, looks at its clock every
// eighth call, and when the quantum is over gives the turn to whoever is earliest (itself again,
// most often, at the cost of a scan under reg). Code that reaches no checkpoint (a loop without
// calls, a runtime loop that waits for another thread) is interrupted by the watchdog, a plain
// thread outside virtual time: every half quantum of real time it looks at the holder, and if
// the holder has passed no checkpoint for a whole quantum while another member is due before
// the holder's clock, it sends the holder the quantum's signal. The handler gives up the turn
// right there, in place, if the sched room says the interrupted code may wait (pausable: no
// lock held, not in a library that takes locks we cannot see); otherwise it marks the quantum
// due, for the thread's next hook, and the watchdog asks again a quantum later.
//
// Why a watchdog. A signal costs 20-30 us on the development VM (in a KVM guest). A perf
// event counting each thread's CPU time (the first design) signalled at every quantum whether
// or not the thread was at checkpoints: fib took twice its real time at a 50 us quantum; at
// one signal per 20 quanta a hog's slice ended up to 8 ms late (sysmon runs only while the hog
// waits for its turn); and restarting the event at each checkpoint (PERF_EVENT_IOC_PERIOD)
// costs 5 us. The watchdog costs the members nothing while they reach checkpoints, signals a
// hog only when someone else is due, and needs no perf_event_paranoid setting.
#include "vtime.hpp"

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <climits>
#include <new>
#include <cstring>
#include <thread>
#include <vector>

#include "costs.hpp"

namespace nugo::detail::vtime {
namespace {

// The mode's own errors, in Go's shape, exit status 2: it stands below base (whose locks call
// its hooks), so it has no use of base's fatal().
[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "fatal error: %s\n", buf);
  _exit(2);
}

}  // namespace

namespace internal {
std::atomic<bool> enabled{false};
const std::int64_t* line_prices = nullptr;
int line_nodes = 0;
}

enum class State : std::uint8_t { running, ready, waiting, outside };

struct Member {
  int id = 0;                // creation order: ties between equal clocks go to the lower
  State state = State::ready;
  std::int64_t clock = 0;    // virtual ns; while running, as of the turn's start
  // A waiter's word, deadline (INT64_MAX: none) and place in the order of waiting.
  const void* wait_addr = nullptr;
  std::int64_t deadline = INT64_MAX;
  std::uint64_t wait_seq = 0;
  std::atomic<std::uint32_t> turn{0};  // 1: it holds the turn (the kernel futex it sleeps on)
  std::uint32_t nap_word = 0;          // a word nobody wakes, for nap
  // The running member's bookkeeping: when its turn began, in each clock. clock0 and tsc0 are
  // also read by the watchdog (atomic_ref, relaxed).
  std::int64_t cpu0 = 0, clock0 = 0, shown = 0;
  std::uint64_t tsc0 = 0;
  std::int64_t quantum_end = 0;          // the clock its current quantum ends at
  std::atomic<std::uint64_t> passes{0};  // checkpoints passed (the watchdog's sign of life)
  std::int64_t left_real = 0;  // outside: when it left
  bool quantum_due = false;
  std::atomic<bool> signalled{false};  // the watchdog's signal is on its way (one at a time)
  pid_t tid = 0;

  // A retired record made new for its next thread, field by field (the watchdog may still be
  // reading the one it last saw: no destructor and placement new under it).
  void reset(int new_id) {
    id = new_id;
    state = State::ready;
    clock = 0;
    wait_addr = nullptr;
    deadline = INT64_MAX;
    wait_seq = 0;
    turn.store(0, std::memory_order_relaxed);
    cpu0 = shown = 0;
    std::atomic_ref<std::int64_t>(clock0).store(0, std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(tsc0).store(0, std::memory_order_relaxed);
    quantum_end = 0;
    passes.store(0, std::memory_order_relaxed);
    left_real = 0;
    quantum_due = false;
    signalled.store(false, std::memory_order_relaxed);
    tid = 0;
  }
};

namespace {

constexpr std::int64_t kNever = INT64_MAX;
// checkpoint reads the clock on every this many calls (a TSC read is 13 ns on the development
// VM; schedule passes every goroutine, and at every pass fib took 15% longer in virtual time).
constexpr std::uint64_t kPassesPerLook = 8;

// reg: the registry's lock. A thread sets `busy` for as long as it holds it or is in the
// middle of a turn change, so that its quantum's signal never re-enters.
std::atomic<bool> reg{false};
std::vector<Member*> members;  // by id
std::vector<Member*> retired;  // records of threads that left, for prepare_member to reuse
std::atomic<Member*> holder{nullptr};
std::atomic<std::int64_t> latest{1'000'000'000};  // the clock of the latest turn (start: 1 s)
// The run's settings, in ns (start: wake measured when it was not set).
struct Params {
  std::int64_t quantum_ns = 0, wake_ns = 0;
} params;
std::vector<std::int64_t> prices;  // internal::line_prices' storage
double ns_per_tick = 1.0;  // the TSC's period (start())
pid_t process_id = 0;
std::thread watchdog;
std::atomic<bool> watchdog_run{false};
bool (*pausable_fn)(const void*) = nullptr;
// The one real CPU every member runs on while in virtual time (the one start() ran on, so that
// two virtual runs side by side need not share one; which CPU it is changes no decision), and
// the set a member in a system call runs on meanwhile: start()'s caller's.
int member_cpu = -1;
cpu_set_t process_cpus;
int next_id = 0;
std::uint64_t next_wait_seq = 0;
bool opened = false;  // open() was called: turns may be granted (under reg)
Report counts;
std::atomic<std::int64_t> charged[kCosts];  // the cost model's charges so far, by Cost

thread_local Member* self __attribute__((tls_model("initial-exec"))) = nullptr;
// The thread is in the middle of a turn change, or of setting its clock: its quantum's signal
// must not pause it (set_busy orders it against the handler, on the same thread).
thread_local bool busy __attribute__((tls_model("initial-exec"))) = false;
// The thread holds reg (any thread: report() and stop() take it too): the same for the handler,
// which would otherwise spin on a lock its own thread holds.
thread_local int in_reg __attribute__((tls_model("initial-exec"))) = 0;
// The thread is a member inside a system call's body (leave to rejoin): outside virtual time,
// where it must behave as a non-member (it does not hold the turn).
thread_local bool outside __attribute__((tls_model("initial-exec"))) = false;

void set_busy(bool b) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  busy = b;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// The calling thread as a member that holds or waits for the turn; null outside virtual time.
Member* active() { return outside ? nullptr : self; }

// Words non-members wait on in the kernel, so that a member's wake reaches them too.
constexpr int kOutsideSlots = 64;
std::atomic<const void*> outside_words[kOutsideSlots];
std::atomic<int> outside_overflow{0};

// The holder is the only member that runs, but a thread it just woke may run before it has
// released reg (on the waker's CPU, even): after a short spin, give the CPU back.
void lock() {
  ++in_reg;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  for (int spins = 0; reg.exchange(true, std::memory_order_acquire);)
    while (reg.load(std::memory_order_relaxed))
      if (++spins < 100)
        __builtin_ia32_pause();
      else
        sched_yield();
}
void unlock() {
  reg.store(false, std::memory_order_release);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  --in_reg;
}

// Members share one real CPU: one runs at a time anyway, and on one CPU no cache line of the
// runtime crosses a real CPU, so the cost model's charges are the only ones (on two, a line
// moved between members that ran on different CPUs was paid twice: in CPU time, and by the
// model), and every member reads the same TSC. A member in a system call runs beside the holder
// on any CPU of the process, as a thread outside virtual time.
void pin_to_member_cpu(bool pin) {
  if (member_cpu < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(member_cpu, &one);
  sched_setaffinity(0, sizeof(cpu_set_t), pin ? &one : &process_cpus);
}

std::int64_t read_clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}
std::int64_t real_ns() { return read_clock(CLOCK_MONOTONIC); }
std::int64_t cpu_ns() { return read_clock(CLOCK_THREAD_CPUTIME_ID); }

void kernel_wait(std::atomic<std::uint32_t>* w, std::uint32_t expected, const timespec* abs) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(w),
          abs ? FUTEX_WAIT_BITSET_PRIVATE : FUTEX_WAIT_PRIVATE, expected, abs, nullptr,
          abs ? FUTEX_BITSET_MATCH_ANY : 0);
}
void kernel_wake(const void* w, int count) {
  syscall(SYS_futex, const_cast<void*>(w), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// The running member's clock now.
std::int64_t clock_at(Member* m, std::uint64_t tsc) {
  const std::int64_t c0 = std::atomic_ref<std::int64_t>(m->clock0).load(std::memory_order_relaxed);
  const std::uint64_t t0 = std::atomic_ref<std::uint64_t>(m->tsc0).load(std::memory_order_relaxed);
  // Signed, and never negative: a thread that moved to another CPU may read a TSC a little
  // behind the one its turn began on (the development VM's vCPUs differ by a few ns), and
  // the unsigned difference would be 2^64 minus that.
  const std::int64_t ticks = static_cast<std::int64_t>(tsc - t0);
  return c0 + (ticks > 0 ? static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick) : 0);
}

void set_clock0(Member* m, std::int64_t c0) {
  std::atomic_ref<std::int64_t>(m->clock0).store(c0, std::memory_order_relaxed);
}

// The running member's clock now, without showing it: for choosing who goes next. Only what
// callers are shown (running_clock) binds the clock from below, so that the CPU time settles
// the rest (switch_out).
std::int64_t peek_clock(Member* m) { return std::max(clock_at(m, __rdtsc()), m->shown); }

// The running member's clock now, shown to its caller: never less from then on.
std::int64_t running_clock(Member* m) {
  const std::int64_t c = peek_clock(m);
  m->shown = c;
  return c;
}

// A turn begins (or a quantum, for a member that goes on): its clocks start from m->clock, and
// cpu, its thread's CPU time now.
void rebase(Member* m, std::int64_t cpu) {
  m->cpu0 = cpu;
  std::atomic_ref<std::uint64_t>(m->tsc0).store(__rdtsc(), std::memory_order_relaxed);
  set_clock0(m, m->clock);
  m->shown = m->clock;
  m->quantum_end = m->clock + params.quantum_ns;
  m->quantum_due = false;
}

void begin_turn(Member* m) {
  rebase(m, cpu_ns());
  m->passes.fetch_add(1, std::memory_order_relaxed);
}

// The member that can go on earliest; a waiter picked for its deadline times out there. A
// member outside virtual time (in a system call) is an event to come at its clock plus the
// real time it has been out so far: nobody goes on later than that, or virtual time would race
// ahead of the call (its waiters timing out one deadline after another in no real time) and
// the call would come back into a past the others have already seen. Then the turn stays free
// until real time catches up (the watchdog grants it) or the call comes back (rejoin).
Member* pick() {
  Member* best = nullptr;
  std::int64_t best_key = 0;
  std::int64_t bound = kNever;
  std::int64_t real_now = -1;
  for (Member* m : members) {
    std::int64_t key;
    if (m->state == State::ready) {
      key = m->clock;
    } else if (m->state == State::waiting && m->deadline != kNever) {
      key = std::max(m->clock, m->deadline);
    } else {
      if (m->state == State::outside) {
        if (real_now < 0) real_now = real_ns();
        bound = std::min(bound, m->clock + (real_now - m->left_real));
      }
      continue;
    }
    if (!best || key < best_key) {  // members are in id order: the first of equals wins
      best = m;
      best_key = key;
    }
  }
  if (best && best_key > bound) return nullptr;
  if (best && best->state == State::waiting) {
    best->clock = best_key;
    best->wait_addr = nullptr;
    ++counts.timed_out;
  }
  return best;
}

// One step of the fingerprints (Report): FNV-1a over the member's id and the turn's clock.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ull;
  return h;
}
void count_turn(const Member* m, std::int64_t clock) {
  counts.fingerprint = mix(mix(counts.fingerprint, static_cast<std::uint64_t>(m->id)),
                           static_cast<std::uint64_t>(clock));
  counts.order_fingerprint = mix(counts.order_fingerprint, static_cast<std::uint64_t>(m->id));
}

// Gives the turn to m (under reg). The caller wakes it (wake_granted) once it has released
// reg: woken first, it could run on our CPU and spin on reg while we wait for that CPU.
// Member records are never freed (detach keeps them for reuse), so a late wake is harmless.
Member* grant(Member* m) {
  m->state = State::running;
  // What the watchdog reads of it until begin_turn: its clock now, not the last turn's start
  // plus the time it slept since.
  set_clock0(m, m->clock);
  std::atomic_ref<std::uint64_t>(m->tsc0).store(__rdtsc(), std::memory_order_relaxed);
  holder.store(m, std::memory_order_relaxed);
  if (m->clock > latest.load(std::memory_order_relaxed))
    latest.store(m->clock, std::memory_order_relaxed);
  if (m->clock > counts.end_ns) counts.end_ns = m->clock;
  count_turn(m, m->clock);
  if (counts.first_turn_members == 0) counts.first_turn_members = static_cast<int>(members.size());
  m->turn.store(1, std::memory_order_release);
  return m;
}

void wake_granted(Member* m) {
  if (m) kernel_wake(&m->turn, 1);
}

// With no holder (a non-member made a member ready): the earliest member goes on, once the
// turn is open.
Member* grant_if_free() {
  if (!opened || holder.load(std::memory_order_relaxed)) return nullptr;
  Member* next = pick();
  return next ? grant(next) : nullptr;
}

// The holder m gives up its turn, taking state s (under reg, which it releases); returns
// once it holds the turn again, unless it left.
void switch_out(Member* m, State s, bool leaving = false) {
  // Settled first, by the CPU time its turn used, so that the choice below and the clock the
  // member goes on with are one and the same. (Choosing by the real-time clock and settling
  // after let a waiter time out at a deadline that the member, settled lower, then went back
  // before: the second review.) One system call per turn given up, about 1% of a quantum.
  const std::int64_t cpu = cpu_ns();
  m->clock = std::max(m->clock0 + (cpu - m->cpu0), m->shown);
  m->state = s;
  m->turn.store(0, std::memory_order_relaxed);
  if (leaving) members.erase(std::find(members.begin(), members.end(), m));
  holder.store(nullptr, std::memory_order_relaxed);
  Member* next = pick();
  if (next == m) {  // still the earliest: a new turn of its own, without waiting in the kernel,
    rebase(m, cpu);   // from the settled clock, or the deadline its wait timed out at
    count_turn(m, m->clock);
    m->state = State::running;
    holder.store(m, std::memory_order_relaxed);
    unlock();
    return;
  }
  if (next) {
    ++counts.turns;
    grant(next);
  }
  if (leaving) retired.push_back(m);
  unlock();
  wake_granted(next);
  if (leaving || s == State::outside) return;
  while (m->turn.load(std::memory_order_acquire) == 0) kernel_wait(&m->turn, 0, nullptr);
  begin_turn(m);
}

// ---- the quantum ----

void on_quantum(int, siginfo_t*, void* uc) {
  int saved_errno = errno;
  // The watchdog's one signal has come, wherever the thread is now (even inside a system
  // call, where it is no member: cleared through self, or the watchdog would never signal it
  // again).
  if (self) self->signalled.store(false, std::memory_order_relaxed);
  Member* m = active();
  if (m && holder.load(std::memory_order_relaxed) == m) {
    m->quantum_due = true;
    if (!busy && in_reg == 0 && pausable_fn && pausable_fn(uc)) {
      set_busy(true);
      lock();
      ++counts.quanta;
      ++counts.paused_by_signal;
      switch_out(m, State::ready);
      set_busy(false);
    }
  }
  errno = saved_errno;
}

// The earliest time another member than h can go on at (kNever: none); under reg.
std::int64_t earliest_other(const Member* h) {
  std::int64_t best = kNever;
  for (const Member* m : members) {
    if (m == h) continue;
    if (m->state == State::ready)
      best = std::min(best, m->clock);
    else if (m->state == State::waiting && m->deadline != kNever)
      best = std::min(best, std::max(m->clock, m->deadline));
  }
  return best;
}

// The watchdog (see the top of the file). It takes reg only to look, and signals outside it.
void watchdog_main() {
  prctl(PR_SET_TIMERSLACK, 1);  // half a quantum means what it says (the default slack is 50 us)
  Member* last = nullptr;
  std::uint64_t last_passes = 0;
  std::int64_t since = 0;
  const timespec half{0, static_cast<long>(params.quantum_ns / 2)};
  while (watchdog_run.load(std::memory_order_acquire)) {
    nanosleep(&half, nullptr);
    Member* h = holder.load(std::memory_order_acquire);
    if (!h) {
      last = nullptr;
      // A turn held back for a member in a system call (pick): give it once real time allows.
      lock();
      Member* granted = members.empty() ? nullptr : grant_if_free();
      unlock();
      wake_granted(granted);
      continue;
    }
    const std::uint64_t p = h->passes.load(std::memory_order_relaxed);
    const std::int64_t t = real_ns();
    if (h != last || p != last_passes) {
      last = h;
      last_passes = p;
      since = t;
      continue;
    }
    if (t - since < params.quantum_ns) continue;
    lock();
    pid_t tid = 0;
    // Not a member whose first turn has not begun (passes 0: its clock is not set yet), and
    // one signal at a time (a real-time signal queues: a thread that cannot pause for a while
    // would otherwise meet them all later).
    if (holder.load(std::memory_order_relaxed) == h && p != 0 &&
        earliest_other(h) < clock_at(h, __rdtsc()) &&
        !h->signalled.exchange(true, std::memory_order_relaxed))
      tid = h->tid;
    unlock();
    if (tid) {
      syscall(SYS_tgkill, process_id, tid, quantum_signal());
      since = t;  // and again a quantum later, if it is still not at a checkpoint
    }
  }
}

// The median latency of a futex wake-up between two threads of this machine, one way.
std::int64_t measure_wake_ns() {
  constexpr int kRounds = 201;
  std::atomic<std::uint32_t> ball{0};
  std::vector<std::int64_t> trips;
  std::thread partner([&] {
    for (int i = 0; i < kRounds; ++i) {
      while (ball.load(std::memory_order_acquire) != 1) kernel_wait(&ball, 0, nullptr);
      ball.store(0, std::memory_order_release);
      kernel_wake(&ball, 1);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    std::int64_t t0 = real_ns();
    ball.store(1, std::memory_order_release);
    kernel_wake(&ball, 1);
    while (ball.load(std::memory_order_acquire) != 0) kernel_wait(&ball, 1, nullptr);
    trips.push_back(real_ns() - t0);
  }
  partner.join();
  std::nth_element(trips.begin(), trips.begin() + kRounds / 2, trips.end());
  return trips[kRounds / 2] / 2;
}

}  // namespace

// ---- the run ----

int quantum_signal() { return SIGRTMAX - 1; }

void start(const VirtualTime& settings, const topo::Topology& t, bool (*pausable)(const void* uc)) {
  params.quantum_ns = settings.quantum.count();
  params.wake_ns = settings.wake.count();
  // Measured, within Config's bounds (a busy host can make one hand-off take milliseconds).
  if (params.wake_ns < 0) params.wake_ns = std::min<std::int64_t>(measure_wake_ns(), 1'000'000);
  // The TSC's rate, over 2 ms: the quantum is checked against it (checkpoint).
  const std::int64_t r0 = real_ns();
  const std::uint64_t t0 = __rdtsc();
  timespec two_ms{0, 2'000'000};
  nanosleep(&two_ms, nullptr);
  const double ticks_per_ns =
      static_cast<double>(__rdtsc() - t0) / static_cast<double>(real_ns() - r0);
  ns_per_tick = 1.0 / ticks_per_ns;
  process_id = getpid();
  pausable_fn = pausable;
  member_cpu = -1;
  if (sched_getaffinity(0, sizeof process_cpus, &process_cpus) == 0) {
    const int here = sched_getcpu();
    if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(here, &process_cpus)) member_cpu = here;
    for (int cpu = 0; cpu < CPU_SETSIZE && member_cpu < 0; ++cpu)
      if (CPU_ISSET(cpu, &process_cpus)) member_cpu = cpu;
  }
  counts = Report{};
  for (auto& c : charged) c.store(0, std::memory_order_relaxed);
  counts.quantum_ns = params.quantum_ns;
  counts.wake_ns = params.wake_ns;
  counts.line_ns = settings.line.count();
  counts.remote_line_ns = settings.remote_line.count();
  prices.clear();
  for (const auto& row : line_costs(t, counts.line_ns, counts.remote_line_ns))
    prices.insert(prices.end(), row.begin(), row.end());
  internal::line_prices = prices.data();
  internal::line_nodes = static_cast<int>(t.nodes.size());
  counts.end_ns = latest.load();
  counts.fingerprint = counts.order_fingerprint = 0xcbf29ce484222325ull;  // FNV-1a's basis
  lock();
  opened = false;
  unlock();
  struct sigaction sa {};
  sa.sa_sigaction = on_quantum;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigfillset(&sa.sa_mask);  // no other handler runs inside it (the preemption's included)
  if (sigaction(quantum_signal(), &sa, nullptr) != 0)
    die("NUGO_VIRTUAL: cannot install a handler for signal %d", quantum_signal());
  internal::enabled.store(true, std::memory_order_seq_cst);
  watchdog_run.store(true, std::memory_order_release);
  watchdog = std::thread(watchdog_main);
}

void open() {
  set_busy(true);
  lock();
  opened = true;
  Member* first = members.empty() ? nullptr : grant_if_free();
  unlock();
  wake_granted(first);
  set_busy(false);
}

void stop() {
  if (watchdog.joinable()) {
    watchdog_run.store(false, std::memory_order_release);
    watchdog.join();
  }
  lock();
  if (!members.empty()) die("vtime::stop: %zu threads are still members", members.size());
  unlock();
  internal::enabled.store(false, std::memory_order_seq_cst);
}

Report report() {
  lock();
  Report r = counts;
  unlock();
  for (int k = 0; k < kCosts; ++k) r.charged_ns[k] = charged[k].load(std::memory_order_relaxed);
  return r;
}

// ---- members ----

Member* prepare_member() {
  set_busy(true);
  lock();
  Member* m;
  if (!retired.empty()) {
    m = retired.back();
    retired.pop_back();
    m->reset(next_id++);
  } else {
    m = new Member;
    m->id = next_id++;
  }
  Member* creator = active();
  m->clock = (creator ? running_clock(creator) : latest.load(std::memory_order_relaxed)) +
             params.wake_ns;
  m->state = State::ready;
  members.push_back(m);
  counts.peak_members = std::max(counts.peak_members, static_cast<int>(members.size()));
  Member* woken = grant_if_free();
  unlock();
  wake_granted(woken);
  set_busy(false);
  return m;
}

void attach(Member* m) {
  if (!m) return;  // virtual time is off
  m->tid = static_cast<pid_t>(gettid());
  pin_to_member_cpu(true);
  set_busy(true);  // until its clock is set: the watchdog may signal it as soon as it is granted
  self = m;
  while (m->turn.load(std::memory_order_acquire) == 0) kernel_wait(&m->turn, 0, nullptr);
  begin_turn(m);
  set_busy(false);
}

void detach() {
  Member* m = self;
  if (!m) return;
  if (outside) {  // not the holder (a thread ending inside a system call): only leave the list
    lock();
    members.erase(std::find(members.begin(), members.end(), m));
    retired.push_back(m);
    unlock();
    outside = false;
    self = nullptr;
    return;
  }
  set_busy(true);  // from here on the quantum's signal leaves it alone
  lock();
  switch_out(m, State::ready, /*leaving=*/true);  // retires the record: reusable at once
  set_busy(false);
  self = nullptr;
}

bool member() { return active() != nullptr; }

std::int64_t now() {
  if (Member* m = active()) return running_clock(m);
  if (Member* m = self) return m->clock + (real_ns() - m->left_real);  // in a system call
  return latest.load(std::memory_order_relaxed);
}

bool quantum_due() {
  Member* m = active();
  return m && m->quantum_due;
}

// ---- the futex ----

void wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected, std::int64_t deadline_ns) {
  Member* m = active();
  set_busy(true);
  lock();
  if (addr->load(std::memory_order_relaxed) != expected) {
    unlock();
    set_busy(false);
    return;
  }
  m->wait_addr = addr;
  m->deadline = deadline_ns > 0 ? deadline_ns : kNever;
  m->wait_seq = next_wait_seq++;
  switch_out(m, State::waiting);
  m->wait_addr = nullptr;
  m->deadline = kNever;
  set_busy(false);
}

void wake(std::atomic<std::uint32_t>* addr, int count) {
  Member* waker = active();
  set_busy(true);
  lock();
  const std::int64_t at =
      (waker ? running_clock(waker) : latest.load(std::memory_order_relaxed)) + params.wake_ns;
  for (int woken = 0; woken < count; ++woken) {
    Member* first = nullptr;  // the earliest waiter on addr, as the kernel's queue would
    for (Member* m : members)
      if (m->state == State::waiting && m->wait_addr == addr &&
          (!first || m->wait_seq < first->wait_seq))
        first = m;
    if (!first) break;
    first->state = State::ready;
    first->wait_addr = nullptr;
    first->clock = std::max(first->clock, at);
  }
  Member* granted = waker ? nullptr : grant_if_free();
  unlock();
  wake_granted(granted);
  set_busy(false);
  // A thread outside virtual time may sleep on the same word in the kernel (the main thread
  // on main_done): the store before this call, this fence, and wait_outside's slot-then-
  // futex make sure that either we see its slot or its futex sees the new value.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool waited_on = outside_overflow.load(std::memory_order_relaxed) > 0;
  for (int i = 0; i < kOutsideSlots && !waited_on; ++i)
    waited_on = outside_words[i].load(std::memory_order_relaxed) == addr;
  if (waited_on) kernel_wake(addr, count);
}

void wait_outside(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
                  std::int64_t deadline_ns) {
  int slot = -1;
  for (int i = 0; i < kOutsideSlots && slot < 0; ++i) {
    const void* none = nullptr;
    if (outside_words[i].compare_exchange_strong(none, addr)) slot = i;
  }
  if (slot < 0) outside_overflow.fetch_add(1);
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000),
              static_cast<long>(deadline_ns % 1'000'000'000)};
  kernel_wait(addr, expected, deadline_ns > 0 ? &ts : nullptr);
  if (slot >= 0)
    outside_words[slot].store(nullptr, std::memory_order_release);
  else
    outside_overflow.fetch_sub(1);
}

// ---- spinning, sleeping, charging ----

void yield() {
  Member* m = active();
  if (!m) return;
  set_busy(true);
  lock();
  switch_out(m, State::ready);
  set_busy(false);
}

void nap(std::int64_t ns) {
  Member* m = active();
  if (!m) return;
  auto* word = reinterpret_cast<std::atomic<std::uint32_t>*>(&m->nap_word);
  wait(word, 0, now() + ns);
}

void checkpoint() {
  Member* m = active();
  if (!m || busy || holds_locks()) return;
  const std::uint64_t p = m->passes.load(std::memory_order_relaxed) + 1;
  m->passes.store(p, std::memory_order_relaxed);
  if (!m->quantum_due && (p % kPassesPerLook != 0 || peek_clock(m) < m->quantum_end)) return;
  set_busy(true);
  lock();
  ++counts.quanta;
  switch_out(m, State::ready);
  set_busy(false);
}

std::int64_t stamp() {
  if (Member* m = active()) return m->shown;
  return latest.load(std::memory_order_relaxed);
}

void advance_to(std::int64_t t) {
  Member* m = active();
  if (!m || t <= m->shown) return;  // shown is never ahead of the clock: no read needed
  set_busy(true);  // a pause between the read and the write would lose its own time
  std::int64_t c = running_clock(m);
  if (t > c) {
    set_clock0(m, m->clock0 + (t - c));
    m->shown = t;
  }
  set_busy(false);
}

void charge(std::int64_t ns, Cost what) {
  Member* m = active();
  if (!m || ns <= 0) return;
  set_busy(true);
  set_clock0(m, m->clock0 + ns);
  m->shown += ns;
  set_busy(false);
  // One member runs at a time, but report() may read meanwhile: relaxed atomics.
  charged[static_cast<int>(what)].fetch_add(ns, std::memory_order_relaxed);
}

void leave() {
  Member* m = active();
  if (!m) return;
  set_busy(true);
  lock();
  m->left_real = real_ns();
  m->quantum_due = false;
  switch_out(m, State::outside);
  outside = true;  // until rejoin: a non-member (active() is null)
  set_busy(false);
  pin_to_member_cpu(false);
}

void rejoin() {
  Member* m = self;
  if (!m || !outside) return;
  pin_to_member_cpu(true);
  set_busy(true);
  outside = false;
  lock();
  m->clock += real_ns() - m->left_real;
  m->state = State::ready;
  Member* granted = grant_if_free();
  unlock();
  wake_granted(granted);
  while (m->turn.load(std::memory_order_acquire) == 0) kernel_wait(&m->turn, 0, nullptr);
  begin_turn(m);
  set_busy(false);
}

}  // namespace nugo::detail::vtime
