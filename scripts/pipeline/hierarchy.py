#!/usr/bin/python3
"""The stealing hierarchy on trial: the ablation's arms in virtual time, at one P per PU, on real
machine shapes whose nodes have many Ps and (two of them) more than one remote tier.

usage: scripts/pipeline/hierarchy.py --build-dir VBUILD --out DIR [--quick | --full] [--only W,...]
                           [--topology T,...] [--arms A,...] [--levels L,...] [--repetitions R]
                           [--seed S] [--dry-run] [--render]

NUMA mode steals in a hierarchy: a thief takes work from its own node's Ps first, then from the
other nodes, nearest first. ablation.py separates that from placement on the emulated 2-node
machine at one P per node, where there is no same-node victim and one remote node: the
hierarchy cannot act there. Here it can. VBUILD is a virtual-time build (-DNUGO_VIRTUAL_TIME=ON;
core/src/vtime/README.md): every virtual CPU has a P, every time is VIRTUAL, under the model's
constants (catalogue.VIRTUAL_MODEL), and every run is seeded with its repetition's number.

The arms, everything else equal (the machine, the Ps, the sizes, the seed):

  arm              mode  program  NUGO_NUMA                   what it is
  flat             flat  go       -                           Go's scheduler
  random           numa  go       steal=flat                  per-node queues, Go's stealing: random
                                                              victims over every P
  node             numa  go       steal=node                  own node first, then the other nodes
                                                              in random order (no distances)
  nearest          numa  go       steal=nearest               own node first, then the other nodes
                                                              nearest first (the full hierarchy)
  S+queued         numa  go_on    steal=S,go_on=queued        each of the three, with the workers
                                                              placed on their data's node's global
                                                              queue (others may rob it)
  S+pinned         numa  go_on    steal=S,go_on=pinned        ... on its pinned queue (NUMA mode's
                                                              default: they start at home, always)

nearest+pinned is NUMA mode as shipped. Placement (go_on) exists in the memory-bound workloads
only; the others run the first four arms. On a machine with one remote tier (v2x16, v4x24) node
and nearest plan the same steal order: there they are a control, whose comparison must find
nothing.

Levels, for every comparison (the model's parts added one at a time):
  sched    scheduling alone: the cost model's cache-line charges off (line = remote_line = 0)
           and the latency model's penalty 1.0 (remote memory costs what local does)
  costs    the cost model's charges (steals, queues, migrations priced by distance)
  latency  the cost model and the latency model's penalty, 1.74 at the nearest remote distance
           and growing with the distance matrix (memory-bound workloads only: the others have no
           data to place)

Workloads: fork-join where stealing decides where work runs (fib, uts; --full adds nqueens and
mergesort), the skewed memory-bound kernels, where a node that is done must take remote work or
idle (triad_skew, spmv; --full adds triad, stencil and histogram), and a communication one
(fanin; --full adds pingpong_hogs).

Profiles: --quick (the Cluster-on-Die machine, tiny sizes, 1 repetition, fib, triad_skew and
fanin: the CI smoke, whose ratios are not quoted), the default (v4x7, v4x24 and v24x16, small
sizes, 10 repetitions, the levels sched and latency), --full (every machine of
catalogue.HIERARCHY, every workload above, the three levels).

Statistics: each comparison is the ratio of two arms' median virtual times with a bootstrap 95%
interval of the ratio and a permutation test, corrected by Holm's method within a family (one
machine, one level): pipeline/inference.py. Counts (steals and goroutines moved by distance
class, blocks worked away from their data's node, idle time per node) are medians over the
repetitions.

Writes DIR/results.csv (sweep.py's columns), DIR/hierarchy.json (settings, the comparisons,
the counts), DIR/hierarchy.md (the tables and the findings) and DIR/logs/. Exit status 0 when
every run succeeded, 1 when one failed, 2 on bad input (before anything runs).
"""
from __future__ import annotations

import csv
import json
import math
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

PROG = "hierarchy.py"
STEALS = {"random": "flat", "node": "node", "nearest": "nearest"}  # arm's name: NUGO_NUMA steal=
PLACEMENTS = ("", "queued", "pinned")


def _arms() -> dict[str, sweep.Arm]:
    arms = {"flat": sweep.Arm("flat", "flat", "go")}
    for placement in PLACEMENTS:
        for name, steal in STEALS.items():
            arm = name + (f"+{placement}" if placement else "")
            numa = f"steal={steal}" + (f",go_on={placement}" if placement else "")
            arms[arm] = sweep.Arm(arm, "numa", "go_on" if placement else "go", numa)
    return arms


