// omp-workload: the OpenMP twin of nugo-workload (GCC's libgomp; experiments/baselines/README.md,
// "The peers").
//
// Written as an OpenMP programmer writes each kernel:
//   - the fork-join kernels with `#pragma omp task` and `taskwait` inside one parallel region's
//     `single`: a task per call or child where nugo starts a goroutine, and no serial cut-off
//     where nugo has none. skynet's sums come back through the join: OpenMP has no channels.
//   - the memory-bound kernels with `parallel for schedule(static)` (spmv: a static partition
//     of its rows balanced by non-zeros, its rows being skewed), the data first touched by
//     the same static schedule, so that each thread's pages are on its node when the threads
//     are bound (OMP_PROC_BIND) and spread: OpenMP's NUMA practice. The stencil keeps one
//     parallel region over all its sweeps; the histogram is an array reduction. OpenMP places
//     data by where the threads touch it, not by a node the program names, so triad_skew's
//     three-to-one split does not exist for it: it would be the triad, and is not offered.
//
// --procs N is the team size (omp_set_num_threads). --bind pu runs with OMP_PROC_BIND=close and
// OMP_PLACES={a},{b},... from --cpus (thread k on nugo's P k's CPU; without --cpus,
// OMP_PLACES=threads), --bind none with OMP_PROC_BIND=false. libgomp reads them when it is loaded, before main: so when they
// differ from what --bind asks, the twin sets them and executes itself again. The row records
// them (runtime_env), with OMP_WAIT_POLICY and GOMP_SPINCOUNT when set.
#include <omp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>

#include "../cpp/twin.hpp"

namespace {

// ---- the runtime ----

twin::Started start(int procs, const twin::Placement& where, int argc, char** argv) {
  // pu: thread k on place k, the k-th CPU of --cpus (nugo's Ps' CPUs), else the k-th hardware
  // thread; none: no binding, and no places.
  const bool pin = where.bind == twin::Bind::pu;
  const char* want_bind = pin ? "close" : "false";
  std::string want_places;
  if (pin && !where.nodes.empty()) {
    for (int cpu : where.cpus()) want_places += (want_places.empty() ? "{" : ",{") + std::to_string(cpu) + "}";
  } else if (pin) {
    want_places = "threads";
  }
  const char* bind_now = std::getenv("OMP_PROC_BIND");
  const char* places_now = std::getenv("OMP_PLACES");
  if (!bind_now || std::strcmp(bind_now, want_bind) != 0 || want_places != (places_now ? places_now : "")) {
    if (std::getenv("OMP_WORKLOAD_REEXECUTED"))  // set for this execution: libgomp ignored them?
      throw std::runtime_error(std::string("OMP_PROC_BIND=") + want_bind + " OMP_PLACES=" + want_places +
                               " did not take effect");
    setenv("OMP_PROC_BIND", want_bind, 1);
    if (pin) setenv("OMP_PLACES", want_places.c_str(), 1);
    else unsetenv("OMP_PLACES");
    setenv("OMP_WORKLOAD_REEXECUTED", "1", 1);
    // libgomp, loaded with binding on, has bound this thread to its first place, and the
    // binding would outlive the exec: give the next libgomp the CPUs it is to place on. (Loaded
    // without binding, it left the caller's CPUs alone, a taskset's say: they stay.)
    if (bind_now && std::strcmp(bind_now, "false") != 0) {
      cpu_set_t cpus;
      CPU_ZERO(&cpus);
      for (int cpu : where.nodes.empty() ? twin::online_cpus() : where.cpus()) CPU_SET(cpu, &cpus);
      sched_setaffinity(0, sizeof cpus, &cpus);
    }
    // The worker count explicitly: the default, the CPUs this process may use, would be the
    // narrowed mask's.
    std::vector<char*> args(argv, argv + argc);
    std::string count = std::to_string(procs);
    char flag[] = "--procs";
    args.push_back(flag);
    args.push_back(count.data());
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    throw std::runtime_error(std::string("could not execute itself again with OMP_PROC_BIND set: ") + std::strerror(errno));
  }
  omp_set_num_threads(procs);
  // The team, made now (so that its threads' creation is not in the first kernel's time), and
  // checked: the size asked (OMP_DYNAMIC or OMP_THREAD_LIMIT could shrink it) and one place each.
  int team = 0, places = omp_get_num_places();
#pragma omp parallel
#pragma omp single
  team = omp_get_num_threads();
  if (team != procs) throw std::runtime_error("a team of " + std::to_string(team) + " threads, not " + std::to_string(procs));
  if (pin && places < procs)
    throw std::runtime_error("OMP_PLACES=" + want_places + " gives " + std::to_string(places) + " places for " +
                             std::to_string(procs) + " threads");
  twin::Started started;
  started.bind = omp_get_proc_bind() == omp_proc_bind_false ? twin::Bind::none : twin::Bind::pu;
  started.env = std::string("OMP_PROC_BIND=") + want_bind + (pin ? " OMP_PLACES=" + want_places : "") +
                " OMP_NUM_THREADS=" + std::to_string(procs);
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name)) started.env += std::string(" ") + name + "=" + v;
  return started;
}

