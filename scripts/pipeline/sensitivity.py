#!/usr/bin/env python3
"""The virtual comparisons against the model's constants (core/src/vtime/README.md, "What the
verdicts depend on").

usage: scripts/pipeline/sensitivity.py --build-dir VBUILD --out OUT [--quick | --full]
                                       [--repetitions N] [--seed S]

VBUILD is a virtual-time build (cmake -DNUGO_VIRTUAL_TIME=ON). Virtual time's results rest on
constants that are inputs, not measurements: the quantum, a wake-up's latency, the price of a
cache line within a node and across nodes (catalogue.VIRTUAL_MODEL), and, for the memory-bound
workloads, the latency model's penalty for a remote block. This step runs NUMA mode against flat
mode in virtual time with each of them halved and doubled, one at a time, beside the baseline
(every constant as catalogue.VIRTUAL_MODEL gives it, the penalty the machine's distance ratio;
the penalty's extra cost, penalty - 1, is what is halved and doubled), and says for each
configuration (machine, workload) whether its verdict survives every variation:

  NUMA faster   flat's median time over NUMA's above 1, and a permutation test of that ratio
                rejects equality, Holm-corrected within the setting's memory-bound
                configurations and within its others (pipeline/inference.py; with 3 runs a side
                no difference can be called: the quick run only checks the plumbing)
  NUMA slower   below 1, likewise
  no difference the test does not reject

A verdict that changes under some variation is reported as depending on that constant.

Sizes: the default run is reduced (small sizes; the 4-socket Xeon's shape, v4x24, 96 virtual
CPUs; the memory-bound workloads and fib), so that reproduce.sh stays in its budget: its
verdicts are its own baseline's, at those sizes. --full: every virtual machine of the set, every
workload, default sizes. --quick: the CI smoke (tiny sizes, the 2-socket shape, triad and fib,
3 repetitions). Every run is seeded (NUGO_SEED: its repetition's number, so that a repetition's
flat and NUMA runs draw from one seed), and all runs go in one random order drawn from --seed
(default 1).

Writes OUT/results.csv (every run, sweep.py's columns and `variation`), OUT/sensitivity.json
(the verdicts), OUT/sensitivity.md (the table). Exit status: 0 (a flipped verdict is a result,
not an error); 1 if a run failed; 2 on bad usage.
"""
import csv
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue  # noqa: E402
from pipeline import explib  # noqa: E402
from pipeline import inference  # noqa: E402
from pipeline import sweep  # noqa: E402

PROG = "sensitivity.py"
MEMORY = ("triad", "triad_skew", "stencil", "histogram", "spmv")
BASELINE = "baseline"


def variations() -> list[tuple[str, str, float]]:
    """(name, constant, factor): the baseline, then each constant halved and doubled."""
    out = [(BASELINE, "", 1.0)]
    for const in catalogue.SENSITIVITY_CONSTANTS:
        for f in catalogue.SENSITIVITY_FACTORS:
            out.append((f"{const} x{f:g}", const, f))
    return out




def base_penalty(exe: Path, t) -> float:
    """The latency model's penalty on t: the distance ratio the workload derives (a tiny run)."""
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")} | {
        "NUGO_TOPOLOGY": t.spec, "NUGO_PROCS": "2", "NUGO_VIRTUAL": catalogue.virtual_setting()}
    out = subprocess.run([str(exe), "triad", "--size", "tiny"], env=env, capture_output=True, text=True)
    line = next((l for l in out.stdout.splitlines() if l.startswith("{")), None)
    if out.returncode != 0 or line is None or json.loads(line).get("latency_penalty") is None:
        raise explib.Failed(f"{exe} triad on {t.name}: no latency penalty ({explib.tail(out.stderr, 3)})")
    return float(json.loads(line)["latency_penalty"])


