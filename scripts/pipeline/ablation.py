#!/usr/bin/python3
"""The ablation of NUMA mode on the memory-bound workloads: placement and the stealing hierarchy
separated, each workload run under every arm at every remote penalty of the latency model.

usage: scripts/pipeline/ablation.py --out DIR [--build-dir BUILD] [--quick | --full] [--only W,...]
                           [--arms A,...] [--penalties R,...] [--topology T,...] [--procs N,...]
                           [--bind B] [--repetitions R] [--seed S] [--dry-run] [--render]

NUMA mode does two things for a program whose goroutines have a home: it starts them on their
node (placement: go_on) and its thieves take work from their own node before another
(the stealing hierarchy). Each arm turns them on or off, one at a time, with everything else held
equal (topology, Ps, binding, sizes, the model's penalty):

  arm        mode  program   NUGO_NUMA                    what it is
  flat       flat  go        -                            Go's scheduler; nothing placed
  neither    numa  go        steal=flat                   NUMA mode's per-node queues, Go's stealing
                                                          over every P, nothing placed: flat mode
                                                          again, if per-node queues change nothing
  placement  numa  go_on     steal=flat,go_on=queued      goroutines queued on their data's node;
                                                          Go's stealing after that
  hierarchy  numa  go        steal=nearest                the stealing hierarchy alone
  both       numa  go_on     steal=nearest,go_on=queued   placement and the hierarchy
  pinned     numa  go_on     steal=nearest (go_on=pinned) NUMA mode as shipped: go_on's goroutines
                                                          start on their node, always

"program" is how the workload starts its workers (nugo-workload --placement): go_on(node) or
plain go from the main goroutine. go_on=queued puts a placed goroutine on its node's global
queue, which another node's thief may rob when the stealing rules let it; go_on=pinned (NUMA
mode's default) on the node's pinned queue, which no other node reads. So "placement" and
"both" differ only in the stealing, and "hierarchy" and "both" only in the placement.

The workloads: triad and stencil (even work on every node), histogram, triad_skew (three times
the data on the first node) and spmv (row degrees skewed, so the first node has five times the
non-zeros of the second): on the skewed ones a node that is done must take remote work or idle.
And fib (fork-join, compute-bound, at its default size), under the arms flat, neither and
hierarchy only and without the model: what NUMA mode's scheduling alone does on uniform memory.

Penalties (--penalties): the latency model's remote/local cost ratio at the nearest distance
(experiments/workloads/README.md). 1.0 is uniform memory: what the scheduling alone costs or
gains. 1.74 is remote/local DRAM latency measured on 2-socket Cascade Lake
(../shared/reference/numa-and-peers.md). Every timing here is on an EMULATED topology under the
model: a projection under it, not a measurement of remote memory. The counts lead, taken at
penalty 1.0 (uniform memory), where the model charges nothing: the fraction of blocks worked
away from home, of workers that began at home, goroutines placed and moved, idle time per node.
(They are not quite independent of the model: its charges change the timing, and with it the
scheduler's choices.)

Profiles: --quick (tiny sizes, 1 repetition, penalties 1.0 and 2.0: the CI smoke), the default
(small sizes, 10 repetitions, penalties 1.0, 1.74 and 3.0, the 2-node Xeon at one P per node: the
one configuration here with no more Ps than CPUs), --full (default sizes, 2node and 4node at one
and two Ps per node, penalties 1.0 to 3.0). With one P per node there is no same-node victim and
a single remote node: where the hierarchy can act, many Ps per node and tiered distances, is
hierarchy.py's trial, in virtual time.

Writes DIR/results.csv (sweep.py's columns, one row per run), DIR/ablation.json (settings,
commands, medians with 95% bootstrap intervals), DIR/ablation.md (the tables) and DIR/logs/.
scripts/pipeline/plot.py draws ablation.png and penalty.png from it. Exit status 0 when every run
succeeded, 1 when one failed, 2 on bad input (before anything runs).
"""
import csv
import json
import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue  # noqa: E402
from pipeline import explib  # noqa: E402
from pipeline import inference  # noqa: E402
from pipeline import sweep  # noqa: E402