ARMS = _arms()
PLAIN_ARMS = ("flat", "random", "node", "nearest")  # the arms of a workload without placement
SHIPPED = "nearest+pinned"
LEVELS = ("sched", "costs", "latency")
LEVEL_TEXT = {"sched": "scheduling alone", "costs": "+ cost model", "latency": "+ latency model"}
MEASURED_PENALTY = catalogue.MEASURED_PENALTY
FORK_JOIN = {"default": ["fib", "uts"], "full": ["fib", "uts", "nqueens", "mergesort"]}
MEMORY = {"default": ["triad_skew", "spmv"], "full": ["triad_skew", "spmv", "triad", "stencil", "histogram"]}
COMMUNICATION = {"default": ["fanin"], "full": ["fanin", "pingpong_hogs"]}
QUICK_WORKLOADS = ["fib", "triad_skew", "fanin"]
ALL_MEMORY = MEMORY["full"]
ALL_WORKLOADS = FORK_JOIN["full"] + MEMORY["full"] + COMMUNICATION["full"]
# The comparisons of the trial: (name, what it isolates, a, b); each is a's time over b's, so
# a ratio above 1 means b is faster. The first two of each pair are without placement, the
# second with go_on=queued (where a thief of another node may take placed work).
CONTRASTS = [
    ("node first", "own node before any other (random: Go's victims over every P)", "random", "node"),
    ("node first, queued", "the same, the workers placed on a global queue", "random+queued", "node+queued"),
    ("distance order", "remote nodes nearest first, not in random order", "node", "nearest"),
    ("distance order, queued", "the same, the workers placed on a global queue", "node+queued", "nearest+queued"),
    ("placement, queued", "workers queued on their node (under the full hierarchy)", "nearest", "nearest+queued"),
    ("placement, pinned", "workers pinned to their node (under the full hierarchy)", "nearest", "nearest+pinned"),
    ("NUMA mode as shipped", "flat mode against nearest+pinned (nearest where nothing is placed)", "flat", SHIPPED),
]


def contrast_arms(name: str, a: str, b: str, workload: str) -> tuple[str, str] | None:
    """The two arms one of CONTRASTS compares for a workload, or None where it does not apply:
    NUMA mode as shipped is nearest for a program that places nothing, and a placement
    contrast needs a program that places."""
    if workload in ALL_MEMORY:
        return a, b
    if name == "NUMA mode as shipped":
        return a, "nearest"
    return (a, b) if a in PLAIN_ARMS and b in PLAIN_ARMS else None


def level_model(level: str) -> dict | None:
    """The virtual-time constants of a level (None: catalogue.VIRTUAL_MODEL's)."""
    return {"line": 0, "remote_line": 0} if level == "sched" else None


def level_of(row: dict) -> str:
    """A results row's level, from what the run was given."""
    if "line=0ns" in (row.get("virtual_setting") or ""):
        return "sched"
    return "latency" if float(row.get("latency_penalty") or 1.0) > 1.0 else "costs"


def plan_runs(machines: list, workloads: list[str], arms: list[str], levels: list[str], reps: int) -> list[tuple]:
    """Every run: (repetition, machine, workload, arm, level); no arm with placement for a
    workload without it, no latency level for a workload without data."""
    runs = []
    for rep in range(1, reps + 1):
        for t in machines:
            for w in workloads:
                memory = w in ALL_MEMORY
                for a in arms:
                    if not memory and a not in PLAIN_ARMS:
                        continue
                    for level in levels:
                        if level == "latency" and not memory:
                            continue
                        runs.append((rep, t, w, a, level))
    return runs