def main() -> int:
    p = explib.parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="every virtual machine and workload, default sizes")
    p.add_argument("--repetitions", type=int, default=None, help="runs per configuration (default 8; --quick 3)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the runs' order (default 1)")
    args = p.parse_args()
    if args.quick and args.full:
        return explib.bad_input(PROG, "--quick and --full: one or the other")
    # Eight a side: a setting's family is its 9 to 11 verdict cells, within what the median
    # test's floor allows at 8 (0.05 / 11 = 0.0045 > 0.0031; pipeline/inference.py).
    reps = args.repetitions or (3 if args.quick else 8)
    if reps < 2:
        return explib.bad_input(PROG, "--repetitions: at least 2 (an interval needs two runs)")
    vbuild = args.build_dir.resolve()
    exe = vbuild / "experiments" / "nugo-workload"
    if not exe.exists() or not explib.is_virtual_build(vbuild):
        return explib.bad_input(PROG, f"--build-dir {vbuild}: not a virtual-time build with experiments/"
                                      "nugo-workload (cmake -DNUGO_VIRTUAL_TIME=ON; scripts/test.sh --virtual)")
    profile = "quick" if args.quick else "full" if args.full else "default"
    names = {"quick": ["v2x16"], "default": ["v4x24"], "full": list(catalogue.VIRTUAL)}[profile]
    size = {"quick": "tiny", "default": "small", "full": "default"}[profile]
    try:
        topologies = [sweep.resolve_topology(vbuild, n) for n in names]
        every = explib.workload_names(exe)
    except (explib.Failed, catalogue.MissingMachine) as e:
        return explib.bad_input(PROG, str(e))
    workloads = {"quick": ["triad", "fib"], "default": [*MEDIUM_SET], "full": every}[profile]
    try:
        penalties = {t.name: base_penalty(exe, t) for t in topologies}
    except explib.Failed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1

    plan = [(v, t, w, m, rep) for v in variations() for t in topologies for w in workloads
            for m in ("flat", "numa") for rep in range(1, reps + 1)
            if not (v[1] == "penalty" and w not in MEMORY)]  # the penalty is the memory-bound ones' only
    random.Random(args.seed).shuffle(plan)
    out = args.out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runner = explib.Runner(timeout_s=600, echo=False)
    print(f"{PROG}: {len(plan)} runs ({profile}: {size} sizes, {reps} repetitions, "
          f"{len(variations())} settings) on {', '.join(names)}; results in {out}", file=sys.stderr)
    progress = explib.Progress(len(plan))
    rows, failures = [], 0
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sweep.COLUMNS + ["variation"])
        writer.writeheader()
        for (name, const, factor), t, w, m, rep in plan:
            model = {const: catalogue.VIRTUAL_MODEL[const] * factor} if const in catalogue.VIRTUAL_MODEL else None
            penalty = None
            if w in MEMORY and const == "penalty":
                penalty = round(1 + (penalties[t.name] - 1) * factor, 4)
            run_id = f"{name.replace(' ', '')}-{t.name}-{m}-{w}-r{rep}"
            row = sweep.one_run(vbuild, exe, None, runner, logs, run_id, t, w, m, t.pus, "none", rep, size,
                                0, penalty=penalty, model=model)
            row["variation"] = name
            failures += not sweep.record(PROG, run_id, row, writer, f, rows)
            progress.finished(f"{name:16} {t.name:6} {m:4} {w}")
    if failures:
        print(f"{PROG}: {failures} of {len(plan)} runs failed (logs in {logs})", file=sys.stderr)
        return 1

    settings = {"profile": profile, "size": size, "repetitions": reps, "seed": args.seed,
                "machines": names, "workloads": workloads, "model": catalogue.VIRTUAL_MODEL,
                "constants": list(catalogue.SENSITIVITY_CONSTANTS),
                "factors": list(catalogue.SENSITIVITY_FACTORS)}
    report(out, rows, [(t.name, t.pus) for t in topologies], workloads, penalties, settings,
           explib.quote(sys.argv))
    return 0