PROG = "ablation.py"
ARMS = {a.name: a for a in (
    sweep.Arm("flat", "flat", "go"),
    sweep.Arm("neither", "numa", "go", "steal=flat"),
    sweep.Arm("placement", "numa", "go_on", "steal=flat,go_on=queued"),
    sweep.Arm("hierarchy", "numa", "go", "steal=nearest"),
    sweep.Arm("both", "numa", "go_on", "steal=nearest,go_on=queued"),
    sweep.Arm("pinned", "numa", "go_on", "steal=nearest,go_on=pinned"),
)}
# Whether each arm places (go_on honoured) and whether its goroutines must all start at home:
# what the pipeline test checks against the counters.
PLACES = {"flat": False, "neither": False, "placement": True, "hierarchy": False, "both": True, "pinned": True}
MEMORY = ["triad", "stencil", "histogram", "triad_skew", "spmv"]
# Fork-join, on uniform memory (no model: it has no data placement): where NUMA mode's speedup
# over flat mode on compute-bound work comes from. Only the stealing differs between its arms.
COMPUTE = ["fib"]
COMPUTE_ARMS = ("flat", "neither", "hierarchy")
WORKLOADS = MEMORY + COMPUTE
# The default profile's penalties: uniform memory, the measured ratio and a far one; --full
# fills the range between.
MEASURED_PENALTY = catalogue.MEASURED_PENALTY
PENALTIES = [1.0, MEASURED_PENALTY, 3.0]
PENALTIES_FULL = [1.0, 1.3, 1.6, MEASURED_PENALTY, 2.0, 3.0]


