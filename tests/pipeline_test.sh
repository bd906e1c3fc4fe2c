#!/usr/bin/env bash
# The experiment pipeline's tests (experiments/CMakeLists.txt runs each case):
#   tests/pipeline_test.sh latency BUILD   the memory latency model: on by default on an
#                                          emulated multi-node topology, off on request,
#                                          refused on a real one
#   tests/pipeline_test.sh plot WORK       scripts/pipeline/plot.py on a copy of the committed sample
#                                          results makes every figure and the paper's macros
#   tests/pipeline_test.sh reproduce BUILD WORK
#                                          scripts/reproduce.sh --quick --only fib, end to end
#   tests/pipeline_test.sh ablation BUILD WORK
#                                          scripts/pipeline/ablation.py --quick: every arm places, or does
#                                          not, as it says (the runtime's and the workload's
#                                          counters), with the binding held equal
#   tests/pipeline_test.sh hierarchy VBUILD WORK
#                                          scripts/pipeline/hierarchy.py --quick in a virtual-time
#                                          build: every arm and level runs the steal order,
#                                          placement and model it names
#   tests/pipeline_test.sh bad-input BUILD bad arguments exit with status 2 before anything runs
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_status() {  # expect_status WANT what... : runs it, checks its exit status
  local want=$1; shift
  "$@" >/tmp/pipeline_test.$$.out 2>&1
  local got=$?
  [ "$got" -eq "$want" ] || { cat /tmp/pipeline_test.$$.out >&2; fail "exit $got, not $want: $*"; }
  rm -f /tmp/pipeline_test.$$.out
}