def main() -> int:
    p = explib.parser(PROG, __doc__)
    p.add_argument("--full", action="store_true", help="every machine of the catalogue, every workload")
    p.add_argument("--only", help=f"workloads, comma-separated (known: {','.join(ALL_WORKLOADS)})")
    p.add_argument("--topology", help=f"virtual machines, comma-separated (known: {','.join(catalogue.HIERARCHY)})")
    p.add_argument("--arms", help=f"arms, comma-separated (default: those the comparisons read; --full: all: {','.join(ARMS)})")
    p.add_argument("--levels", help=f"levels, comma-separated (default: {','.join(LEVELS)})")
    p.add_argument("--repetitions", type=int, help="runs of each configuration (1 quick, 10 otherwise)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the runs' random order (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the plan, run nothing")
    p.add_argument("--render", action="store_true", help="rewrite OUT/hierarchy.md and .json from OUT/results.csv")
    args = p.parse_args()
    if args.render:
        return render(args.out.resolve())
    if args.quick and args.full:
        return explib.bad_input(PROG, "--quick and --full exclude each other")
    profile = "quick" if args.quick else "full" if args.full else "default"
    size = "tiny" if args.quick else "small" if profile == "default" else "default"
    reps = args.repetitions if args.repetitions is not None else (1 if args.quick else 10)
    if reps < 1:
        return explib.bad_input(PROG, f"--repetitions {reps}: at least 1")
    catalogue_workloads = QUICK_WORKLOADS if args.quick else (
        FORK_JOIN[profile] + MEMORY[profile] + COMMUNICATION[profile])
    workloads = sweep.parse_list(args.only) or catalogue_workloads
    # The default runs the arms its comparisons read (CONTRASTS); --full and --quick every arm
    # (random and node with pinned placement too, for their counts).
    used = {"flat", SHIPPED} | {x for c in CONTRASTS for x in c[2:]}
    arms = sweep.parse_list(args.arms) or [a for a in ARMS if args.full or args.quick or a in used]
    # The default run takes the two ends, scheduling alone and the whole model (what the claims
    # and the paper quote); --full and --quick add the cost model's charges alone between them.
    levels = sweep.parse_list(args.levels) or (list(LEVELS) if args.full or args.quick else ["sched", "latency"])
    for a in arms:
        if a not in ARMS:
            return explib.bad_input(PROG, f"--arms: unknown arm '{a}' (known: {', '.join(ARMS)})")
    if "flat" not in arms:
        return explib.bad_input(PROG, "--arms: the flat arm is every comparison's baseline; keep it")
    for level in levels:
        if level not in LEVELS:
            return explib.bad_input(PROG, f"--levels: unknown level '{level}' (known: {', '.join(LEVELS)})")
    names = sweep.parse_list(args.topology) or (
        ["v4x7"] if args.quick else list(catalogue.HIERARCHY) if args.full else list(catalogue.HIERARCHY_DEFAULT))
    for n in names:
        if n not in catalogue.HIERARCHY:
            return explib.bad_input(PROG, f"--topology: unknown machine '{n}' (known: {', '.join(catalogue.HIERARCHY)})")
    build = args.build_dir.resolve()
    exe = build / "experiments" / "nugo-workload"
    if not os.access(exe, os.X_OK) or not explib.is_virtual_build(build):
        return explib.bad_input(PROG, f"--build-dir {build}: not a virtual-time build with nugo-workload built "
                                "(cmake -DNUGO_VIRTUAL_TIME=ON; cmake --build BUILD --target nugo-workload nugo-topo)")
    try:
        known = explib.workload_names(exe)
        for w in workloads:
            if w not in known or w not in ALL_WORKLOADS:
                return explib.bad_input(PROG, f"--only: '{w}' is not a workload of the trial "
                                        f"(known: {', '.join(ALL_WORKLOADS)})")
        machines = [sweep.resolve_topology(build, n) for n in names]
    except explib.Failed as e:
        return explib.bad_input(PROG, str(e))
    runs = plan_runs(machines, workloads, arms, levels, reps)
    if not runs:
        return explib.bad_input(PROG, "nothing to run: the latency level and the placed arms apply to the "
                                f"memory-bound workloads only ({', '.join(ALL_MEMORY)})")
    random.Random(args.seed).shuffle(runs)
    plan = (f"{len(runs)} runs: {len(machines)} machines ({', '.join(f'{t.name}: {t.pus} CPUs' for t in machines)}), "
            f"{len(workloads)} workloads, {len(arms)} arms, {len(levels)} levels, {reps} repetitions, {size} sizes")
    if args.dry_run:
        print(f"{PROG}: would run {plan}")
        return 0

    out = args.out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runner = explib.Runner(timeout_s=120 if args.quick else 600, echo=False)
    real_cpus = len(os.sched_getaffinity(0))
    (out / "machine.json").write_text(json.dumps(sweep.machine_info(build, machines), indent=2) + "\n")
    print(f"{PROG}: {plan}, in a seeded random order; VIRTUAL time; results in {out}", file=sys.stderr)
    progress = explib.Progress(len(runs))
    rows, failures = [], 0
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sweep.COLUMNS)
        writer.writeheader()
        for rep, t, w, a, level in runs:
            memory = w in ALL_MEMORY
            penalty = (MEASURED_PENALTY if level == "latency" else 1.0) if memory else None
            run_id = f"{t.name}-{w}-{a}-{level}-r{rep}"
            row = sweep.one_run(build, exe, None, runner, logs, run_id, t, w, ARMS[a].mode, t.fixed_procs[0], "none",
                                rep, size, real_cpus, arm=ARMS[a], penalty=penalty, model=level_model(level))
            failures += not sweep.record(PROG, run_id, row, writer, f, rows)
            progress.finished(f"{t.name:6} {w:10} {a:15} {level:7} rep {rep}: "
                              + (f"{float(row['seconds']) * 1e3:.3f} virtual ms" if row["ok"] == 1 else "FAILED"))
    settings = {"profile": profile, "size": size, "repetitions": reps, "workloads": workloads, "levels": levels,
                "arms": {a: vars(ARMS[a]) for a in arms}, "machines": {t.name: t.spec for t in machines},
                "seed": args.seed, "order": "random (seeded)", "clock": "virtual",
                "virtual_setting": {lv: catalogue.virtual_setting(level_model(lv)) for lv in levels},
                "latency_penalty": MEASURED_PENALTY, "failures": failures,
                "remote_distances": {t.name: sorted({d for row in t.distance for d in row if d > min(row)})
                                     for t in machines}}
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    write_summary(out, explib.read_results(out / "results.csv"), settings, runner.commands[:1])
    if failures:
        print(f"{PROG}: {failures} of {len(runs)} runs failed (logs in {logs})", file=sys.stderr)
        return 1
    return 0


