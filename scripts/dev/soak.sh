#!/usr/bin/env bash
# Soak: seeded random programs for as long as asked, across the configurations the suite
# runs in. Each program (tests/program.hpp, run by tests/hostile.cpp "random SEED") is a tree
# of goroutines that spawn (go and go_on), yield, compute, hog the CPU until preempted, check
# x87/SSE/AVX results against a plain thread's, talk over channels with select (with and
# without default), close channels under blocked senders and receivers, use Mutex, RWMutex,
# Cond, Once, a std::mutex and slow function-local statics, sleep, race Timer and Ticker
# stop/reset against their firing, use durations from negative to the largest, make system
# calls and lock themselves to their thread. It checks that every value sent was received
# once, that no goroutine was lost (a program without progress for 60 s is a hang: its seed
# and a goroutine dump are printed), that the locks excluded, and that the runtime's
# statistics add up. A failure or a hang prints the seed, the configuration and the command
# that reproduces it.
#
# usage: scripts/dev/soak.sh MINUTES [--sanitize=address] [--batch N] [--first-seed S]
#   MINUTES        how long to run (a whole number, at least 1)
#   --sanitize     run the ASan + UBSan build's programs (build-address/)
#   --batch N      seeds per process (default 20); --first-seed S: where to start (default 1)
# Exit status: 0 when every seed-run passed, 1 on a failure or hang, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() { echo "usage: scripts/dev/soak.sh MINUTES [--sanitize=address] [--batch N] [--first-seed S]" >&2; exit 2; }
[ $# -ge 1 ] || usage
minutes=$1; shift
[[ "$minutes" =~ ^[0-9]+$ ]] && [ "$minutes" -ge 1 ] || { echo "soak.sh: MINUTES='$minutes': expected a whole number of minutes, at least 1" >&2; exit 2; }
build=build batch=20 seed=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize=address) build=build-address ;;
    --sanitize=*) echo "soak.sh: unsupported sanitizer '${1#--sanitize=}' (supported: address; the programs need the preemption signal, which a TSan build does not have)" >&2; exit 2 ;;
    --batch) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --batch '${2:-}': expected a positive number" >&2; exit 2; }; batch=$2; shift ;;
    --first-seed) [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "soak.sh: --first-seed '${2:-}': expected a number" >&2; exit 2; }; seed=$2; shift ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done

bin=$build/tests/nugo_hostile
if [ ! -x "$bin" ]; then
  echo "soak.sh: building $bin"
  if [ "$build" = build-address ]; then
    bash scripts/test.sh --sanitize=address >/dev/null 2>&1 || true  # configures and builds it
  else
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build --target nugo_hostile >/dev/null
  fi
  [ -x "$bin" ] || { echo "soak.sh: cannot build $bin" >&2; exit 2; }
fi

# The suite's configurations (tests/CMakeLists.txt): P counts, flat and NUMA on emulated
# 2- and 4-node machines, the shortest slice allowed (where the hostile run crashed), a short
# one and Go's default.
machines=$PWD/topology/machines  # real machines' topologies (topology/machines/README.md)
two="xml:$machines/xeon-2socket-2node-24pu.xml"; four="xml:$machines/xeon-4socket-4node-96pu.xml"
for f in "${two#xml:}" "${four#xml:}"; do
  [ -f "$f" ] || { echo "soak.sh: the machine file $f is missing" >&2; exit 2; }
done
configs=()  # assignments separated by ';' 
for slice in 20us 50us 10ms; do
  for procs in 1 2 8; do configs+=("NUGO_MODE=flat;NUGO_PROCS=$procs;NUGO_TIMESLICE=$slice"); done
  configs+=("NUGO_MODE=numa;NUGO_PROCS=4;NUGO_TIMESLICE=$slice;NUGO_TOPOLOGY=$two")
  configs+=("NUGO_MODE=numa;NUGO_PROCS=8;NUGO_TIMESLICE=$slice;NUGO_TOPOLOGY=$four")
done

# A batch that takes longer than this has hung (a batch of 20 takes a few seconds; the
# program's own watchdog reports a seed without progress for 60 s first). SIGQUIT makes the
# runtime print its goroutines; SIGKILL follows if even that hangs.
limit=$(( 90 + 6 * batch ))
start=$(date +%s); end=$(( start + 60 * minutes ))
passed=0 batches=0 last_report=$start
log=$(mktemp); trap 'rm -f "$log"' EXIT
run_config() {  # config, first seed, count -> exit status of the batch, output in $log
  local vars
  IFS=';' read -ra vars <<< "$1"
  timeout -s QUIT -k 10 "$limit" env "${vars[@]}" "$bin" random "$2" "$3" >"$log" 2>&1
}
shown() { local IFS=' '; local vars; IFS=';' read -ra vars <<< "$1"; printf '%q ' "${vars[@]}"; }
echo "soak.sh: $bin, ${#configs[@]} configurations, $batch seeds a process, for $minutes min"
while [ "$(date +%s)" -lt "$end" ]; do
  config=${configs[$(( batches % ${#configs[@]} ))]}
  rc=0; run_config "$config" "$seed" "$batch" || rc=$?
  if [ "$rc" -ne 0 ]; then
    what="failed (exit $rc)"
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && what="hung (stopped after ${limit}s)"
    echo "soak.sh: FAIL: a batch $what: seeds $seed..$(( seed + batch - 1 )), $(shown "$config")"
    tail -n 40 "$log"
    # Which seed: run them one at a time.
    for (( s = seed; s < seed + batch; s++ )); do
      if ! run_config "$config" "$s" 1; then
        echo "soak.sh: seed $s reproduces it: env $(shown "$config")$bin random $s"
        tail -n 5 "$log"; break
      fi
    done
    echo "soak.sh: $passed seed-runs passed before the failure"
    exit 1
  fi
  passed=$(( passed + batch )); seed=$(( seed + batch )); batches=$(( batches + 1 ))
  now=$(date +%s)
  if (( now - last_report >= 30 )); then
    last_report=$now
    printf 'soak.sh: %d min %02d s: %d seed-runs passed, about %d min left\n' \
      $(( (now - start) / 60 )) $(( (now - start) % 60 )) "$passed" $(( (end - now + 59) / 60 ))
  fi
done
echo "soak.sh: PASS: $passed seed-runs passed in $(( ($(date +%s) - start) / 60 )) min ($batches processes, ${#configs[@]} configurations, seeds up to $(( seed - 1 )))"
