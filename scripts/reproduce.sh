#!/usr/bin/env bash
# The experiment pipeline, one command on a fresh machine: bootstrap, a Release build, the
# workload sweep (flat mode, NUMA mode, Go and the C++ peers oneTBB, OpenMP and Boost.Fiber; on a
# one-node machine also on emulated 2-, 4- and 24-node topologies, labelled emulated), the ablation that separates placement from the stealing
# hierarchy at a range of the latency model's remote penalties, the micro-benchmarks, preemption, network, NUMA-policy
# and tracer comparisons, NUMA mode against flat mode on virtual machines of 32 to 384 CPUs in
# virtual time (a second, virtual-time build: sweep.py --topology virtual), every figure, the paper's numbers, and the paper itself when TeX is
# installed (scripts/bootstrap.sh --paper).
#
#   scripts/reproduce.sh            the default run (about 45 minutes on 2 cores)
#   scripts/reproduce.sh --quick    every workload at a tiny size, one repetition (CI's smoke)
#   scripts/reproduce.sh --full     for a real multi-socket machine: every P count, large sizes
#   --only W,...      the sweep of these workloads only, and none of the other comparisons
#   --modes M,...     flat, numa, go, go_numactl (Go per node), tbb, omp, fiber (the peers)
#   --procs N,...     P counts
#   --topology T,...  machine, 2node, 4node, 24node, xml:PATH, synthetic:DESC (scripts/pipeline/sweep.py;
#                     the virtual set is a step of its own)
#   --out DIR         results directory (default results/<UTC time>; results/latest points at it)
#   --build-dir DIR   use this existing build (any build type) as it is: no bootstrap, no
#                     configure, only the targets built (ctest runs the pipeline this way)
#   --virtual-build-dir DIR  the virtual-time build (-DNUGO_VIRTUAL_TIME=ON) for the virtual
#                     set; without it, reproduce.sh makes build-release-virtual, or with
#                     --build-dir leaves the virtual set out, saying so
#   --rehearsal WHY   label everything the run writes a rehearsal (scripts/dev/numa-check.sh
#                     --reproduce: the pipeline inside a QEMU guest), whose timings are no results
#
# Results: DIR/results.csv (one row per workload run, with the runtime's counters),
# DIR/machine.json, DIR/sweep.md, DIR/{ablation,micro,preempt,net,numa,trace,virtual,virtual-validation,sensitivity,hierarchy}/, DIR/logs/, DIR/figures/,
# DIR/generated/numbers.tex, DIR/paper/paper.pdf, and DIR/reproduce.log (the output of the
# experiments, from the sweep on). A complete default or --full run (no --only, --modes,
# --procs, --topology, --out, --build-dir or --virtual-build-dir) also publishes its figures and numbers to
# paper/figures/ and paper/generated/, the committed ones; no other run touches them.
# Bad input (an unknown workload, a missing topology file, a P count out of range) exits with
# status 2 before any experiment runs; a failed experiment makes the exit status 1 at the end.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
# The experiments set the runtime's environment themselves; a NUGO_* variable left exported
# (NUGO_TOPOLOGY, say) would change results that are labelled as this machine's.
for v in $(compgen -v NUGO_); do unset "$v"; done

usage() {
  echo "usage: scripts/reproduce.sh [--quick | --full] [--only W,...] [--modes M,...] [--procs N,...]" >&2
  echo "                            [--topology T,...] [--out DIR] [--build-dir DIR] [--virtual-build-dir DIR]" >&2
  echo "                            [--rehearsal WHY]" >&2
  exit 2
}