def render(out: Path) -> int:
    try:
        rows = explib.read_results(out / "results.csv")
        settings = json.loads((out / "settings.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        return explib.bad_input(PROG, f"--render: {e}")
    missing = [k for k in ("steals_remote_by_distance", "moved_remote_by_distance", "idle_ns_by_node")
               if rows and k not in rows[0]]
    if "remote_distances" not in settings or missing:
        return explib.bad_input(PROG, f"--render: {out} was not written by this version of {PROG} "
                                f"(settings.json lacks remote_distances, or results.csv lacks {missing})")
    write_summary(out, rows, settings, [])
    return 0


def write_summary(out: Path, rows: list[dict], settings: dict, commands: list[str]) -> None:
    summary = summarize(rows, settings["remote_distances"])
    (out / "hierarchy.md").write_text(summary["markdown"])
    print("\n" + summary["markdown"])
    explib.write_json(out / "hierarchy.json", {k: summary[k] for k in ("comparisons", "counts", "findings")},
                      settings, commands + ["nugo-workload WORKLOAD --size SIZE --placement P --latency-penalty R "
                                            "(NUGO_* per run: results.csv)"])


def by_distance(text: str) -> dict[int, int]:
    """results.csv's "distance:count ..." as a dict."""
    return {int(d): int(c) for d, c in (kv.split(":") for kv in (text or "").split())}


def counts(runs: list[dict], distances: list[int]) -> dict:
    """The medians over a configuration's runs of what the scheduler did."""
    def med(values):
        return statistics.median(values) if values else None
    idle = [{int(k): int(v) / 1e6 for k, v in (kv.split(":") for kv in r["idle_ns_by_node"].split())} for r in runs]
    nodes = sorted({n for x in idle for n in x})
    blocks = [int(r["remote_blocks"]) / int(r["blocks"]) for r in runs if str(r["blocks"]) not in ("", "0")]
    return {"n": len(runs), "virtual_ms": med([float(r["seconds"]) * 1e3 for r in runs]),
            "procs_used": med([int(r["procs_used"]) for r in runs if str(r.get("procs_used") or "") != ""]),
            "steals_same_node": med([int(r["steals_same_node"]) for r in runs]),
            "steals_remote_by_distance": {d: med([by_distance(r["steals_remote_by_distance"]).get(d, 0) for r in runs])
                                          for d in distances},
            "moved_same_node": med([int(r["moved_same_node"]) for r in runs]),
            "moved_remote_by_distance": {d: med([by_distance(r["moved_remote_by_distance"]).get(d, 0) for r in runs])
                                         for d in distances},
            "remote_blocks": med(blocks),
            "idle_ms_by_node": {n: med([x.get(n, 0.0) for x in idle]) for n in nodes}}


def summarize(rows: list[dict], remote_distances: dict[str, list[int]]) -> dict:
    ok = [r for r in rows if r["ok"] == 1]
    groups: dict[tuple, list[dict]] = {}
    for r in ok:
        groups.setdefault((r["topology"], r["workload"], level_of(r), r["arm"]), []).append(r)
    machines = [m for m in catalogue.HIERARCHY if any(k[0] == m for k in groups)]
    workloads = [w for w in ALL_WORKLOADS if any(k[1] == w for k in groups)]
    # A run's virtual time is positive (a clock that did not move would be a failed run).
    times = {k: [max(float(r["seconds"]), 1e-9) for r in v] for k, v in groups.items()}

    # Each machine's remote tiers, as nugo-topo read its file when the runs were made.
    remote = {m: sorted(int(d) for d in remote_distances.get(m, [])) for m in machines}

    comparisons = []  # one per (machine, level, workload, contrast), Holm within (machine, level)
    for m in machines:
        for level in LEVELS:
            family = {}
            for w in workloads:
                for name, _, a, b in CONTRASTS:
                    arms = contrast_arms(name, a, b, w)
                    if arms is None:
                        continue
                    ka, kb = (m, w, level, arms[0]), (m, w, level, arms[1])
                    if ka in times and kb in times:
                        family[(w, name)] = inference.compare(times[ka], times[kb])
            inference.judge(family)
            for (w, name), c in family.items():
                comparisons.append({"machine": m, "level": level, "workload": w, "contrast": name,
                                    "ratio": c.ratio, "ci95": [c.lo, c.hi], "p": c.p, "n": [c.n_a, c.n_b],
                                    "differs": c.differs, "verdict": c.verdict(above="faster", below="slower"),
                                    "control": name.startswith("distance order") and single_tier(remote[m])})
    count_rows = []
    for (m, w, level, a), v in sorted(groups.items()):
        count_rows.append({"machine": m, "workload": w, "level": level, "arm": a} | counts(v, remote[m]))

    md = ["# The stealing hierarchy on trial (VIRTUAL time)\n",
          "Every time here is VIRTUAL (core/src/vtime/README.md), on the real machines' shapes "
          "(topology/machines/) at one P per CPU, under the model's constants "
          f"({catalogue.virtual_setting()}); at the sched level the cost model's charges are off. "
          "A ratio is one arm's median virtual time over another's (> 1: the second is faster) with "
          "its bootstrap 95% interval; `*` marks a difference that stands after Holm's correction "
          "within its machine and level (pipeline/inference.py). A projection of the model, not a "
          "measurement of a machine.\n"]
    findings = findings_of(comparisons)
    md.append("## Findings\n")
    md += [f"- {f['text']}" for f in findings]
    md.append("")
    for m in machines:
        tiers = remote[m]
        md.append(f"## {m} ({catalogue.HIERARCHY[m].file}; remote distances {', '.join(map(str, tiers)) or 'none'}"
                  + (": one remote tier, so node and nearest plan the same order (a control)" if single_tier(tiers) else "")
                  + ")\n")
        md.append("### Comparisons (ratio of median virtual times, 95% interval)\n")
        headers = ["workload", "level"] + [c[0] for c in CONTRASTS]
        table = []
        for w in workloads:
            for level in LEVELS:
                cells = {c["contrast"]: c for c in comparisons if (c["machine"], c["workload"], c["level"]) == (m, w, level)}
                if cells:
                    table.append([w, LEVEL_TEXT[level]] + [cell(cells.get(c[0])) for c in CONTRASTS])
        md.append(explib.table(table, headers, markdown=True) + "\n")
        md.append("### Where the work went (medians over the repetitions)\n")
        headers = ["workload", "level", "arm", "virtual ms", "Ps used", "steals same node"] + \
            [f"steals at {d}" for d in tiers] + ["moved same node"] + [f"moved at {d}" for d in tiers] + \
            ["blocks away", "idle ms per node (min / median / max)"]
        table = []
        for c in count_rows:
            if c["machine"] != m:
                continue
            idle = list(c["idle_ms_by_node"].values())
            table.append([c["workload"], LEVEL_TEXT[c["level"]], c["arm"], explib.fmt(c["virtual_ms"]),
                          explib.fmt(c["procs_used"]), explib.fmt(c["steals_same_node"])] +
                         [explib.fmt(c["steals_remote_by_distance"][d]) for d in tiers] +
                         [explib.fmt(c["moved_same_node"])] +
                         [explib.fmt(c["moved_remote_by_distance"][d]) for d in tiers] +
                         ["-" if c["remote_blocks"] is None else f"{100 * c['remote_blocks']:.1f}%",
                          " / ".join(explib.fmt(x) for x in (min(idle), statistics.median(idle), max(idle))) if idle else "-"])
        md.append(explib.table(table, headers, markdown=True) + "\n")
    md.append("## Levels: where NUMA mode's gain comes from\n")
    md.append("flat mode's median virtual time over NUMA mode's as shipped (nearest+pinned; nearest for a "
              "workload that places nothing), at each level; the parts: the ratio with scheduling alone, then "
              "the factor (x) by which each model added multiplies it.\n")
    table = []
    for m in machines:
        for w in workloads:
            got = {c["level"]: c for c in comparisons
                   if (c["machine"], c["workload"], c["contrast"]) == (m, w, "NUMA mode as shipped")}
            if not got:
                continue
            table.append([m, w] + [cell(got.get(lv)) for lv in LEVELS] + [shares(got)])
    md.append(explib.table(table, ["machine", "workload"] + [LEVEL_TEXT[lv] for lv in LEVELS] + ["parts"],
                           markdown=True) + "\n")
    return {"comparisons": comparisons, "counts": count_rows, "findings": findings, "markdown": "\n".join(md)}


def single_tier(tiers: list[int]) -> bool:
    return len(tiers) <= 1


def cell(c: dict | None) -> str:
    if c is None:
        return "-"
    return f"{c['ratio']:.3f} [{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]" + ("*" if c["differs"] else "")


def shares(got: dict) -> str:
    """The ratio's parts per level: scheduling alone's ratio, then each added model's factor."""
    levels = [lv for lv in LEVELS if lv in got]
    ratios = [got[lv]["ratio"] for lv in levels]
    parts = [ratios[0]] + [b / a for a, b in zip(ratios, ratios[1:])]
    # The first is the ratio itself, the others factors.
    return ", ".join(f"{LEVEL_TEXT[lv].lstrip('+ ')} {'' if i == 0 else 'x'}{x:.2f}"
                     for i, (lv, x) in enumerate(zip(levels, parts)))


def findings_of(comparisons: list[dict]) -> list[dict]:
    """One sentence per question, from the comparisons: how many stand, which way, how large."""
    out = []
    questions = [
        ("node_first", "the own node first (random against node, with and without queued placement)",
         lambda c: c["contrast"].startswith("node first")),
        ("distance_order", "the distance order (node against nearest) on machines with more than one remote tier",
         lambda c: c["contrast"].startswith("distance order") and not c["control"]),
        ("distance_control", "the distance order's control (node against nearest where they plan the same order)",
         lambda c: c["contrast"].startswith("distance order") and c["control"]),
        ("placement", "placement (nearest against nearest with queued or pinned workers)",
         lambda c: c["contrast"].startswith("placement")),
        ("shipped", "NUMA mode as shipped against flat mode",
         lambda c: c["contrast"] == "NUMA mode as shipped"),
    ]
    for key, what, pick in questions:
        cs = [c for c in comparisons if pick(c)]
        if not cs:
            continue
        faster = [c for c in cs if c["differs"] and c["ratio"] > 1]
        slower = [c for c in cs if c["differs"] and c["ratio"] < 1]
        geo = math.exp(statistics.fmean(math.log(c["ratio"]) for c in cs))
        def where(group):
            return "; ".join(f"{c['machine']} {c['workload']} {c['level']} {c['ratio']:.2f}" for c in group[:6]) + \
                ("; ..." if len(group) > 6 else "")
        text = (f"**{what}**: {len(cs)} comparisons; {len(faster)} faster beyond the noise"
                + (f" ({where(sorted(faster, key=lambda c: -c['ratio']))})" if faster else "")
                + f", {len(slower)} slower" + (f" ({where(sorted(slower, key=lambda c: c['ratio']))})" if slower else "")
                + f", {len(cs) - len(faster) - len(slower)} no difference; geometric mean of the ratios {geo:.3f}.")
        out.append({"question": key, "comparisons": len(cs), "faster": len(faster), "slower": len(slower),
                    "geomean_ratio": geo, "ratio_range": [min(c["ratio"] for c in cs), max(c["ratio"] for c in cs)],
                    "text": text})
    return out


if __name__ == "__main__":
    sys.exit(main())