def main() -> int:
    p = explib.parser(PROG, __doc__)
    p.add_argument("--full", action="store_true", help="default sizes, 2node and 4node, 1 and 2 Ps per node")
    p.add_argument("--only", help=f"workloads, comma-separated (default: {','.join(WORKLOADS)})")
    p.add_argument("--arms", help=f"arms, comma-separated (default: {','.join(ARMS)})")
    p.add_argument("--penalties", help="remote/local ratios, comma-separated (default: "
                   + ",".join(map(str, PENALTIES)) + "; --full: " + ",".join(map(str, PENALTIES_FULL)) + ")")
    p.add_argument("--topology", help="emulated topologies, comma-separated (default 2node; see sweep.py)")
    p.add_argument("--procs", help="P counts, comma-separated (default: one per node)")
    p.add_argument("--bind", default="pu", help="binding, the same in every arm (default pu)")
    p.add_argument("--repetitions", type=int, help="runs of each configuration (1 quick, 10 otherwise)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the runs' random order (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the plan, run nothing")
    p.add_argument("--render", action="store_true", help="rewrite OUT/ablation.md from OUT/results.csv")
    args = p.parse_args()
    if args.render:
        return render(args.out)
    if args.quick and args.full:
        return explib.bad_input(PROG, "--quick and --full exclude each other")
    profile = "quick" if args.quick else "full" if args.full else "default"
    size = {"quick": "tiny", "default": "small", "full": "default"}[profile]
    reps = args.repetitions if args.repetitions is not None else (1 if args.quick else 10)
    if reps < 1:
        return explib.bad_input(PROG, f"--repetitions {reps}: at least 1")
    build = args.build_dir.resolve()
    exe = build / "experiments" / "nugo-workload"
    if not os.access(exe, os.X_OK):
        return explib.bad_input(PROG, f"{exe}: not built (cmake --build {build} --target nugo-workload nugo-topo)")
    workloads = sweep.parse_list(args.only) or WORKLOADS
    arms = sweep.parse_list(args.arms) or list(ARMS)
    for a in arms:
        if a not in ARMS:
            return explib.bad_input(PROG, f"--arms: unknown arm '{a}' (known: {', '.join(ARMS)})")
    try:
        penalties = [float(x) for x in sweep.parse_list(args.penalties)] if args.penalties else \
            ([1.0, 2.0] if args.quick else PENALTIES_FULL if args.full else PENALTIES)
    except ValueError:
        return explib.bad_input(PROG, f"--penalties {args.penalties}: not a list of numbers")
    for r in penalties:
        if not 1.0 <= r <= 10.0:
            return explib.bad_input(PROG, f"--penalties: {r} is out of range (1.0 to 10)")
    if args.bind not in ("pu", "node", "none"):
        return explib.bad_input(PROG, f"--bind {args.bind}: pu, node or none (the same in every arm)")
    try:
        known = explib.workload_names(build / "experiments" / "nugo-workload")
        for w in workloads:
            if w not in known or w not in WORKLOADS:
                return explib.bad_input(PROG, f"--only: '{w}' is not a workload of the ablation "
                                        f"(known: {', '.join(WORKLOADS)})")
        names = sweep.parse_list(args.topology) or (["2node", "4node"] if args.full else ["2node"])
        topologies = [sweep.resolve_topology(build, n) for n in names]
        for t in topologies:
            if t.virtual:
                return explib.bad_input(PROG, f"--topology {t.name}: the ablation runs in real time; the "
                                        "virtual set is sweep.py's (--topology virtual)")
            if not t.emulated or t.nodes < 2:
                return explib.bad_input(PROG, f"--topology {t.name}: the ablation needs an emulated topology with "
                                        "two or more nodes with CPUs (the latency model runs on emulated ones only)")
        procs = [int(x) for x in sweep.parse_list(args.procs)] if args.procs else None
    except explib.Failed as e:
        return explib.bad_input(PROG, str(e))
    except ValueError:
        return explib.bad_input(PROG, f"--procs {args.procs}: not a list of numbers")
    real_cpus = len(os.sched_getaffinity(0))

    configs = []  # (topology, procs)
    for t in topologies:
        counts = procs or ([t.nodes, 2 * t.nodes] if args.full else [t.nodes])
        for n in counts:
            if not 2 <= n <= min(t.pus, sweep.MAX_PROCS):
                return explib.bad_input(PROG, f"--procs: {n} Ps on {t.name}: at least 2 (so that two nodes have "
                                        f"Ps), at most its {t.pus} PUs")
            configs.append((t, n))
    runs = [(rep, t, n, w, a, r) for rep in range(1, reps + 1) for t, n in configs for w in workloads if w in MEMORY
            for a in arms for r in penalties]
    runs += [(rep, t, n, w, a, None) for rep in range(1, reps + 1) for t, n in configs for w in workloads
             if w in COMPUTE for a in arms if a in COMPUTE_ARMS]
    random.Random(args.seed).shuffle(runs)
    if args.dry_run:
        print(f"{PROG}: would run {len(runs)} runs: {len(workloads)} workloads, {len(arms)} arms, "
              f"{len(penalties)} penalties (fork-join: 3 arms, no model), {len(configs)} configurations, "
              f"{reps} repetitions, {size} sizes")
        return 0

    out = args.out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runner = explib.Runner(timeout_s=120 if args.quick else 600, echo=False)
    perf = sweep.perf_support()
    if perf[1]:
        print(f"{PROG}: hardware counters {perf[1]}", file=sys.stderr)
    (out / "machine.json").write_text(json.dumps(sweep.machine_info(build, topologies), indent=2) + "\n")
    print(f"{PROG}: {len(runs)} runs: {len(workloads)} workloads, {len(arms)} arms, {len(penalties)} penalties "
          f"(fork-join: 3 arms, no model), {len(configs)} configurations, {reps} repetitions, {size} sizes, "
          f"in a random order; results in {out}", file=sys.stderr)
    progress = explib.Progress(len(runs))
    rows, failures = [], 0
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sweep.COLUMNS)
        writer.writeheader()
        for rep, t, n, w, a, r in runs:
            arm = ARMS[a]
            run_id = f"{t.name}-p{n}-{w}-{a}-x{r}-r{rep}"
            row = sweep.one_run(build, exe, None, runner, logs, run_id, t, w, arm.mode, n, args.bind, rep,
                                size if w in MEMORY else compute_size(size), real_cpus, arm=arm, penalty=r, perf=perf)
            failures += not sweep.record(PROG, run_id, row, writer, f, rows)
            progress.finished(f"{w:10} {t.name} {n}P {a:9} x{r or '-':<4}  rep {rep}: "
                              + (f"{float(row['seconds']):.3f} s" if row["ok"] == 1 else "FAILED"))
    summary = summarize(explib.read_results(out / "results.csv"))
    (out / "ablation.md").write_text(summary["markdown"])
    print("\n" + summary["text"])
    explib.write_json(out / "ablation.json", {"medians": summary["medians"], "failures": failures},
                      {"profile": profile, "size": size, "repetitions": reps, "workloads": workloads,
                       "arms": {a: vars(ARMS[a]) for a in arms}, "penalties": penalties, "bind": args.bind,
                       "seed": args.seed, "order": "random (seeded)", "cpus_usable": real_cpus,
                       "configurations": [[t.name, n] for t, n in configs]},
                      runner.commands[:1] + [f"{exe} WORKLOAD --size {size} --placement P --latency-penalty R "
                                             "(NUGO_* per run: results.csv)"])
    if failures:
        print(f"{PROG}: {failures} of {len(runs)} runs failed (logs in {logs})", file=sys.stderr)
        return 1
    return 0


