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
# DIR/generated/numbers.tex (and numbers.json), DIR/claims.md and claims.json (the paper's claims
# judged on this run: holds, does not hold, inconclusive, not applicable), DIR/index.html (the
# report: open it in a browser), DIR/paper/paper.pdf, DIR/run.json (revision, build, arguments,
# each step's status and time) and DIR/reproduce.log. A run writes nothing outside DIR (and
# results/latest, and its builds): copying a run into paper/ is scripts/dev/publish.sh's, a
# maintainer's step.
#   --resume DIR      continue an interrupted run: the same arguments, the steps not done, the
#                     sweep's unfinished runs only; refused unless the clone is at the run's
#                     revision with the same uncommitted changes (none, or the same), and the build's executables are the ones that began it
# It prints its estimate (the plan of runs and a calibration here) before the first step and its
# total at the end.
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
  echo "       scripts/reproduce.sh --resume DIR" >&2
  exit 2
}

py=/usr/bin/python3  # Debian's, with matplotlib and tabulate
# --resume DIR: the interrupted run's own arguments (run.json), refused if they cannot be reused.
resume=""
if [ "${1:-}" = --resume ]; then
  [ $# -eq 2 ] && [ -n "$2" ] || { echo "reproduce.sh: --resume takes one results directory and nothing else" >&2; usage; }
  resume=$(absolute "$2")
  [ -d "$resume" ] && resume=$(cd "$resume" && pwd -P)  # results/latest is a link: the run itself
  saved=$($py scripts/pipeline/manifest.py resume "$resume") || exit 2
  mapfile -t saved_args <<<"$saved"
  [ -z "$saved" ] && saved_args=()
  set -- ${saved_args[@]+"${saved_args[@]}"} --out "$resume"
  echo "reproduce.sh: resuming $resume with: ${saved_args[*]:-(the default run)}"
fi
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
plan=$($py scripts/pipeline/sweep.py --build-dir "$build" --out /dev/null --dry-run "${profile_flag[@]}" "${sweep_args[@]}")
echo "$plan"
sweep_runs=$(sed -n 's/.*would run \([0-9]*\) runs.*/\1/p' <<<"$plan")

[ -z "$out" ] && out=results/$(date -u +%Y-%m-%dT%H-%M-%SZ)
if [ -n "$resume" ]; then
  # The same executables, byte for byte, or the run would mix two builds' numbers.
  $py scripts/pipeline/manifest.py check-build "$resume" --build "$build" ${vbuild:+--virtual-build "$vbuild"} || exit 2
elif [ -e "$out/run.json" ]; then
  echo "reproduce.sh: --out $out holds a run already (run.json): --resume it, or choose another directory" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
# One reproduce.sh at a time writes a run: a second, or a --resume while the first still runs,
# is refused.
exec 9>"$out/.lock"
flock -n 9 || { echo "reproduce.sh: another reproduce.sh is writing $out" >&2; exit 2; }
case "$out" in "$(pwd -P)"/results/*) ln -sfn "$out" results/latest ;; esac
exec > >(tee -a "$out/reproduce.log") 2>&1
tee_pid=$!
# Killed, a run takes its running step with it, down to the step's last descendant (a step left
# running is run again on --resume). Steps run in the background and are waited for, because
# bash runs a trap only once a foreground command has returned.
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null
}
stop_steps() {
  trap - TERM INT HUP
  local child
  for child in $(pgrep -P $$); do [ "$child" = "$tee_pid" ] || kill_tree "$child"; done
  finish 143
}
trap stop_steps TERM INT HUP
finish() {  # the exit status, once tee has written the whole log
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null || true
  exit "$1"
}

# The run's arguments as run.json keeps them for --resume: every path absolute.
run_args=(${profile_flag[@]+"${profile_flag[@]}"} ${sweep_args[@]+"${sweep_args[@]}"} ${rehearsal[@]+"${rehearsal[@]}"})
[ -z "$own_build" ] && run_args+=(--build-dir "$build")
[ -n "$vbuild_given" ] && run_args+=(--virtual-build-dir "$vbuild_given")
steps=(sweep)
[ -z "$only" ] && steps+=(ablation micro preempt net numa trace)
[ -n "$vbuild" ] && steps+=(virtual)
steps+=(plot claims paper report)
started=$(date +%s)
step=0
estimate=$($py scripts/pipeline/manifest.py estimate --profile "$profile" --build "$build" --sweep-runs "${sweep_runs:-0}" \
  ${vbuild:+--virtual} ${only:+--only} ${rehearsal[@]+--no-calibration})
$py scripts/pipeline/manifest.py init "$out" --profile "$profile" --build "$build" ${vbuild:+--virtual-build "$vbuild"} \
  --steps "$(IFS=,; echo "${steps[*]}")" --estimate "$estimate" ${resume:+--resuming} --args ${run_args[@]+"${run_args[@]}"}
clock() { echo "$(( $1 / 60 ))m$(( $1 % 60 ))s"; }
echo "reproduce.sh: ${#steps[@]} steps, estimated $(clock "$estimate") on this machine (run.json; the estimate's parts above)"
failed=()
quick=()
[ "$profile" = quick ] && quick=(--quick)
# run NAME TITLE FUNCTION: one step, recorded in run.json; on --resume a step already done is
# not run again.
run() {
  step=$((step + 1))
  local name=$1 title=$2 now t0 status=done
  now=$(date +%s)
  echo
  if [ -n "$resume" ] && [ "$($py scripts/pipeline/manifest.py status "$out" "$name")" = done ]; then
    echo "=== reproduce.sh: step $step of ${#steps[@]}: $title: done before, not run again ==="
    return
  fi
  echo "=== reproduce.sh: step $step of ${#steps[@]}: $title (elapsed $(clock $((now - started))), estimate $(clock "$estimate")) ==="
  $py scripts/pipeline/manifest.py step "$out" "$name" running
  t0=$(date +%s)
  "$3" &
  wait $! || status=failed
  [ "$status" = failed ] && failed+=("$name")
  $py scripts/pipeline/manifest.py step "$out" "$name" "$status" $(( $(date +%s) - t0 ))
}

"$build/topology/nugo-topo" | sed -n 1,12p

step_sweep() {
  $py scripts/pipeline/sweep.py --build-dir "$build" --out "$out" "${profile_flag[@]}" "${sweep_args[@]}" \
    ${rehearsal[@]+"${rehearsal[@]}"} ${resume:+--resume}
}
step_ablation() { $py scripts/pipeline/ablation.py --build-dir "$build" --out "$out/ablation" "${profile_flag[@]}"; }
step_micro() { $py scripts/pipeline/micro.py --build-dir "$build" --out "$out/micro" "${quick[@]}"; }
step_preempt() { $py scripts/pipeline/preempt.py --build-dir "$build" --out "$out/preempt" "${quick[@]}"; }
step_net() { $py scripts/pipeline/net.py --build-dir "$build" --out "$out/net" "${quick[@]}"; }
step_numa() {
  local rc=0
  $py scripts/pipeline/numa.py "$build" "$out/numa" "${quick[@]}" || rc=1
  $py scripts/pipeline/numa_policies.py "$build" "$out/numa" "${quick[@]}" || rc=1
  return $rc
}
step_trace() { $py scripts/pipeline/tracer.py "$build" "$out/trace" "${quick[@]}"; }
# VIRTUAL TIME: every row says clock = virtual. Ten repetitions (the sweep's default), every
# model constant given (catalogue.VIRTUAL_MODEL), every run seeded; flat and NUMA mode only (Go
# and the peers cannot run in it). Then virtual time's validation: agreement with real time at 1
# and 2 Ps, fork-join on 1 to 256 virtual CPUs against the work and span laws, a greedy envelope
# and the steal bound, and determinism (virtual.py); the virtual verdicts against the model's
# constants, each halved and doubled (sensitivity.py: reduced sizes by default, whole under
# --full); and the stealing hierarchy on trial: the ablation's arms at one P per CPU on the
# Cluster-on-Die, 4-socket and 24-node machines (--full: the 2-socket one too), at three levels
# of the model (hierarchy.py).
step_virtual() {
  local rc=0 vfull=()
  [ "$profile" = full ] && vfull=(--full)
  $py scripts/pipeline/sweep.py --build-dir "$build" --virtual-build-dir "$vbuild" --topology virtual --modes flat,numa \
    --out "$out/virtual" "${profile_flag[@]}" || rc=1
  $py scripts/pipeline/virtual.py --build-dir "$vbuild" --out "$out/virtual-validation" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} || rc=1
  $py scripts/pipeline/sensitivity.py --build-dir "$vbuild" --out "$out/sensitivity" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} || rc=1
  $py scripts/pipeline/hierarchy.py --build-dir "$vbuild" --out "$out/hierarchy" "${quick[@]}" ${vfull[@]+"${vfull[@]}"} || rc=1
  return $rc
}
step_plot() { $py scripts/pipeline/plot.py "$out"; }
step_claims() { $py scripts/pipeline/claims.py "$out" --quiet; }
# The paper, built inside the run from the clone's sources and the run's figures and numbers.
step_paper() {
  rm -rf "$out/paper"
  mkdir -p "$out/paper"
  cp paper/paper.tex paper/references.bib paper/constants.tex paper/published.tex paper/claims.toml "$out/paper/"
  cp -r "$out/figures" "$out/generated" "$out/paper/" 2>/dev/null || true
  if ! command -v latexmk >/dev/null || ! command -v pdflatex >/dev/null; then
    echo "reproduce.sh: no TeX here, so no PDF: the figures are in $out/figures; for the PDF run"
    echo "  scripts/bootstrap.sh --paper && scripts/reproduce.sh"
    return 0
  fi
  if (cd "$out/paper" && latexmk -pdf -interaction=nonstopmode -halt-on-error paper.tex >latexmk.log 2>&1); then
    echo "reproduce.sh: built $out/paper/paper.pdf"
    # The text's length in pages (acmart sigconf: at most twelve before the references). A run's
    # numbers may lengthen tables; that is worth a warning, not a failed run.
    refs=$(sed -n 's/^nugo-paper: the references start on page \([0-9]*\).*/\1/p' "$out/paper/paper.log" | tail -n 1)
    if [ -n "$refs" ] && [ "$refs" -gt 13 ]; then
      echo "reproduce.sh: warning: the paper's text runs to page $((refs - 1)) or $refs, beyond twelve pages"
    elif [ -n "$refs" ]; then
      echo "reproduce.sh: the paper's references start on page $refs"
    fi
  else
    tail -n 30 "$out/paper/latexmk.log"
    return 1
  fi
}
step_report() { $py scripts/pipeline/report.py "$out"; }

