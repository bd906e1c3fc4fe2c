#!/usr/bin/env bash
# Fuzzes the runtime with libFuzzer: tests/fuzz/fuzz_program.cpp reads its input as a random
# program (tests/program.hpp: channels, select, timers, locks, goroutines, ...) and runs it on
# a runtime with one P, under ASan and UBSan, checking the program's invariants. Builds
# build-fuzz/ (clang, NUGO_FUZZ=ON) if needed, starts from the seed corpus
# (tests/fuzz/corpus/) and what earlier runs added (results/fuzz/corpus/), and prints how
# many programs ran and the coverage reached.
#
# usage: scripts/dev/fuzz.sh SECONDS [--jobs N]
#   SECONDS   how long to fuzz (a whole number, at least 1)
# A failing input is saved as results/fuzz/crash-* (or timeout-*, leak-*), and the command
# that replays it is printed. Results: results/fuzz/last-run.json.
# Exit status: 0 when nothing failed, 1 when an input failed, 2 on bad usage or build failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() { echo "usage: scripts/dev/fuzz.sh SECONDS" >&2; exit 2; }
[ $# -eq 1 ] || usage
seconds=$1
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -ge 1 ] || { echo "fuzz.sh: SECONDS='$seconds': expected a whole number of seconds, at least 1" >&2; exit 2; }
bash scripts/bootstrap.sh --checks  # clang and its libFuzzer

bin=build-fuzz/tests/nugo_fuzz_program
echo "fuzz.sh: building $bin (clang, libFuzzer, ASan + UBSan)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUGO_SANITIZE=address \
  -DNUGO_FUZZ=ON -DNUGO_BUILD_EXPERIMENTS=OFF >/dev/null
cmake --build build-fuzz --target nugo_fuzz_program >/tmp/nugo-fuzz-build.log 2>&1 ||
  { tail -n 30 /tmp/nugo-fuzz-build.log; echo "fuzz.sh: build failed" >&2; exit 2; }

out=results/fuzz
mkdir -p "$out/corpus"
log=$(mktemp); trap 'rm -f "$log"' EXIT
echo "fuzz.sh: fuzzing for $seconds s from $(ls tests/fuzz/corpus | wc -l) seed inputs and $(ls "$out/corpus" | wc -l) found before"
rc=0
# -timeout: a program takes well under a second; 30 s without finishing is a hang.
# -rss_limit_mb: ASan's shadow and a few hundred goroutine stacks stay far below it.
"$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=8192 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus" tests/fuzz/corpus >"$log" 2>&1 &
pid=$!
start=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  sleep 5
  now=$(date +%s)
  if (( (now - start) % 30 < 5 )); then
    line=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | cut -c1-100 || true)
    echo "fuzz.sh: $(( now - start )) s of $seconds: ${line:-starting}"
  fi
done
wait "$pid" || rc=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)
corpus=$(ls "$out/corpus" | wc -l)
if [ "$rc" -ne 0 ]; then
  grep -E 'ERROR|broke an invariant|fatal error|panic:|Test unit written|SUMMARY|deadly signal|timeout' "$log" | head -n 20 || true
  cp "$log" "$out/last-failure.log"
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  echo "fuzz.sh: FAIL (exit $rc)${artifact:+; replay: $bin $artifact}; the whole output: $out/last-failure.log"
  exit 1
fi
/usr/bin/python3 - "$out/last-run.json" "$seconds" "${runs:-0}" "${cov:-}" "${added:-0}" "$corpus" <<'EOF'
import json, sys
path, seconds, runs, cov, added, corpus = sys.argv[1:]
parts = cov.split()
json.dump({"command": f"scripts/dev/fuzz.sh {seconds}", "seconds": int(seconds), "executions": int(runs),
           "coverage_edges": int(parts[1]) if parts else None, "features": int(parts[3]) if parts else None,
           "new_inputs": int(added), "corpus_size": int(corpus)}, open(path, "w"), indent=1)
EOF
echo "fuzz.sh: PASS: ${runs:-0} programs in $seconds s, ${cov:-coverage unknown} (edges and features), ${added:-0} new inputs, corpus $corpus; $out/last-run.json"
