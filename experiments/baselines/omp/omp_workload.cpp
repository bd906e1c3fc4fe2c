// omp-workload: the OpenMP twin of nugo-workload (GCC's libgomp; experiments/baselines/README.md,
// "The peers").
//
// Written as an OpenMP programmer writes each kernel:
//   - the fork-join kernels with `#pragma omp task` and `taskwait` inside one parallel region's
//     `single`: a task per call or child where nugo starts a goroutine, and no serial cut-off
//     where nugo has none. skynet's sums come back through the join: OpenMP has no channels.
//   - the memory-bound kernels with `parallel for schedule(static)`, the data first touched by
//     the same static schedule, so that each thread's pages are on its node when the threads
//     are bound (OMP_PROC_BIND) and spread: OpenMP's NUMA practice. The stencil keeps one
//     parallel region over all its sweeps; the histogram is an array reduction. OpenMP places
//     data by where the threads touch it, not by a node the program names, so triad_skew's
//     three-to-one split does not exist for it: on any machine it is the triad.
//
// --procs N is the team size (omp_set_num_threads). --bind pu runs with OMP_PROC_BIND=close and
// OMP_PLACES=threads (thread k on the k-th hardware thread: nugo's NUGO_BIND=pu), --bind none
// with OMP_PROC_BIND=false. libgomp reads them when it is loaded, before main: so when they
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

const char* env_or(const char* name, const char* otherwise) {
  const char* v = std::getenv(name);
  return v ? v : otherwise;
}

twin::Started start(int procs, twin::Bind bind, char** argv) {
  const char* want_bind = bind == twin::Bind::pu ? "close" : "false";
  const char* want_places = bind == twin::Bind::pu ? "threads" : nullptr;
  const char* places = std::getenv("OMP_PLACES");
  const bool places_ok = want_places ? places && std::strcmp(places, want_places) == 0 : places == nullptr;
  if (std::strcmp(env_or("OMP_PROC_BIND", ""), want_bind) != 0 || !places_ok) {
    if (std::getenv("OMP_WORKLOAD_REEXECUTED"))  // set before the first execution: libgomp ignored them
      throw std::runtime_error(std::string("OMP_PROC_BIND=") + want_bind + " did not take effect");
    setenv("OMP_PROC_BIND", want_bind, 1);
    if (want_places) setenv("OMP_PLACES", want_places, 1);
    else unsetenv("OMP_PLACES");
    setenv("OMP_WORKLOAD_REEXECUTED", "1", 1);
    execv("/proc/self/exe", argv);
    throw std::runtime_error(std::string("could not execute itself again with OMP_PROC_BIND set: ") + std::strerror(errno));
  }
  omp_set_num_threads(procs);
  twin::Started started;
  started.bind = omp_get_proc_bind() == omp_proc_bind_false ? twin::Bind::none : twin::Bind::pu;
  started.env = std::string("OMP_PROC_BIND=") + want_bind + (want_places ? std::string(" OMP_PLACES=") + want_places : "") +
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
    for (long i = 0; i < n; ++i) a[i] = b[i] + workloads::kTriadScale * c[i];
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
    for (long r = 1; r < rows - 1; ++r)
      for (long c = 1; c < rows - 1; ++c)
        o[r * rows + c] = workloads::stencil_cell(g[(r - 1) * rows + c], g[(r + 1) * rows + c], g[r * rows + c - 1],
                                                  g[r * rows + c + 1]);
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
    const auto start = workloads::Clock::now();
    std::fill(buckets, buckets + 256, 0);
#pragma omp parallel for schedule(static) reduction(+ : buckets[:256])
    for (long i = 0; i < n; ++i) ++buckets[input[i]];
    seconds += workloads::seconds_since(start);
  }
  return seconds;
}

double spmv(const std::size_t* ptr, std::uint32_t* col, double* val, double* x, double* y, std::size_t rows, int passes) {
  const long n = signed_size(rows);
#pragma omp parallel for schedule(static)
  for (long row = 0; row < n; ++row) {
    const auto r = static_cast<std::size_t>(row);
    y[r] = 0;
    x[r] = workloads::spmv_x(r);
    for (std::size_t i = ptr[r], j = 0; i < ptr[r + 1]; ++i, ++j) {
      col[i] = static_cast<std::uint32_t>(workloads::spmv_column(rows, r, j));
      val[i] = workloads::spmv_value(r, j);
    }
  }
  const auto start = workloads::Clock::now();
  for (int pass = 0; pass < passes; ++pass) {
#pragma omp parallel for schedule(static)
    for (long row = 0; row < n; ++row) {
      double sum = 0;
      for (std::size_t i = ptr[row]; i < ptr[row + 1]; ++i) sum += val[i] * x[col[i]];
      y[row] = sum;
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
  return twin::main(argc, argv, {"omp-workload", "omp", k, [argv](int procs, twin::Bind bind) { return start(procs, bind, argv); }});
}