// Runs f() on one thread of a parallel region (the root of a task tree) and returns its value.
template <class F>
auto in_team(F f) {
  decltype(f()) result{};
#pragma omp parallel
#pragma omp single
  result = f();
  return result;
}

// ---- fork-join ----

long fib(int n) {
  if (n < 2) return n;
  long first = 0;
#pragma omp task shared(first) firstprivate(n)
  first = fib(n - 1);
  const long second = fib(n - 2);
#pragma omp taskwait
  return first + second;
}

long skynet(long num, long size) {
  if (size == 1) return num;
  std::array<long, workloads::kSkynetFanOut> sums{};
  const long child = size / workloads::kSkynetFanOut;
  for (long i = 0; i < workloads::kSkynetFanOut; ++i) {
#pragma omp task shared(sums) firstprivate(i, num, child)
    sums[static_cast<std::size_t>(i)] = skynet(num + i * child, child);
  }
#pragma omp taskwait
  long sum = 0;
  for (long s : sums) sum += s;
  return sum;
}

long uts_count(const workloads::uts::State& s, int depth, const workloads::uts::Tree& t) {
  const int n = workloads::uts::children(s, depth, t);
  if (n == 0) return 1;
  std::vector<long> sub(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
#pragma omp task shared(sub, s, t) firstprivate(i, depth)
    sub[static_cast<std::size_t>(i)] = uts_count(workloads::uts::child(s, static_cast<std::uint32_t>(i)), depth + 1, t);
  }
#pragma omp taskwait
  long total = 1;
  for (long c : sub) total += c;
  return total;
}

long queens(int n, int row, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti) {
  if (row >= workloads::nqueens::spawn_rows(n)) return workloads::nqueens::serial(n, row, cols, diag, anti);
  const std::vector<std::uint32_t> bits = workloads::nqueens::free_bits(n, cols, diag, anti);
  std::vector<long> sub(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
#pragma omp task shared(sub, bits) firstprivate(i, n, row, cols, diag, anti)
    sub[i] = queens(n, row + 1, cols | bits[i], (diag | bits[i]) << 1, (anti | bits[i]) >> 1);
  }
#pragma omp taskwait
  long total = 0;
  for (long s : sub) total += s;
  return total;
}

void sort(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t hi) {
  if (hi - lo <= workloads::mergesort::kSerialBelow) {
    workloads::mergesort::serial_sort(v, tmp, lo, hi);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
#pragma omp task firstprivate(v, tmp, lo, mid)
  sort(v, tmp, lo, mid);
  sort(v, tmp, mid, hi);
#pragma omp taskwait
  workloads::mergesort::merge(v, tmp, lo, mid, hi);
}

// ---- memory-bound: static schedules, first touch by the same schedule ----

long signed_size(std::size_t n) { return static_cast<long>(n); }

double triad(double* a, double* b, double* c, std::size_t total, int passes, int /*heavy: see above*/) {
  const long n = signed_size(total);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = workloads::triad_b(static_cast<std::size_t>(i));
    c[i] = 2.0;
  }
  const auto start = workloads::Clock::now();
  for (int pass = 0; pass < passes; ++pass) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + workloads::kTriadScale * c[i];  // triad_range's element
  }
  return workloads::seconds_since(start);
}