profile=default
sweep_args=()
only=""
out=""
build=""
vbuild=""
rehearsal=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) [ "$profile" = full ] && { echo "reproduce.sh: --quick and --full exclude each other" >&2; exit 2; }
             profile=quick ;;
    --full) [ "$profile" = quick ] && { echo "reproduce.sh: --quick and --full exclude each other" >&2; exit 2; }
            profile=full ;;
    --only|--modes|--procs|--topology|--out|--build-dir|--virtual-build-dir|--rehearsal)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "reproduce.sh: $1 needs a value" >&2; usage; }
      case "$1" in
        --out) out=$(absolute "$2") ;;
        --build-dir) build=$(absolute "$2") ;;
        --virtual-build-dir) vbuild=$(absolute "$2") ;;
        --rehearsal) rehearsal=(--rehearsal "$2") ;;
        --only) only=$2; sweep_args+=("$1" "$2") ;;
        --topology)  # xml: paths relative to the caller, like --out
          topologies=()
          IFS=, read -ra parts <<<"$2"
          for t in "${parts[@]}"; do
            case "$t" in xml:/*) ;; xml:*) t="xml:$(absolute "${t#xml:}")" ;; esac
            topologies+=("$t")
          done
          sweep_args+=("$1" "$(IFS=,; echo "${topologies[*]}")") ;;
        *) sweep_args+=("$1" "$2") ;;
      esac
      shift ;;
    -h|--help) usage ;;
    *) echo "reproduce.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
profile_flag=()
[ "$profile" != default ] && profile_flag=("--$profile")
# What needs no build is checked before the bootstrap and the build (the rest, the workload
# names and each topology's size, by sweep.py --dry-run below, still before any experiment).
set -f  # the lists below are split on commas, never globbed
for ((i = 0; i < ${#sweep_args[@]}; i += 2)); do
  value=${sweep_args[i + 1]}
  case "${sweep_args[i]}" in
    --modes) for m in ${value//,/ }; do
               case "$m" in flat|numa|go|go_numactl|tbb|omp|fiber) ;;
                 *) echo "reproduce.sh: --modes: unknown mode '$m' (flat, numa, go, go_numactl, tbb, omp or fiber)" >&2; exit 2 ;;
               esac
             done ;;
    --procs) for n in ${value//,/ }; do
               [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 1024 ] ||
                 { echo "reproduce.sh: --procs: '$n' is not a P count from 1 to 1024" >&2; exit 2; }
             done ;;
    --topology) for t in ${value//,/ }; do
                  case "$t" in
                    xml:*) [ -f "${t#xml:}" ] || { echo "reproduce.sh: --topology $t: no such file" >&2; exit 2; } ;;
                    virtual|v2x16|v4x24|v24x16)
                      echo "reproduce.sh: --topology $t: the virtual set is a step of its own (it runs unless --only is given)" >&2
                      exit 2 ;;
                  esac
                done ;;
  esac
done
set +f
# The virtual set is one of the comparisons --only leaves out, and a rehearsal (a QEMU guest)
# has no virtual-time build: neither runs it.
vbuild_given=$vbuild
if [ -n "$vbuild" ] && { [ -n "$only" ] || [ ${#rehearsal[@]} -gt 0 ]; }; then
  echo "reproduce.sh: --virtual-build-dir is ignored with --only or --rehearsal (the virtual set does not run)"
  vbuild=""
fi

py=/usr/bin/python3  # Debian's, with matplotlib and tabulate
targets=(nugo-workload nugo-topo)
[ -z "$only" ] && targets+=(nugo-bench nugo-locality nugo-preempt-bench nugo-floor nugo-http nugo-echo)
own_build=""
if [ -z "$build" ]; then
  bash scripts/bootstrap.sh --baselines
  build=build-release
  own_build=1
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNUGO_BUILD_TESTS=OFF -DNUGO_SANITIZE= \
    -DNUGO_FUZZ=OFF -DNUGO_THREAD_SAFETY=OFF -DCMAKE_CXX_FLAGS= >/dev/null
elif [ ! -f "$build/CMakeCache.txt" ]; then
  echo "reproduce.sh: --build-dir $build: not a configured build directory" >&2
  exit 2
fi
# The twins of Boost.Fiber, oneTBB and OpenMP exist only where CMake found them (bootstrap.sh
# --baselines); the sweep leaves out, with a message, a peer that was not built.
available=$(cmake --build "$build" --target help)
for twin in fiber-bench fiber-workload tbb-workload omp-workload; do
  case "$twin" in fiber-bench) [ -n "$only" ] && continue ;; esac
  grep -q "^$twin:" <<<"$available" && targets+=("$twin")
done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
# The virtual set (NUMA against flat on virtual many-CPU machines) needs the virtual-time build:
# the same sources with -DNUGO_VIRTUAL_TIME=ON, Release (core/src/vtime/README.md).
if [ -z "$only" ] && [ ${#rehearsal[@]} -eq 0 ]; then
  if [ -z "$vbuild" ] && [ -n "$own_build" ]; then
    vbuild=build-release-virtual
    cmake -S . -B "$vbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNUGO_VIRTUAL_TIME=ON -DNUGO_BUILD_TESTS=OFF \
      -DNUGO_SANITIZE= -DNUGO_FUZZ=OFF -DNUGO_THREAD_SAFETY=OFF -DCMAKE_CXX_FLAGS= >/dev/null
  fi
  if [ -n "$vbuild" ]; then
    grep -q '^NUGO_VIRTUAL_TIME:BOOL=ON' "$vbuild/CMakeCache.txt" 2>/dev/null ||
      { echo "reproduce.sh: --virtual-build-dir $vbuild: not configured with -DNUGO_VIRTUAL_TIME=ON" >&2; exit 2; }
    cmake --build "$vbuild" -j "$(nproc)" --target nugo-workload nugo-topo
  fi
fi

# Everything the sweep will be asked is checked before anything runs (status 2 on bad input).
$py scripts/pipeline/sweep.py --build-dir "$build" --out /dev/null --dry-run "${profile_flag[@]}" "${sweep_args[@]}"

publish=""
if [ -z "$out" ]; then
  out=results/$(date -u +%Y-%m-%dT%H-%M-%SZ)
  # Only a complete run, of the Release build this script made from committed sources, may
  # replace the paper's figures.
  if [ "$profile" != quick ] && [ ${#sweep_args[@]} -eq 0 ] && [ -n "$own_build" ] && [ -z "$vbuild_given" ] &&
     [ ${#rehearsal[@]} -eq 0 ]; then
    if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
      echo "reproduce.sh: uncommitted changes: this run will not replace paper/figures and paper/generated"
    else
      publish=1
    fi
  fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out" in "$PWD"/results/*) ln -sfn "$out" results/latest ;; esac
exec > >(tee "$out/reproduce.log") 2>&1
tee_pid=$!
finish() {  # the exit status, once tee has written the whole log
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null || true
  exit "$1"
}

steps=(sweep)
[ -z "$only" ] && steps+=(ablation micro preempt net numa trace)
[ -n "$vbuild" ] && steps+=(virtual)
steps+=(plot paper)
started=$(date +%s)
step=0
begin() {
  step=$((step + 1))
  local now=$(date +%s)
  echo
  echo "=== reproduce.sh: step $step of ${#steps[@]}: $1 (elapsed $(( (now - started) / 60 ))m$(( (now - started) % 60 ))s) ==="
}
failed=()
quick=()
[ "$profile" = quick ] && quick=(--quick)

"$build/topology/nugo-topo" | sed -n 1,12p

begin "workload sweep (scripts/pipeline/sweep.py)"
$py scripts/pipeline/sweep.py --build-dir "$build" --out "$out" "${profile_flag[@]}" "${sweep_args[@]}" ${rehearsal[@]+"${rehearsal[@]}"} ||
  failed+=(sweep)
if [ -z "$only" ]; then
  begin "the ablation: placement and the stealing hierarchy, by remote penalty (scripts/pipeline/ablation.py)"
  $py scripts/pipeline/ablation.py --build-dir "$build" --out "$out/ablation" "${profile_flag[@]}" || failed+=(ablation)
  begin "micro-benchmarks beside Go and Boost.Fiber (scripts/pipeline/micro.py)"
  $py scripts/pipeline/micro.py --build-dir "$build" --out "$out/micro" "${quick[@]}" || failed+=(micro)
  begin "sysmon, preemption and system calls beside Go (scripts/pipeline/preempt.py)"
  $py scripts/pipeline/preempt.py --build-dir "$build" --out "$out/preempt" "${quick[@]}" || failed+=(preempt)
  begin "HTTP under wrk and TCP echo beside Go (scripts/pipeline/net.py)"
  $py scripts/pipeline/net.py --build-dir "$build" --out "$out/net" "${quick[@]}" || failed+=(net)
  begin "NUMA mode against flat mode, and the policies (scripts/pipeline/numa.py, numa_policies.py)"
  $py scripts/pipeline/numa.py "$build" "$out/numa" "${quick[@]}" || failed+=(numa)
  $py scripts/pipeline/numa_policies.py "$build" "$out/numa" "${quick[@]}" || failed+=(numa_policies)
  begin "the execution tracer's cost and a timeline (scripts/pipeline/tracer.py)"
  $py scripts/pipeline/tracer.py "$build" "$out/trace" "${quick[@]}" || failed+=(trace)
fi
if [ -n "$vbuild" ]; then
  # VIRTUAL TIME: every row says clock = virtual. Ten repetitions (the sweep's default), every
  # model constant given (catalogue.VIRTUAL_MODEL), every run seeded; flat and NUMA mode only
  # (Go and the peers cannot run in it).
  begin "NUMA mode against flat mode on virtual machines of 28 to 384 CPUs, in virtual time (scripts/pipeline/sweep.py --topology virtual, virtual.py, sensitivity.py, hierarchy.py)"
  $py scripts/pipeline/sweep.py --build-dir "$build" --virtual-build-dir "$vbuild" --topology virtual --modes flat,numa \
    --out "$out/virtual" "${profile_flag[@]}" || failed+=(virtual)
  # Virtual time's validation: agreement with real time at 1 and 2 Ps, fork-join on 1 to 256
  # virtual CPUs against the work and span laws, a greedy envelope and the steal bound, and
  # determinism (scripts/pipeline/virtual.py); then the virtual verdicts against the model's
  # constants, each halved and doubled (sensitivity.py: reduced sizes by default, whole under --full).
  vfull=()
  [ "$profile" = full ] && vfull=(--full)
  $py scripts/pipeline/virtual.py --build-dir "$vbuild" --out "$out/virtual-validation" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} ||
    failed+=(virtual-validation)
  $py scripts/pipeline/sensitivity.py --build-dir "$vbuild" --out "$out/sensitivity" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} ||
    failed+=(sensitivity)
  # The stealing hierarchy on trial: the ablation's arms at one P per CPU on the Cluster-on-Die,
  # 4-socket and 24-node machines (--full: the 2-socket one too), at three levels of the model.
  $py scripts/pipeline/hierarchy.py --build-dir "$vbuild" --out "$out/hierarchy" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} ||
    failed+=(hierarchy)
elif [ -z "$only" ]; then
  echo "reproduce.sh: the virtual set is left out: no virtual-time build (--virtual-build-dir DIR;"
  echo "  scripts/test.sh --virtual makes build-virtual/)"
fi

begin "figures and the paper's numbers (scripts/pipeline/plot.py)"
$py scripts/pipeline/plot.py "$out" || failed+=(plot)

begin "the paper (latexmk)"
rm -rf "$out/paper"
mkdir -p "$out/paper"
cp paper/paper.tex paper/references.bib paper/constants.tex paper/published.tex "$out/paper/"
cp -r "$out/figures" "$out/generated" "$out/paper/" 2>/dev/null || true
if command -v latexmk >/dev/null && command -v pdflatex >/dev/null; then
  if (cd "$out/paper" && latexmk -pdf -interaction=nonstopmode -halt-on-error paper.tex >latexmk.log 2>&1); then
    echo "reproduce.sh: built $out/paper/paper.pdf"
  else
    tail -n 30 "$out/paper/latexmk.log"
    failed+=(paper)
  fi
else
  echo "reproduce.sh: no TeX here, so no PDF: the figures are in $out/figures; for the PDF run"
  echo "  scripts/bootstrap.sh --paper && scripts/reproduce.sh"
fi

if [ -n "$publish" ] && [ ${#failed[@]} -eq 0 ]; then
  mkdir -p paper/figures paper/generated
  rm -f paper/figures/*.png paper/generated/*.tex paper/generated/results.md paper/paper.pdf  # nothing stale stays
  cp "$out"/figures/*.png paper/figures/ 2>/dev/null || true
  cp "$out"/generated/*.tex "$out"/generated/results.md paper/generated/
  if [ -f "$out/paper/paper.pdf" ]; then cp "$out/paper/paper.pdf" paper/paper.pdf; fi
  echo "reproduce.sh: published the figures and numbers to paper/figures/ and paper/generated/"
fi

echo
echo "=== reproduce.sh: done in $(( ($(date +%s) - started) / 60 ))m$(( ($(date +%s) - started) % 60 ))s ==="
[ -f "$out/sweep.md" ] && sed -n '3,200p' "$out/sweep.md"
echo
echo "results: $out (results.csv, machine.json, sweep.md, figures/, generated/results.md, generated/numbers.tex, logs/)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "reproduce.sh: FAILED: ${failed[*]} (see $out/reproduce.log)" >&2
  finish 1
fi
finish 0
