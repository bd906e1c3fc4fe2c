#!/usr/bin/env bash
# Does the random-program generator find the bugs it is meant to find? Each patch under
# tests/mutants/ takes back one fix of a bug that an adversarial run found before the suite
# did (x87 state, locks of the thread and static initializers under preemption, timer
# overflow, a Timer or Ticker delivering after stop, a G read unpinned in mcall). For each,
# this script builds the runtime with the fix reverted, in a worktree of HEAD (the checkout
# itself is left alone), and runs seeded random programs (tests/program.hpp) until one fails
# or hangs, or the time per mutant runs out. A mutant the generator does not find within
# its time is reported as survived.
#
# usage: scripts/dev/mutants.sh [--minutes M] [--control-minutes C] [--out FILE] [NAME...]
#   --minutes M   time for each mutant, a whole number (default 5)
#   --control-minutes C   first, the runtime as it is runs in the same harness for C minutes
#                 (default 2) and must pass: otherwise a "found" would mean nothing
#   --out FILE    also write the results as JSON (default results/mutants.json)
#   NAME          the mutants to run (default: every tests/mutants/*.patch)
# Exit status: 0 when every mutant was found, 1 when one survived, 2 on bad usage or a
# build that failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

usage() { echo "usage: scripts/dev/mutants.sh [--minutes M] [--control-minutes C] [--out FILE] [NAME...]" >&2; exit 2; }
minutes=5 control_minutes=2 out=results/mutants.json names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "mutants.sh: --minutes '${2:-}': expected a positive whole number" >&2; exit 2; }; minutes=$2; shift ;;
    --control-minutes) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "mutants.sh: --control-minutes '${2:-}': expected a positive whole number" >&2; exit 2; }; control_minutes=$2; shift ;;
    --out) [ -n "${2:-}" ] || usage; out=$2; shift ;;
    -*) echo "mutants.sh: unknown option '$1'" >&2; usage ;;
    *) [ -f "tests/mutants/$1.patch" ] || { echo "mutants.sh: no mutant '$1' (tests/mutants/$1.patch)" >&2; exit 2; }; names+=("$1") ;;
  esac
  shift
done
if [ ${#names[@]} -eq 0 ]; then
  for p in tests/mutants/*.patch; do names+=("$(basename "$p" .patch)"); done
fi

# Configurations the hostile run found its bugs in: one P (where a thread blocked by a
# goroutine has nobody to take over), the shortest slices, many Ps, NUMA on 4 nodes.
four="xml:$root/topology/machines/xeon-4socket-4node-96pu.xml"
[ -f "${four#xml:}" ] || { echo "mutants.sh: the machine file ${four#xml:} is missing" >&2; exit 2; }
configs=("NUGO_PROCS=1;NUGO_TIMESLICE=20us" "NUGO_PROCS=2;NUGO_TIMESLICE=50us"
         "NUGO_PROCS=8;NUGO_TIMESLICE=20us" "NUGO_MODE=numa;NUGO_PROCS=8;NUGO_TIMESLICE=50us;NUGO_TOPOLOGY=$four")
batch=5      # seeds per process: a static's initializer runs once per process
hang=10      # a program without progress for this long has hung (programs take < 1 s)

work=$(mktemp -d); trap 'git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/tree" HEAD >/dev/null 2>&1 || { echo "mutants.sh: cannot make a worktree of HEAD" >&2; exit 2; }

# Builds the worktree as it stands and runs programs for up to $1 minutes; sets found (the
# first report, empty if none), took, programs, seed and vars.
hunt() {
  local label=$1 limit=$2
  echo "mutants.sh: $label: building"
  cmake -S "$work/tree" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUGO_BUILD_EXPERIMENTS=OFF >/dev/null
  cmake --build "$work/build" --target nugo_hostile >"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log"; echo "mutants.sh: $label: build failed" >&2; exit 2; }
  local start end n=0 last config rc now
  start=$(date +%s); end=$(( start + 60 * limit )); last=$start
  seed=1 programs=0 found=""
  while [ "$(date +%s)" -lt "$end" ]; do
    config=${configs[$(( n % ${#configs[@]} ))]}
    IFS=';' read -ra vars <<< "$config"
    rc=0
    timeout -s QUIT -k 10 $(( 30 + hang * batch )) env "${vars[@]}" "$work/build/tests/nugo_hostile" random "$seed" "$batch" "$hang" >"$work/log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
      found=$(grep -m1 -E '^random [0-9]+:|^fatal error|^panic|SIGQUIT|Sanitizer|terminate' "$work/log" || true)
      [ -n "$found" ] || found="exit status $rc"
      break
    fi
    programs=$(( programs + batch )); seed=$(( seed + batch )); n=$(( n + 1 ))
    now=$(date +%s)
    if (( now - last >= 30 )); then
      last=$now
      echo "mutants.sh: $label: $programs programs passed, about $(( (end - now + 59) / 60 )) min left"
    fi
  done
  took=$(( $(date +%s) - start ))
}

json_string() { printf '%s' "$1" | /usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'; }

echo "mutants.sh: ${#names[@]} mutants, up to $minutes min each after a $control_minutes min control, HEAD $(git rev-parse --short HEAD)"

# The control: HEAD as it is must pass in the same harness, or a "found" below would mean
# nothing.
git -C "$work/tree" checkout -q --force HEAD -- .
hunt control "$control_minutes"
if [ -n "$found" ]; then
  echo "mutants.sh: the unmodified runtime fails in this harness: $found" >&2
  tail -n 30 "$work/log" >&2
  exit 2
fi
echo "mutants.sh: control (no mutant): $programs programs passed in $took s"
control_json="{\"programs\": $programs, \"seconds\": $took}"

results=()
survived=0
for name in "${names[@]}"; do
  git -C "$work/tree" checkout -q --force HEAD -- .
  git -C "$work/tree" apply "$root/tests/mutants/$name.patch" || { echo "mutants.sh: $name.patch does not apply to HEAD" >&2; exit 2; }
  hunt "$name" "$minutes"
  if [ -n "$found" ]; then
    shown=$(printf '%s ' "${vars[@]}")
    echo "mutants.sh: $name: FOUND after $took s, $programs programs passed first; seeds $seed..$(( seed + batch - 1 )) with ${shown% }: $found"
    results+=("{\"mutant\": \"$name\", \"found\": true, \"seconds\": $took, \"programs_before\": $programs, \"seeds\": [$seed, $(( seed + batch - 1 ))], \"config\": \"${shown% }\", \"first_report\": $(json_string "$found")}")
  else
    survived=$(( survived + 1 ))
    echo "mutants.sh: $name: SURVIVED $minutes min ($programs programs passed)"
    results+=("{\"mutant\": \"$name\", \"found\": false, \"seconds\": $took, \"programs_before\": $programs}")
  fi
done

mkdir -p "$(dirname "$out")"
{
  echo "{\"command\": \"scripts/dev/mutants.sh --minutes $minutes --control-minutes $control_minutes\", \"head\": \"$(git rev-parse HEAD)\", \"machine\": \"$(nproc) CPUs, $(uname -r)\", \"control\": $control_json, \"mutants\": ["
  for i in "${!results[@]}"; do echo "  ${results[$i]}$([ "$i" -lt $(( ${#results[@]} - 1 )) ] && echo ,)"; done
  echo "]}"
} >"$out"
echo "mutants.sh: $(( ${#names[@]} - survived )) of ${#names[@]} found; results in $out"
[ "$survived" -eq 0 ]