"$build/topology/nugo-topo" | sed -n 1,12p
run sweep "workload sweep (scripts/pipeline/sweep.py)" step_sweep
if [ -z "$only" ]; then
  run ablation "the ablation: placement and the stealing hierarchy, by remote penalty (scripts/pipeline/ablation.py)" step_ablation
  run micro "micro-benchmarks beside Go and Boost.Fiber (scripts/pipeline/micro.py)" step_micro
  run preempt "sysmon, preemption and system calls beside Go (scripts/pipeline/preempt.py)" step_preempt
  run net "HTTP under wrk and TCP echo beside Go (scripts/pipeline/net.py)" step_net
  run numa "NUMA mode against flat mode, and the policies (scripts/pipeline/numa.py, numa_policies.py)" step_numa
  run trace "the execution tracer's cost and a timeline (scripts/pipeline/tracer.py)" step_trace
fi
if [ -n "$vbuild" ]; then
  run virtual "NUMA mode against flat mode on virtual machines of 28 to 384 CPUs, in virtual time (sweep.py --topology virtual, virtual.py, sensitivity.py, hierarchy.py)" step_virtual
elif [ -z "$only" ]; then
  echo "reproduce.sh: the virtual set is left out: no virtual-time build (--virtual-build-dir DIR;"
  echo "  scripts/test.sh --virtual makes build-virtual/)"
fi
run plot "figures and the paper's numbers (scripts/pipeline/plot.py)" step_plot
run claims "the paper's claims judged on this run (scripts/pipeline/claims.py)" step_claims
run paper "the paper (latexmk)" step_paper
$py scripts/pipeline/manifest.py finish "$out"
run report "the report (scripts/pipeline/report.py): $out/index.html" step_report

total=$(( $(date +%s) - started ))
echo
echo "=== reproduce.sh: done in $(clock "$total") (estimated $(clock "$estimate")) ==="
[ -f "$out/sweep.md" ] && sed -n '3,200p' "$out/sweep.md"
echo
# The verdict: what a user came for, last, where the terminal leaves it.
[ -f "$out/claims.json" ] && { $py scripts/pipeline/claims.py "$out" || true; }
echo
echo "results: $out"
echo "  open $out/index.html in a browser: the claims, every figure, the tables, the run's provenance"
echo "  (results.csv, machine.json, run.json, claims.md, sweep.md, figures/, generated/, logs/, reproduce.log)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "reproduce.sh: FAILED: ${failed[*]} (see $out/reproduce.log)" >&2
  finish 1
fi
finish 0