def compute_size(size: str) -> str:
    """A compute-bound workload's size: long enough to time (fib 27 at the default profile)."""
    return "tiny" if size == "tiny" else "default" if size == "small" else size


def render(out: Path) -> int:
    try:
        rows = explib.read_results(out / "results.csv")
    except OSError as e:
        return explib.bad_input(PROG, f"--render: {e}")
    summary = summarize(rows)
    (out / "ablation.md").write_text(summary["markdown"])
    print(summary["text"])
    return 0


def fraction(num: int, den: int) -> float | None:
    return num / den if den else None


def run_fractions(r: dict) -> dict:
    """One run's counts of what the scheduler did, as fractions."""
    idle = {int(k): int(v) for k, v in (kv.split(":") for kv in r["idle_ns_by_node"].split())}
    if r["kind"] != "memory":  # no blocks, no workers: only the runtime's counters
        return {"remote_blocks": None, "started_home": None, "placed": None,
                "moved_remote": int(r["moved_remote"] or 0), "idle_ms": {k: v / 1e6 for k, v in idle.items()}}
    return {"remote_blocks": fraction(int(r["remote_blocks"] or 0), int(r["blocks"] or 0)),
            "started_home": fraction(int(r["started_home"] or 0), int(r["workers"] or 0)),
            "placed": fraction(int(r["placed"] or 0), int(r["workers"] or 0)),
            "moved_remote": int(r["moved_remote"] or 0),
            "idle_ms": {k: v / 1e6 for k, v in idle.items()}}