def report(out: Path, rows: list[dict], topologies: list[tuple[str, int]], workloads: list[str],
           penalties: dict, settings: dict, command: str) -> None:
    """The verdicts of a run's rows: OUT/sensitivity.md and sensitivity.json."""
    profile, size, reps, seed = settings["profile"], settings["size"], settings["repetitions"], settings["seed"]
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["variation"], r["topology"], r["workload"], r["mode"]), []).append(float(r["seconds"]))
    # A permutation test of flat's median over NUMA's per configuration, Holm-corrected within
    # the setting's memory-bound configurations and within its others (pipeline/inference.py):
    # families the same size under every setting (the penalty's settings run the memory-bound
    # ones only), so that no verdict flips for the family's size alone.
    tests = {}
    for name, _, _ in variations():
        for memory in (True, False):
            tests |= inference.judge({(name, t, w): inference.compare(groups[(name, t, w, "flat")],
                                                                      groups[(name, t, w, "numa")])
                                      for t, _ in topologies for w in workloads
                                      if (w in MEMORY) == memory and (name, t, w, "flat") in groups
                                      and (name, t, w, "numa") in groups})
    verdicts = []
    for t, pus in topologies:
        for w in workloads:
            cells = {}
            for name, const, _ in variations():
                c = tests.get((name, t, w))
                if c is None:
                    continue
                cells[name] = {"verdict": c.verdict("NUMA faster", "NUMA slower"), "ratio": c.ratio, "lo": c.lo,
                               "hi": c.hi, "p": c.p, "constant": const}
            if BASELINE not in cells:
                continue  # a configuration whose baseline runs are missing has no verdict
            base = cells[BASELINE]["verdict"]
            flips = sorted({c["constant"] for n, c in cells.items() if n != BASELINE and c["verdict"] != base})
            verdicts.append({"topology": t, "procs": pus, "workload": w, "baseline": base,
                             "survives": not flips, "depends_on": flips, "cells": cells})
    headers = ["machine", "workload", "baseline verdict (flat/NUMA)"] + \
        [n for n, _, _ in variations() if n != BASELINE] + ["survives"]
    table = []
    for v in verdicts:
        b = v["cells"][BASELINE]
        cells = []
        for n, _, _ in variations():
            if n == BASELINE:
                continue
            c = v["cells"].get(n)
            cells.append("-" if c is None else f"{c['ratio']:.2f}" + ("" if c["verdict"] == v["baseline"] else " FLIPS"))
        table.append([f"{v['topology']} ({v['procs']})", v["workload"], f"{v['baseline']} {b['ratio']:.2f} "
                      f"({b['lo']:.2f}-{b['hi']:.2f})"] + cells +
                     ["yes" if v["survives"] else "no: depends on " + ", ".join(v["depends_on"])])
    survived = sum(1 for v in verdicts if v["survives"])
    md = [f"# Virtual time: the verdicts against the model's constants ({profile} run)", "",
          f"Made by `{command}`. VIRTUAL TIME, not hardware: NUMA mode against flat mode, "
          f"one P per virtual CPU, {size} sizes, {reps} runs per mode and setting, in one random order "
          f"(seed {seed}). Baseline: `NUGO_VIRTUAL={catalogue.virtual_setting()}`, the latency "
          f"penalty the machine's distance ratio ({', '.join(f'{k} {v:g}' for k, v in penalties.items())}); "
          "each other column halves or doubles one constant (for the penalty, its extra cost). A cell is "
          "flat's median time over NUMA's; a verdict is a permutation test of that ratio, Holm-corrected within "
          "the setting's memory-bound configurations and within its others; FLIPS: the verdict differs from the "
          "baseline's.", "",
          explib.table(table, headers, markdown=True), "",
          f"{survived} of {len(verdicts)} verdicts survive every variation." +
          ("" if profile == "full" else " A reduced run: its verdicts are its own baseline's at these sizes "
           "(--full runs the whole virtual set at default sizes)."), ""]
    (out / "sensitivity.md").write_text("\n".join(md))
    explib.write_json(out / "sensitivity.json", {"verdicts": verdicts, "survived": survived,
                                                 "penalties": penalties},
                      settings, [command])
    print("\n".join(md))
    print(f"{PROG}: wrote {out}/sensitivity.md, sensitivity.json and results.csv")


# The default run's workloads: the memory-bound ones, whose verdicts the latency model decides,
# and fib, the fork-join one whose verdict the runtime's own charges decide.
MEDIUM_SET = (*MEMORY, "fib")

if __name__ == "__main__":
    sys.exit(main())