case "${1:-}" in
  latency)
    exe=$2/experiments/nugo-workload
    two="synthetic:pack:2 numa:1 core:2 pu:1"
    out=$(NUGO_PROCS=4 NUGO_MODE=flat NUGO_TOPOLOGY=$two "$exe" triad --size tiny 2>/dev/null) || fail "triad failed: $out"
    echo "$out" | grep -q '"latency_model": true' || fail "model not on by default on 2 emulated nodes: $out"
    echo "$out" | grep -Eq '"blocks": [1-9]' || fail "no blocks counted: $out"
    echo "$out" | grep -Eq '"block_ns": [0-9]*[1-9]' || fail "blocks not timed: $out"
    out=$(NUGO_PROCS=4 NUGO_MODE=flat NUGO_TOPOLOGY=$two "$exe" stencil --size tiny --latency-model off 2>/dev/null) || fail "stencil failed"
    echo "$out" | grep -q '"latency_model": false' || fail "--latency-model off left it on: $out"
    out=$(NUGO_PROCS=2 NUGO_MODE=flat "$exe" histogram --size tiny 2>/dev/null) || fail "histogram failed"
    echo "$out" | grep -q '"latency_model": false' || fail "model on for the real one-node machine: $out"
    out=$(NUGO_PROCS=4 NUGO_TOPOLOGY=$two "$exe" fib --size tiny 2>/dev/null) || fail "fib failed"
    echo "$out" | grep -q '"latency_model": false' || fail "model on for a compute-bound workload: $out"
    NUGO_PROCS=2 "$exe" triad --size tiny --latency-model on >/dev/null 2>/tmp/pipeline_test.$$.err
    [ $? -eq 2 ] && grep -q "needs an emulated topology" /tmp/pipeline_test.$$.err || fail "--latency-model on accepted on a real topology"
    NUGO_PROCS=2 NUGO_TOPOLOGY="synthetic:pack:1 numa:1 core:2 pu:1" "$exe" triad --size tiny --latency-model on \
      >/dev/null 2>/tmp/pipeline_test.$$.err
    [ $? -eq 2 ] && grep -q "more than one node with CPUs" /tmp/pipeline_test.$$.err || fail "--latency-model on accepted on one emulated node"
    rm -f /tmp/pipeline_test.$$.err
    echo "latency model: on, off and refused as documented"
    ;;
  plot)
    work=$2/plot-sample
    rm -rf "$work" && mkdir -p "$work" && cp -r "$root/tests/data/sample-results/." "$work/"
    $py "$root/scripts/pipeline/plot.py" "$work" || fail "plot.py failed"
    for f in scalability locality memory-speedup ablation penalty peers-compute peers-memory peers-communication \
             micro preempt http timeline virtual virtual-speedup hierarchy; do
      size=$(stat -c %s "$work/figures/$f.png" 2>/dev/null || echo 0)
      [ "$size" -gt 10000 ] || fail "figure $f.png missing or trivial ($size bytes)"
    done
    grep -q '\\newcommand{\\numSweepRuns}' "$work/generated/numbers.tex" || fail "numbers.tex has no SweepRuns"
    # Every macro's name stands literally in the figure module that writes it (its MACROS).
    for m in $(sed -n 's/^\\newcommand{\\num\([A-Za-z]*\)}.*/\1/p' "$work/generated/numbers.tex"); do
      grep -qF "\"$m\"" "$root"/scripts/pipeline/figures/*.py || fail "\\num$m is not named literally in scripts/pipeline/figures/"
    done
    # Every experiment is in the sample, so these have values; the 4-node memory speedup does
    # not, because every 4-node run had more Ps than the sample machine's 2 CPUs, and it says so.
    for m in SweepRuns MachineCpus GitRevision MicroCreateVsGo MicroChanSyncVsGo PreemptNugoPNinetyNine \
             HttpVsGoRaw ComputeFlatOverNuma MemorySpeedupTwo StealsRemoteFlatTwoNode RunsHomeNumaTwoNode \
             StealsRemoteNumaTwentyFourNode LatencyRemoteFactorTwoNode LatencyRemoteBlocksFlat \
             AblationSpeedupPinned AblationUniformBoth AblationRemoteFlat AblationRemotePinned FibMovedFlat \
             PeerTbbCompute PeerOmpMemory PeerFiberCommunication PeerGoCompute PeerProcs \
             VirtualSpeedupMemory VirtualSpeedupOther VirtualTargetsMet VirtualTargetsRows VirtualRuns \
             HierarchyDistanceOrderComparisons HierarchyNodeFirstGeomean HierarchyShippedSlower; do
      line=$(grep -F "{\\num$m}" "$work/generated/numbers.tex") || fail "\\num$m is not written"
      case "$line" in *"{n/a}"*) fail "\\num$m is n/a" ;; esac
    done
    grep -F "{\\numMemorySpeedupFour}{n/a}" "$work/generated/numbers.tex" >/dev/null ||
      fail "4-node memory speedup quoted from oversubscribed runs"
    grep -F "{\\numMemorySpeedupBasisFour}{every run had more Ps" "$work/generated/numbers.tex" >/dev/null ||
      fail "the 4-node basis does not say why it is n/a"
    grep -q '\\newcommand{\\hasTimeline}{1}' "$work/generated/captions.tex" || fail "captions.tex lacks the timeline"
    grep -q 'EMULATED' "$work/generated/captions.tex" || fail "no caption labels the emulated results"
    grep -q 'VIRTUAL TIME, not hardware' "$work/generated/captions.tex" || fail "the virtual figure's caption does not say virtual"
    # The locality targets: judged on the virtual machines only where both modes ran, every row
    # labelled virtual, and the memory-bound rows (placed with go_on) meet both.
    $py - "$work/virtual/results.csv" "$root/scripts" <<'PY' || fail "the locality targets' table is wrong"
import sys
sys.path.insert(0, sys.argv[2])
from pipeline import explib, sweep
targets = sweep.summarize(explib.read_results(sys.argv[1]))["targets"]
assert targets, "no locality targets judged"
assert all(t["topology"].endswith("(virtual)") for t in targets), targets
assert {t["topology"] for t in targets} == {"v2x16 (virtual)", "v4x24 (virtual)", "v24x16 (virtual)"}, targets
for t in targets:
    if t["workload"] in ("triad", "stencil", "spmv"):
        assert t[">= 95%"] == "met" and t["<= 10%"] == "met", t
PY
    grep -q 'PROJECTION under the model' "$work/generated/captions.tex" ||
      fail "the ablation's captions do not call the modelled speedups a projection"
    grep -q 'hollow markers: more Ps than CPUs' "$work/generated/captions.tex" ||
      fail "the scalability caption does not say how oversubscribed points are marked"
    # The paper's rules (scripts/check/paper_check.py): no typed number, every macro the paper uses one
    # that plot.py writes (here from the sample) or a checked constant or published number, every
    # citation in references.bib.
    $py "$root/scripts/check/paper_check.py" --numbers "$work/generated/numbers.tex" || fail "paper_check.py failed"
    grep -q '\\newcommand{\\tableVirtual}' "$work/generated/tables.tex" || fail "tables.tex has no virtual table"
    grep -q '\\newcommand{\\tableHierarchy}' "$work/generated/tables.tex" || fail "tables.tex has no hierarchy table"
    grep -q '\\newcommand{\\tablePeers}' "$work/generated/tables.tex" || fail "tables.tex has no peers table"
    # results.md: the same numbers as Markdown, each figure it shows drawn, the tables in it.
    md=$work/generated/results.md
    grep -qF '| sweep runs |' "$md" && grep -qF '`\numSweepRuns`' "$md" || fail "results.md lacks the sweep's runs"
    grep -q '^| workload | v2x16' "$md" || fail "results.md lacks the virtual table"
    for f in $(grep -o '(../figures/[a-z-]*\.png)' "$md" | tr -d '()'); do
      [ -f "$work/generated/$f" ] || fail "results.md shows $f, which plot.py did not draw"
    done
    [ "$(grep -c '^!\[' "$md")" -eq 15 ] || fail "results.md does not show the 15 figures (sensitivity is not in the sample)"
    # A run in which no experiment but an empty sweep ran still defines every macro the paper
    # uses (as n/a), so that the paper builds from any results directory.
    empty=$work/empty-run
    rm -rf "$empty" && mkdir -p "$empty" && head -1 "$work/results.csv" > "$empty/results.csv"
    $py "$root/scripts/pipeline/plot.py" "$empty" >/dev/null || fail "plot.py failed on a results directory without runs"
    $py "$root/scripts/check/paper_check.py" --numbers "$empty/generated/numbers.tex" >/dev/null ||
      fail "the paper uses a macro that plot.py leaves undefined when its experiment did not run"
    # ... and it catches what it is for: a typed number, an unknown key, a constant the source
    # does not hold, a published number without a source.
    bad=$work/bad-paper
    rm -rf "$bad" && mkdir -p "$bad/generated" && cp "$root"/paper/{paper,constants,published}.tex "$root"/paper/{references.bib,claims.toml} "$bad/"
    cp "$work/generated/"*.tex "$bad/generated/"
    sed -i 's/^\\section{Introduction}/\\section{Introduction} It is 42 percent faster~\\cite{no-such-key}./' "$bad/paper.tex"
    # and the claims: a finding whose paragraph cites no claim, one no claim rests on, an unknown id
    sed -i 's/^\\section{Related work}/\\section{Related work} Go is \\numPeerGoComputeVerdict. Sysmon is \\numTracerYieldVerdict~\\claim{no-such-claim}./' "$bad/paper.tex"
    sed -i 's/^\\newcommand{\\constRunqSize}{256}/\\newcommand{\\constRunqSize}{512}/' "$bad/constants.tex"
    echo '\newcommand{\pubNowhere}{7}  % nothing' >> "$bad/published.tex"
    out=$($py "$root/scripts/check/paper_check.py" "$bad" 2>&1); rc=$?
    [ $rc -eq 1 ] || fail "paper_check.py passed a broken paper (exit $rc)"
    for what in "the number '42' is typed" "cite key no-such-key is not in references.bib" \
                "constRunqSize = 512, but core/src/sched/p.hpp" "pubNowhere names no BibTeX key" \
                "(\\numPeerGoComputeVerdict) without citing its claim (\\claim{go-compute})" \
                "(\\numTracerYieldVerdict) that no claim of claims.toml rests on" \
                "\\claim{no-such-claim} is not a claim of claims.toml"; do
      echo "$out" | grep -qF "$what" || fail "paper_check.py did not say: $what"
    done
    $py "$root/scripts/pipeline/plot.py" "$work/nowhere" >/dev/null 2>&1; [ $? -eq 2 ] || fail "plot.py without results.csv did not exit 2"
    # The claims judged on the sample: every claim of the catalogue gets one verdict, from the
    # numbers plot.py wrote; the sample has no sweep.json, its repetitions are too few for the
    # hierarchy's counts, and this one-node machine cannot test a real multi-node claim.
    $py "$root/scripts/pipeline/claims.py" "$work" >"$work/claims.out" 2>&1 || { cat "$work/claims.out"; fail "claims.py failed on the sample"; }
    $py - "$work/claims.json" "$root/paper/claims.toml" <<'PY' || fail "claims.json does not judge every claim"
import json, sys, tomllib
d = json.load(open(sys.argv[1]))
ids = [c["id"] for c in tomllib.load(open(sys.argv[2], "rb"))["claim"]]
assert [c["id"] for c in d["claims"]] == ids, "not every claim, in the catalogue's order"
assert all(c["verdict"] in ("holds", "does not hold", "inconclusive", "not applicable") for c in d["claims"])
by = {c["id"]: c for c in d["claims"]}
assert by["real-memory"]["verdict"] == "not applicable" and "NUMA node" in by["real-memory"]["reason"], by["real-memory"]
assert by["hierarchy-distance-null"]["verdict"] == "inconclusive" and "HierarchyRepetitions" in by["hierarchy-distance-null"]["reason"]
assert by["validation-laws"]["verdict"] == "holds", by["validation-laws"]
assert sum(d["counts"].values()) == len(ids)
PY
    grep -q "^| claim" "$work/claims.md" || fail "claims.md has no table"
    for broken in 'id = "go-compute"\nid = "x"' 'test = "below"\ntest = "sideways"' '[[claim]]\nid = ' ; do
      printf "$broken\n" > "$work/bad-claims.toml"
      $py "$root/scripts/pipeline/claims.py" "$work" --catalogue "$work/bad-claims.toml" >/dev/null 2>"$work/bad-claims.err"
      [ $? -eq 2 ] && grep -q "bad-claims.toml" "$work/bad-claims.err" || fail "claims.py did not refuse a broken catalogue ($broken)"
    done
    $py "$root/scripts/pipeline/claims.py" "$work/nowhere" >/dev/null 2>&1; [ $? -eq 2 ] || fail "claims.py on no directory did not exit 2"
    mv "$work/generated/numbers.json" "$work/numbers.json.away"
    said=$($py "$root/scripts/pipeline/claims.py" "$work" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "numbers.json: missing" <<<"$said" || fail "claims.py without numbers.json did not say so (exit $rc)"
    mv "$work/numbers.json.away" "$work/generated/numbers.json"
    echo "plot.py: every figure, every macro the paper uses; paper_check.py holds and catches what it is for"
    ;;
  reproduce)
    build=$2 work=$3/reproduce-quick
    rm -rf "$work"
    tracked_before=$(cd "$root" && git status --porcelain=v1 && git diff HEAD | md5sum)
    bash "$root/scripts/reproduce.sh" --quick --only fib --modes flat,numa --topology machine,2node \
      --build-dir "$build" --out "$work" || fail "reproduce.sh failed"
    rows=$(tail -n +2 "$work/results.csv" | wc -l)
    [ "$rows" -ge 3 ] || fail "results.csv has $rows rows"
    # topology, topology_source, emulated, machine_kind, timing_reported, mode
    grep -q ',2node,[^,]*,1,[^,]*,1,numa,' "$work/results.csv" || fail "no emulated NUMA row labelled emulated in results.csv"
    grep -q ',machine,[^,]*,0,\(hardware\|a virtual machine ([a-z-]*)\|a QEMU guest[^,]*\),1,flat,' "$work/results.csv" \
      || fail "no row on machine says where it ran (machine_kind: hardware or a virtual machine)"
    grep -q '^Ran on ' "$work/sweep.md" || fail "sweep.md does not open with where the run ran"
    [ -f "$work/machine.json" ] && [ -f "$work/sweep.md" ] && [ -f "$work/reproduce.log" ] || fail "machine.json, sweep.md or reproduce.log missing"
    # A comparison changes one thing: both modes of every (topology, workload, Ps) ran with the
    # same binding, the one the runtime says it used (pu by default); oversubscription is
    # marked from the CPUs this process may use; the summary gives intervals.
    $py - "$work/results.csv" <<'PY' || fail "results.csv: binding or oversubscription wrong"
import csv, os, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["mode"] in ("flat", "numa")]
cpus = len(os.sched_getaffinity(0))
binds = {}
for r in rows:
    binds.setdefault((r["topology"], r["workload"], r["procs"]), set()).add((r["mode"], r["bind"]))
    assert r["oversubscribed"] == str(int(int(r["procs"]) > cpus)), r
both = [k for k, v in binds.items() if {m for m, _ in v} == {"flat", "numa"}]
assert both, "no configuration ran in both modes"
for k in both:
    assert {b for _, b in binds[k]} == {"pu"}, (k, binds[k])
PY
    grep -q "95% bootstrap confidence interval" "$work/sweep.md" || fail "sweep.md gives no intervals"
    [ -s "$work/figures/scalability.png" ] && [ -s "$work/figures/locality.png" ] || fail "figures missing"
    [ -f "$work/generated/numbers.tex" ] || fail "numbers.tex missing"
    if command -v latexmk >/dev/null && command -v pdflatex >/dev/null; then
      [ -s "$work/paper/paper.pdf" ] || fail "TeX is installed but no paper.pdf"
      echo "the paper was built: $work/paper/paper.pdf"
    else
      grep -q "no TeX here" "$work/reproduce.log" || fail "no TeX and no message saying so"
      echo "no TeX installed: the paper was skipped with a message (scripts/bootstrap.sh --paper)"
    fi
    [ "$(cd "$root" && git status --porcelain=v1 && git diff HEAD | md5sum)" = "$tracked_before" ] ||
      fail "a run changed the clone's tracked files (it may write only under its results directory)"
    # The verdict, the report and the manifest: every step done, the claims judged (those of the
    # steps --only left out: not applicable), the estimate before and the total after.
    [ -s "$work/claims.json" ] && [ -s "$work/claims.md" ] && [ -s "$work/index.html" ] || fail "claims.json, claims.md or index.html missing"
    $py - "$work" <<'PY' || fail "run.json or claims.json wrong"
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
m = json.loads((run / "run.json").read_text())
assert m["finished"] and m["revisions"] == [m["revision"]], m
assert {s["name"]: s["status"] for s in m["steps"]} == {s: "done" for s in ("sweep", "plot", "claims", "paper", "report")}, m["steps"]
assert m["estimate_seconds"] > 0 and "--only" in m["args"]
c = json.loads((run / "claims.json").read_text())
by = {x["id"]: x for x in c["claims"]}
assert by["hierarchy-shipped"]["verdict"] == "not applicable" and "hierarchy step" in by["hierarchy-shipped"]["reason"]
PY
    grep -q "estimated" "$work/reproduce.log" && grep -q "=== reproduce.sh: done in .* (estimated" "$work/reproduce.log" ||
      fail "no estimate before or total after"
    grep -q "The paper's claims on this run" "$work/reproduce.log" || fail "the run does not end with the claims"
    echo "reproduce.sh --quick --only fib: end to end"
    ;;
  resume)
    # A run killed in the middle of its sweep, resumed, has the rows of a run never interrupted;
    # a second run into the same directory, a resume of a finished run or of a run of other
    # executables is refused.
    build=$2 work=$3/resume
    rm -rf "$work" && mkdir -p "$work"
    args=(--quick --only fib,nqueens,mergesort,skynet,uts --modes flat,numa --topology machine,2node --build-dir "$build")
    bash "$root/scripts/reproduce.sh" "${args[@]}" --out "$work/whole" >"$work/whole.log" 2>&1 || { tail -20 "$work/whole.log"; fail "the whole run failed"; }
    total=$(( $(wc -l <"$work/whole/results.csv") - 1 ))
    setsid bash "$root/scripts/reproduce.sh" "${args[@]}" --out "$work/cut" >"$work/cut.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do  # until a third of the sweep is written (at most a minute)
      [ -f "$work/cut/results.csv" ] && [ $(( $(wc -l <"$work/cut/results.csv") - 1 )) -ge $(( total / 3 )) ] && break
      sleep 0.1
    done
    kill -KILL -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    cut_rows=$(( $(wc -l <"$work/cut/results.csv") - 1 ))
    [ "$cut_rows" -lt "$total" ] || fail "the run finished before it could be killed ($cut_rows of $total rows)"
    $py "$root/scripts/pipeline/manifest.py" finish "$work/cut" >/dev/null 2>&1 || true  # a finish time does not make it done
    bash "$root/scripts/reproduce.sh" --resume "$work/cut" >"$work/resume.log" 2>&1 || { tail -20 "$work/resume.log"; fail "--resume failed"; }
    grep -q "resuming: [0-9]* of $total runs finished before" "$work/resume.log" || fail "the sweep did not resume"
    $py - "$work/whole/results.csv" "$work/cut/results.csv" "$work/cut/run.json" <<'PY' || fail "the resumed run's rows differ from the whole run's"
import csv, json, sys
key = lambda r: (r["topology"], r["workload"], r["mode"], r["procs"], r["bind_asked"], r["repetition"], r["ok"])
a, b = (sorted(key(r) for r in csv.DictReader(open(p))) for p in sys.argv[1:3])
assert a == b, (len(a), len(b), set(a) ^ set(b))
m = json.load(open(sys.argv[3]))
assert all(s["status"] == "done" for s in m["steps"]) and len(m["revisions"]) == 1 and m["resumed"], m
PY
    said=$(bash "$root/scripts/reproduce.sh" "${args[@]}" --out "$work/whole" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "holds a run already" <<<"$said" || fail "a second run into a run's directory was not refused (exit $rc)"
    said=$(bash "$root/scripts/reproduce.sh" --resume "$work/whole" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "nothing to resume" <<<"$said" || fail "resuming a finished run was not refused (exit $rc)"
    $py - "$work/cut/run.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["build"]["id"] = "0" * 16
m["steps"][0]["status"] = "failed"
json.dump(m, open(sys.argv[1], "w"))
PY
    said=$(bash "$root/scripts/reproduce.sh" --resume "$work/cut" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "the executables changed" <<<"$said" || fail "resuming with other executables was not refused (exit $rc)"
    said=$(bash "$root/scripts/reproduce.sh" --resume "$work/nowhere" 2>&1); rc=$?
    [ $rc -eq 2 ] && grep -q "no such results directory" <<<"$said" || fail "resuming no directory was not refused (exit $rc)"
    echo "reproduce.sh --resume: a run killed after $cut_rows of $total sweep rows resumed to the same rows; refusals hold"
    ;;
  ablation)
    build=$2 work=$3/ablation-quick
    rm -rf "$work"
    $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out "$work" --quick --only triad,triad_skew,spmv,fib \
      >"$work.log" 2>&1 || { tail -20 "$work.log" >&2; fail "ablation.py --quick failed"; }
    [ -f "$work/ablation.md" ] && [ -f "$work/ablation.json" ] || fail "ablation.md or ablation.json missing"
    grep -q "PROJECTION under the latency model" "$work/ablation.md" || fail "ablation.md does not call its speedups a projection"
    # From the recorded rows: the runtime placed every worker of an arm that places (go_on in
    # NUMA mode) and none of the others; the pinned arm started every worker at home; every
    # arm ran with the same binding, the NUMA policy it names and the model's penalty.
    $py - "$work/results.csv" "$root/scripts" <<'PY' || fail "an ablation arm does not do what it says"
import csv, sys
sys.path.insert(0, sys.argv[2])
from pipeline.ablation import PLACES as places  # the arms as ablation.py defines them
policy = {"neither": "steal=flat", "placement": "steal=flat", "hierarchy": "steal=nearest", "both": "steal=nearest",
          "pinned": "steal=nearest"}
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["ok"] == "1" for r in rows), [r["error"] for r in rows if r["ok"] != "1"]
assert {r["bind"] for r in rows} == {"pu"}, {r["bind"] for r in rows}
seen = set()
for r in rows:
    a = r["arm"]
    seen.add(a)
    if a != "flat":
        assert policy[a] in r["numa_policy"], (a, r["numa_policy"])
        assert ("go_on=queued" in r["numa_policy"]) == (a in ("placement", "both")), (a, r["numa_policy"])
    else:
        assert r["mode"] == "flat" and r["numa_policy"] == "", r
    if r["kind"] != "memory":
        assert int(r["placed"]) == 0, r  # fib places nothing
        continue
    workers, placed, home = int(r["workers"]), int(r["placed"]), int(r["started_home"])
    assert workers > 0 and float(r["latency_penalty"]) in (1.0, 2.0), r
    assert placed == (workers if places[a] else 0), (a, r["workload"], placed, workers)
    if a == "pinned":
        assert home == workers, (a, r["workload"], home, workers)
assert seen == set(places), seen
PY
    echo "ablation.py --quick: every arm places or not as it says, with the same binding"
    ;;
  hierarchy)
    build=$2 work=$3/hierarchy-quick
    rm -rf "$work"
    $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out "$work" --quick \
      >"$work.log" 2>&1 || { tail -20 "$work.log" >&2; fail "hierarchy.py --quick failed"; }
    [ -f "$work/hierarchy.md" ] && [ -f "$work/hierarchy.json" ] || fail "hierarchy.md or hierarchy.json missing"
    grep -q "VIRTUAL time" "$work/hierarchy.md" || fail "hierarchy.md does not say its times are virtual"
    # From the recorded rows: each arm ran the steal order and placement it names, each level
    # the model it names, on the virtual clock; the steals by distance add up and fall in the
    # machine's tiers; a pinned arm starts every worker at home, an unplaced one places none.
    $py - "$work/results.csv" "$root/scripts" <<'PY' || fail "a hierarchy arm or level does not do what it says"
import csv, sys
sys.path.insert(0, sys.argv[2])
from pipeline import hierarchy
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["ok"] == "1" for r in rows), [r["error"] for r in rows if r["ok"] != "1"]
assert {r["clock"] for r in rows} == {"virtual"} and {r["procs"] for r in rows} == {"28"}, rows[0]
seen = set()
for r in rows:
    a, level = r["arm"], hierarchy.level_of(r)
    seen.add((a, level))
    if a == "flat":
        assert r["mode"] == "flat" and r["numa_policy"] == "", r
    else:
        steal = hierarchy.STEALS[a.split("+")[0]]
        placement = a.split("+")[1] if "+" in a else "pinned"  # unplaced: go_on is never called
        assert f"steal={steal}," in r["numa_policy"] and f"go_on={placement}" in r["numa_policy"], (a, r["numa_policy"])
    assert ("line=0ns,remote_line=0ns" in r["virtual_setting"]) == (level == "sched"), (level, r["virtual_setting"])
    steals = {int(d): int(n) for d, n in (kv.split(":") for kv in r["steals_remote_by_distance"].split())}
    moved = {int(d): int(n) for d, n in (kv.split(":") for kv in r["moved_remote_by_distance"].split())}
    assert sum(steals.values()) == int(r["steals_remote"]) and set(steals) | set(moved) <= {21, 31}, r
    if r["kind"] == "memory":
        workers, placed, home = int(r["workers"]), int(r["placed"]), int(r["started_home"])
        assert placed == (workers if "+" in a else 0), (a, placed, workers)
        assert float(r["latency_penalty"]) == (hierarchy.MEASURED_PENALTY if level == "latency" else 1.0), r
        if a.endswith("+pinned"):
            assert home == workers, (a, home, workers)
    else:
        assert a in hierarchy.PLAIN_ARMS and level != "latency" and int(r["placed"]) == 0, (a, level)
want = {(a, lv) for a in hierarchy.ARMS for lv in hierarchy.LEVELS}
assert seen == want, want - seen
PY
    echo "hierarchy.py --quick: every arm and level runs what it names, on the virtual clock"
    ;;
  peers)
    # sweep.py with the C++ peers: each runs the workloads it has a twin of, bound as nugo is,
    # with its settings on the row, and sweep.md sets nugo against each of them per kind.
    build=$2 work=$3/peers-quick
    rm -rf "$work"
    $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out "$work" --quick --topology machine --procs 1,2 \
      --modes flat,tbb,omp,fiber,go_numactl --only fib,triad,sieve --repetitions 2 >"$work.log" 2>&1 \
      || { tail -20 "$work.log" >&2; fail "sweep.py with the peers failed"; }
    $py - "$work/results.csv" "$root/scripts" "$build" <<'PY' || fail "a peer's rows are not what was asked"
import csv, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from pipeline import sweep
cpus = {n: sweep.nugo_cpus(Path(sys.argv[3]), n).replace("/", ",").split(",") for n in (1, 2)}
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["ok"] == "1" for r in rows), [r["error"] for r in rows if r["ok"] != "1"]
ran = {(r["mode"], r["workload"]) for r in rows} - {("go_numactl", "triad")}  # that one on several nodes only
want = {("flat", w) for w in ("fib", "triad", "sieve")} | {(m, w) for m in ("tbb", "omp") for w in ("fib", "triad")} \
    | {("fiber", "sieve")}
assert ran == want, ran ^ want  # a peer runs only the workloads it has a twin of
for r in rows:
    if r["mode"] == "go_numactl":
        assert r["bind"] == "node", r
        continue
    assert r["bind"] == "pu" and r["bind_asked"] == "pu", r
    env = r["runtime_env"]
    assert env, r
    if r["mode"] == "omp":
        # on the CPUs nugo's Ps run on (nugo-topo), one place each
        places = ",".join("{%s}" % c for c in cpus[int(r["procs"])])
        assert "OMP_PROC_BIND=close" in env and f"OMP_PLACES={places} " in env and f"OMP_NUM_THREADS={r['procs']}" in env, env
    if r["mode"] == "flat":
        assert "NUGO_BIND=pu" in env and f"NUGO_PROCS={r['procs']}" in env, env
PY
    for kind in compute memory communication; do
      grep -q "^### $kind workloads" "$work/sweep.md" || fail "sweep.md has no table of the $kind workloads against the peers"
    done
    grep -q "flat/oneTBB" "$work/sweep.md" && grep -q "flat/Boost.Fiber" "$work/sweep.md" \
      || fail "sweep.md does not set nugo against each peer"
    # Go per node (numactl): n/a on a one-node machine, and said; its protocol (a process per
    # node, each its part, started together at a barrier, the slowest part's time) runs on the
    # nodes this machine has.
    if command -v go >/dev/null && command -v numactl >/dev/null; then
      grep -q "Go per node (numactl): n/a: this process may use CPUs of 1 NUMA node" "$work.log" || [ "$(ls -d /sys/devices/system/node/node* | wc -l)" -gt 1 ] \
        || fail "sweep.py did not say why Go per node did not run"
      go_exe=$work/go-workload  # built from the sources of this tree, as sweep.py builds it
      (cd "$root/experiments/baselines/go" && env GOCACHE="$build/go-cache" GOPATH="$build/gopath" \
        GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local go build -o "$go_exe" ./workloads) || fail "go build failed"
      $py - "$root/scripts" "$go_exe" "$build" <<'PY' || fail "Go per node's processes did not run their parts together"
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pipeline import explib, sweep
for w in sweep.DIVISIBLE:
    result, errors = sweep.go_per_node_run(Path(sys.argv[2]), w, "tiny", 2 * len(sweep.cpu_nodes()),
                                           explib.go_environment(Path(sys.argv[3])), 120)
    assert result["ok"] and result["seconds"] > 0 and result["result"].startswith("node "), (w, result, errors)
PY
    fi
    echo "sweep.py with the peers: each ran its twins, bound as nugo, and sweep.md compares them"
    ;;
  bad-input)
    build=$2
    expect_status 2 bash "$root/scripts/reproduce.sh" --quick --only bogus --build-dir "$build" --out /tmp/never
    expect_status 2 bash "$root/scripts/reproduce.sh" --quick --topology xml:/nonexistent.xml --build-dir "$build" --out /tmp/never
    expect_status 2 bash "$root/scripts/reproduce.sh" --quick --procs 5000 --build-dir "$build" --out /tmp/never
    expect_status 2 bash "$root/scripts/reproduce.sh" --quick --full
    expect_status 2 bash "$root/scripts/reproduce.sh" --frobnicate
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --modes flat,warp --dry-run
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --topology 3node --dry-run
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --topology virtual \
      --virtual-build-dir /nonexistent --dry-run
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --topology v2x16 \
      --virtual-build-dir "$build/experiments" --dry-run  # not a configured virtual-time build
    expect_status 2 bash "$root/scripts/reproduce.sh" --quick --topology virtual --build-dir "$build" --out /tmp/never
    expect_status 2 $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out /tmp/never --topology v2x16 --dry-run
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --bind socket --dry-run
    expect_status 2 $py "$root/scripts/pipeline/sweep.py" --build-dir "$build" --out /tmp/never --topology 2node --procs 30 --dry-run
    expect_status 2 $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out /tmp/never --arms flat,sideways --dry-run
    expect_status 2 $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out /tmp/never --penalties 0.5 --dry-run
    expect_status 2 $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out /tmp/never --topology machine --dry-run
    expect_status 2 $py "$root/scripts/pipeline/ablation.py" --build-dir "$build" --out /tmp/never --only sieve --dry-run
    expect_status 2 $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out /tmp/never --dry-run  # not virtual
    expect_status 2 $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out /tmp/never --arms flat,sideways --dry-run
    expect_status 2 $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out /tmp/never --arms node --dry-run
    expect_status 2 $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out /tmp/never --levels sched,psychic --dry-run
    expect_status 2 $py "$root/scripts/pipeline/hierarchy.py" --build-dir "$build" --out /tmp/never --topology 2node --dry-run
    expect_status 2 "$build/experiments/nugo-workload" triad --placement somewhere
    expect_status 2 "$build/experiments/nugo-workload" triad --latency-penalty 0.9
    expect_status 2 "$build/experiments/nugo-workload" fib --latency-penalty 2  # no model: no penalty
    [ -e /tmp/never ] && fail "a refused run created its results directory"
    echo "bad input: status 2, nothing run"
    ;;
  *) echo "usage: tests/pipeline_test.sh latency|plot|reproduce|ablation|hierarchy|bad-input ..." >&2; exit 2 ;;
esac