def summarize(rows: list[dict]) -> dict:
    """Medians with 95% bootstrap intervals per (topology, Ps, workload, arm, penalty); the
    counters per arm at the uniform penalty (or the lowest run); speedups over the flat arm."""
    ok = [r for r in rows if r["ok"] == 1]
    groups: dict[tuple, list[dict]] = {}
    for r in ok:
        key = (r["topology"], r["procs"], r["workload"], r["arm"], float(r["latency_penalty"] or 0))
        groups.setdefault(key, []).append(r)
    medians = []
    spreads = {}
    for key, runs in sorted(groups.items()):
        s = explib.spread([float(r["seconds"]) for r in runs])
        spreads[key] = s
        fr = [run_fractions(r) for r in runs]
        med = lambda name: statistics.median(x[name] for x in fr) if all(x[name] is not None for x in fr) else None  # noqa: E731
        steals = [int(r["steals_same_node"] or 0) + int(r["steals_remote"] or 0) for r in runs]
        nodes = sorted({k for x in fr for k in x["idle_ms"]})
        medians.append({"topology": key[0], "procs": key[1], "workload": key[2], "arm": key[3], "penalty": key[4],
                        "oversubscribed": bool(runs[0]["oversubscribed"]), "emulated": True, "latency_model": True,
                        "seconds_median": s.median, "seconds_ci95": [s.ci_lo, s.ci_hi], "n": s.n,
                        "remote_blocks": med("remote_blocks"), "started_home": med("started_home"),
                        "placed": med("placed"), "moved_remote": med("moved_remote"),
                        "steals": statistics.median(steals),
                        "idle_ms_by_node": {n: statistics.median(x["idle_ms"].get(n, 0) for x in fr) for n in nodes}})
    by = {(m["topology"], m["procs"], m["workload"], m["arm"], m["penalty"]): m for m in medians}
    configs = sorted({(m["topology"], m["procs"]) for m in medians})
    arms = [a for a in ARMS if any(m["arm"] == a for m in medians)]
    penalties = sorted({m["penalty"] for m in medians if m["penalty"] > 0})  # 0: no model (fork-join)
    text, md = [], ["# Ablation: placement and the stealing hierarchy, separated\n"]
    for t, n in configs:
        over = any(m["oversubscribed"] for m in medians if (m["topology"], m["procs"]) == (t, n))
        title = f"{t} (emulated), {n} Ps" + (" (OVERSUBSCRIBED: more Ps than CPUs, not to be quoted)" if over else "")
        ws = [w for w in WORKLOADS if any(m["workload"] == w and (m["topology"], m["procs"]) == (t, n) for m in medians)]
        base = penalties[0] if penalties else 0.0
        counter_rows = []
        for w in ws:
            for a in arms:
                m = by.get((t, n, w, a, base if w in MEMORY else 0.0))
                if not m:
                    continue
                idle = ", ".join(f"{k}: {explib.fmt(v)}" for k, v in m["idle_ms_by_node"].items())
                counter_rows.append([w, a, pct(m["remote_blocks"]), pct(m["started_home"]), pct(m["placed"]),
                                     explib.fmt(m["steals"]), explib.fmt(m["moved_remote"]), idle])
        counter_headers = ["workload", "arm", "blocks away from home", "workers started home", "placed", "steals",
                           "goroutines moved across nodes", "idle ms by node"]
        # Each arm against flat, by the ratio of medians with its interval and a permutation
        # test, Holm-corrected over this configuration's table (pipeline/inference.py).
        times = {k[2:]: [float(r["seconds"]) for r in v] for k, v in groups.items() if k[:2] == (t, n)}
        family = {(w, a, r): inference.compare(times[(w, "flat", r)], times[(w, a, r)])
                  for (w, a, r) in times if a != "flat" and (w, "flat", r) in times}
        inference.judge(family)
        time_rows = []
        for w in ws:
            if w not in MEMORY:
                continue
            flat = {r: spreads.get((t, n, w, "flat", r)) for r in penalties}
            time_rows.append([w, "flat s"] + [flat[r].with_ci() if flat[r] else "-" for r in penalties])
            for a in arms:
                if a != "flat":
                    time_rows.append([w, f"flat/{a}"] + [inference.cell(family.get((w, a, r))) for r in penalties])
        time_headers = ["workload", "", *[f"x{r:g}" for r in penalties]]
        compute_rows = []
        for w in ws:
            if w in MEMORY:
                continue
            flat = spreads.get((t, n, w, "flat", 0.0))
            compute_rows.append([w, "flat s", flat.with_ci() if flat else "-"])
            for a in arms:
                if a != "flat" and (w, a, 0.0) in family:
                    compute_rows.append([w, f"flat/{a}", inference.cell(family[(w, a, 0.0)])])
        counters_note = (f"Medians over the repetitions at penalty {base:g}, per run: blocks worked on a node other "
                         "than their data's, workers whose first block ran at home, goroutines the runtime placed "
                         "(NUMA mode's go_on) over the workers, goroutines moved across nodes (steals and remote "
                         "global-queue takes), idle time of each node's Ps (the whole run, set-up included). "
                         "These are counts, not modelled times; they are taken at the lowest penalty "
                         "(1.0: uniform memory) because the model's charges change the timing, and with "
                         "it the scheduler's choices (flat mode's blocks away from home fall as the "
                         "penalty grows).")
        time_note = ("Seconds: median (95% bootstrap interval) of the kernel time of the flat arm; below it each arm's "
                     "speedup over flat (flat median / arm median, > 1: the arm is faster) with the bootstrap 95% "
                     "interval of that ratio; '*': a difference that stands after Holm's correction over this "
                     "configuration's comparisons (pipeline/inference.py), '~': none shown. Columns: the model's "
                     "remote/local penalty. EMULATED topology, EMULATED memory latency: every speedup is a "
                     "projection under the model, not a measurement.")
        for out, fmt in ((text, False), (md, True)):
            out.append(("## " if fmt else "") + title + "\n")
            out.append(("### " if fmt else "") + f"Where the work ran (counts, at penalty {base:g})\n")
            out.append(explib.table(counter_rows, counter_headers, markdown=fmt) + "\n\n" + counters_note + "\n")
            out.append(("### " if fmt else "") + "Time, by remote penalty (PROJECTION under the latency model)\n")
            out.append(explib.table(time_rows, time_headers, markdown=fmt) + "\n\n" + time_note + "\n")
            if compute_rows:
                out.append(("### " if fmt else "") + "Fork-join on uniform memory (no model)\n")
                out.append(explib.table(compute_rows, ["workload", "", "uniform"], markdown=fmt) + "\n\n"
                           "Kernel seconds of the flat arm, median (95% bootstrap interval), and each arm's speedup "
                           "over it with its interval ('*', '~': as above). EMULATED topology: scheduling only.\n")
    return {"medians": medians, "text": "\n".join(text), "markdown": "\n".join(md)}


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


if __name__ == "__main__":
    sys.exit(main())