double stencil(double* g, double* o, std::size_t n, int sweeps) {
  const long rows = signed_size(n);
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < n; ++c)
      g[r * rows + c] = o[r * rows + c] = workloads::stencil_initial(n, static_cast<std::size_t>(r), c);
  const auto start = workloads::Clock::now();
#pragma omp parallel firstprivate(g, o)
  for (int sweep = 0; sweep < sweeps; ++sweep) {
#pragma omp for schedule(static)
    for (long r = 1; r < rows - 1; ++r) workloads::stencil_row(g + (r - 1) * rows, g + r * rows, g + (r + 1) * rows, o + r * rows, n);
    std::swap(g, o);  // each thread its own copies of the two pointers, after the loop's barrier
  }
  return workloads::seconds_since(start);
}

double histogram(std::uint8_t* input, std::size_t total, int passes, std::uint64_t* buckets) {
  const long n = signed_size(total);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) input[i] = workloads::histogram_input(static_cast<std::size_t>(i));
  double seconds = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::uint64_t* counts = buckets + 256 * pass;
    const auto start = workloads::Clock::now();
#pragma omp parallel for schedule(static) reduction(+ : counts[:256])
    for (long i = 0; i < n; ++i) ++counts[input[i]];
    seconds += workloads::seconds_since(start);
  }
  return seconds;
}

// The rows of thread t of T: a static partition balanced by non-zeros (the rows whose first
// non-zero falls in [nnz t / T, nnz (t + 1) / T)), as an OpenMP programmer balances skewed rows
// while keeping a static schedule, and with it first touch, for locality.
std::pair<std::size_t, std::size_t> my_rows(const std::size_t* ptr, std::size_t rows) {
  const auto t = static_cast<std::size_t>(omp_get_thread_num()), team = static_cast<std::size_t>(omp_get_num_threads());
  auto row_at = [&](std::size_t k) {  // the last thread's end is the last row's, empty rows or not
    return k == team ? rows : static_cast<std::size_t>(std::lower_bound(ptr, ptr + rows, ptr[rows] * k / team) - ptr);
  };
  return {row_at(t), row_at(t + 1)};
}

double spmv(const std::size_t* ptr, std::uint32_t* col, double* val, double* x, double* y, std::size_t rows, int passes) {
#pragma omp parallel
  {
    const auto [lo, hi] = my_rows(ptr, rows);
    workloads::spmv_fill(rows, 0, ptr, col, val, y, lo, hi);
#pragma omp for schedule(static)
    for (long i = 0; i < signed_size(rows); ++i) x[i] = workloads::spmv_x(static_cast<std::size_t>(i));
  }
  const auto start = workloads::Clock::now();
  for (int pass = 0; pass < passes; ++pass) {
#pragma omp parallel
    {
      const auto [lo, hi] = my_rows(ptr, rows);
      workloads::spmv_rows(ptr, col, val, x, y, lo, hi);
    }
  }
  return workloads::seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  twin::Kernels k;
  k.fib = [](int n) { return in_team([n] { return fib(n); }); };
  k.skynet = [](long leaves) { return in_team([leaves] { return skynet(0, leaves); }); };
  k.uts = [](const workloads::uts::Tree& t) { return in_team([&t] { return uts_count(workloads::uts::root(t.seed), 0, t); }); };
  k.nqueens = [](int n) { return in_team([n] { return queens(n, 0, 0, 0, 0); }); };
  k.mergesort = [](std::uint64_t* v, std::uint64_t* tmp, std::size_t n) {
    in_team([=] {
      sort(v, tmp, 0, n);
      return 0;
    });
  };
  k.triad = triad;
  k.stencil = stencil;
  k.histogram = histogram;
  k.spmv = spmv;
  k.places_data_by_node = false;  // no triad_skew: see above
  return twin::main(argc, argv, {"omp-workload", "omp", k, [argc, argv](int procs, const twin::Placement& where) {
                                   return start(procs, where, argc, argv);
                                 }});
}
