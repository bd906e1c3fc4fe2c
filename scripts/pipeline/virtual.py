#!/usr/bin/env python3
"""Virtual time's validation (core/src/vtime/README.md, "Validation").

usage: scripts/pipeline/virtual.py --build-dir BUILD --out OUT [--quick | --full] [--repetitions N] [--seed S]

BUILD is a virtual-time build (cmake -DNUGO_VIRTUAL_TIME=ON; scripts/test.sh --virtual makes
build-virtual), whose experiments/nugo-workload runs in virtual time when NUGO_VIRTUAL is set.
Every virtual run gives every model constant (catalogue.VIRTUAL_MODEL: none is measured per
run) and a seed (NUGO_SEED: the repetition's number), and every part runs its configurations'
repetitions interleaved in one random order drawn from --seed (default 1): all recorded.

1. Agreement with real time. Each compute workload at 1 and 2 Ps on this machine's own
   topology, in real time and in virtual time: the medians of seconds with their 95% intervals,
   the ratio virtual/real with its interval, and the counters (runs, steals) of each. The bar is
   15%: a ratio whose interval lies inside [0.85, 1.15] meets it, one whose interval lies outside
   misses it, and one whose interval straddles a bound is inconclusive (the table says which).
2. Fork-join on many virtual CPUs: fib and skynet (and uts with --full) at 1 to 256 virtual CPUs
   of the 24-node em64t's shape (flat mode, so that only the CPU count changes), every point
   repeated: virtual seconds, speedup over 1 virtual CPU with its interval, and at every point
     - the work law, T_p >= T_1 / p, and the span law, T_p >= T_inf, where T_inf is the
       computation's depth in goroutines (fib(n): n; skynet: its levels) times the serial
       time per goroutine (T_1 / goroutines);
     - a greedy scheduler's envelope, T_p <= T_1 / p + c T_inf, with c fitted at 2 to 8 CPUs
       (the largest c those points need) and checked at 16 and more;
     - the steals against their O(p T_inf) bound, steals <= k p D (D the depth), k fitted at
       2 to 8 CPUs and checked at 16 and more.
   Medians throughout; a bound counts as kept within 10% (T_1 and T_p are measurements).
3. Determinism: fib at 16 virtual CPUs in NUMA mode on the 2-socket Xeon's shape, one seed,
   repeated: the spread of virtual seconds and of the counters, how many distinct schedules
   (fingerprints) the runs made, and on which node the main goroutine started in each.

Every row says its clock: "real" (this machine, MACHINE) or "virtual" (the virtual machine it
ran on, in virtual time, on MACHINE). Writes OUT/virtual.json (every run, with the command and
seed that made it), OUT/virtual.md (the tables), and OUT/speedup.png (Debian's
python3-matplotlib; skipped with a note if it is missing). --quick: small sizes, 3 repetitions,
CPUs up to 64 (the CI smoke). Default: default sizes, 10 repetitions. --full: uts too.
Exit status: 0 (a broken bound is reported, not an error: the bounds hold for ideal executions,
and T_1 and T_p are measurements); 1 if a run failed or gave a wrong result; 2 on bad usage.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue  # noqa: E402
from pipeline import explib  # noqa: E402

ROOT = explib.ROOT
PROG = "virtual.py"
BIG_MACHINE = catalogue.VALIDATION_BIG
TWO_SOCKET = catalogue.VIRTUAL["v2x16"].file
AGREEMENT = ["fib", "skynet", "uts", "nqueens", "mergesort"]
SCALING = ["fib", "skynet"]  # + uts with --full (its default size takes 5 to 10 s a run)
BAR = 0.15
MARGIN = 0.10  # a bound on ideal executions, checked against measurements: kept within 10%
FIT_CPUS = (2, 4, 8)  # where the envelope's c and the steal bound's k are fitted


def run(exe: Path, workload: str, size: str, env: dict, timeout: int = 600) -> dict:
    """One nugo-workload run: its JSON line, with the run's statistics under "stats"."""
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")} | \
            {k: str(v) for k, v in env.items()} | {"NUGO_STATS": str(stats_path)}
        cmd = [str(exe), workload, "--size", size]
        try:
            out = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise explib.Failed(f"{explib.quote(cmd)} timed out after {timeout} s") from e
        if out.returncode != 0:
            raise explib.Failed(f"{' '.join(f'{k}={v}' for k, v in env.items())} {explib.quote(cmd)}: "
                                f"status {out.returncode}\n{explib.tail(out.stderr)}")
        line = next((l for l in out.stdout.splitlines() if l.startswith("{")), None)
        if line is None:
            raise explib.Failed(f"{explib.quote(cmd)} printed no result line")
        row = json.loads(line)
        if not row.get("ok"):
            raise explib.Failed(f"{explib.quote(cmd)}: the result was wrong: {row.get('result')}")
        stats = json.loads(stats_path.read_text())
    t = stats["totals"]
    row["runs"] = t["runs"]
    row["steals"] = t["steals_same_node"] + t["steals_remote"]
    row["seed"] = stats["seed"]
    row["clock"] = stats["clock"]["kind"]
    row["virtual"] = stats["clock"] if row["clock"] == "virtual" else None
    # Where the goroutines made by threads without a P (the main goroutine) started.
    row["foreign_nodes"] = [n["node"] for n in stats["nodes"] if n.get("created_foreign")]
    row["env"] = env
    row["command"] = " ".join(f"{k}={v}" for k, v in env.items()) + " " + explib.quote(cmd)
    return row


def virtual_env(**more) -> dict:
    return {"NUGO_VIRTUAL": catalogue.virtual_setting()} | more


def run_all(exe, plan, size, progress, rows, part, order_seed):
    """Runs plan's (key, workload, env) entries in one random order drawn from order_seed;
    returns their rows grouped by key."""
    order = list(plan)
    random.Random(order_seed).shuffle(order)
    groups = {}
    for key, workload, env in order:
        r = run(exe, workload, size, env)
        r["part"] = part
        rows.append(r)
        groups.setdefault(key, []).append(r)
        progress.finished(f"{part}: {workload} {' '.join(f'{k}={v}' for k, v in env.items() if k != 'NUGO_TOPOLOGY')}")
    return groups


def verdict(lo: float, hi: float) -> str:
    if 1 - BAR <= lo and hi <= 1 + BAR:
        return "within 15%"
    if hi < 1 - BAR or lo > 1 + BAR:
        return "outside 15%"
    return "inconclusive (the interval straddles the bar)"


def agreement(exe, size, reps, progress, rows, seed):
    plan = []
    for workload in AGREEMENT:
        for procs in (1, 2):
            for rep in range(1, reps + 1):
                plan.append(((workload, procs, "real"), workload, {"NUGO_PROCS": procs, "NUGO_SEED": rep}))
                plan.append(((workload, procs, "virtual"), workload,
                             virtual_env(NUGO_PROCS=procs, NUGO_SEED=rep)))
    groups = run_all(exe, plan, size, progress, rows, "agreement", seed)
    table = []
    for workload in AGREEMENT:
        for procs in (1, 2):
            runs = {c: groups[(workload, procs, c)] for c in ("real", "virtual")}
            real = explib.spread([r["seconds"] for r in runs["real"]])
            virt = explib.spread([r["seconds"] for r in runs["virtual"]])
            ratio, lo, hi = explib.ratio_interval(virt, real)
            counters = {c: {k: explib.spread([r[k] for r in runs[c]]) for k in ("runs", "steals")}
                        for c in runs}
            table.append([workload, procs, real.with_ci(), virt.with_ci(),
                          f"{ratio:.2f} ({lo:.2f}-{hi:.2f})", verdict(lo, hi),
                          f"{counters['real']['runs'].median:.0f} / {counters['virtual']['runs'].median:.0f}",
                          f"{counters['real']['steals'].median:.0f} / {counters['virtual']['steals'].median:.0f}"])
    return table


def depth(workload: str, size: str) -> int | None:
    """The computation's depth in goroutines (its span, counted in nodes) where it is known."""
    if workload == "fib":
        return {"tiny": 15, "small": 22, "default": 27, "large": 32}[size]
    if workload == "skynet":
        leaves = {"tiny": 1_000, "small": 100_000, "default": 1_000_000, "large": 10_000_000}[size]
        levels = 0
        while leaves > 1:
            leaves //= 10
            levels += 1
        return levels + 1
    return None


def scaling(exe, size, cpu_counts, topology, workloads, reps, progress, rows, seed):
    """Every point is repeated; the laws, the envelope and the steal bound are judged on medians."""
    plan = [((w, p), w, virtual_env(NUGO_MODE="flat", NUGO_PROCS=p, NUGO_TOPOLOGY=topology, NUGO_SEED=rep))
            for w in workloads for p in cpu_counts for rep in range(1, reps + 1)]
    groups = run_all(exe, plan, size, progress, rows, "scaling", seed)
    table, broken = [], []
    for w in workloads:
        t = {p: explib.spread([r["seconds"] for r in groups[(w, p)]]) for p in cpu_counts}
        steals = {p: statistics.median(r["steals"] for r in groups[(w, p)]) for p in cpu_counts}
        threads = {p: statistics.median(r["virtual"]["threads"] for r in groups[(w, p)]) for p in cpu_counts}
        t1 = t[1].median
        goroutines = statistics.median(r["work"] for r in groups[(w, 1)])
        d = depth(w, size)
        span = d * t1 / goroutines if d else None
        fit = [p for p in cpu_counts if p in FIT_CPUS]
        c = max(((t[p].median - t1 / p) / span for p in fit), default=None) if span else None
        c = max(c, 0.0) if c is not None else None
        k = max((steals[p] / (p * d) for p in fit), default=None) if d else None
        for p in cpu_counts:
            tp = t[p].median
            ratio, lo, hi = explib.ratio_interval(t[1], t[p])
            work_ok = tp >= t1 / p * (1 - MARGIN)
            span_ok = span is None or tp >= span * (1 - MARGIN)
            envelope = t1 / p + c * span if c is not None else None
            env_ok = envelope is None or p in fit or p < min(FIT_CPUS) or tp <= envelope * (1 + MARGIN)
            steal_bound = k * p * d if k is not None else None
            steal_ok = steal_bound is None or p <= max(FIT_CPUS) or steals[p] <= steal_bound * (1 + MARGIN)
            f = explib.fmt
            for ok, what in ((work_ok, f"work law: T_p {f(tp)} s < T_1/p {f(t1 / p)} s"),
                             (span_ok, f"span law: T_p {f(tp)} s < T_inf {f(span)} s"),
                             (env_ok, f"greedy envelope: T_p {f(tp)} s > T_1/p + c T_inf = {f(envelope)} s "
                                      f"(c {f(c)})"),
                             (steal_ok, f"steal bound: {steals[p]:.0f} steals > k p D = {f(steal_bound)} "
                                        f"(k {f(k)}, {steals[p] / (p * d):.3g} here)" if d else "")):
                if not ok:
                    broken.append(f"{w} at {p} virtual CPUs: {what}")
            fitted = p in fit
            table.append([w, p, f"{tp * 1e3:.3f} ({t[p].lo * 1e3:.3f}-{t[p].hi * 1e3:.3f})",
                          f"{ratio:.2f} ({lo:.2f}-{hi:.2f})", f"{ratio / p:.2f}",
                          "yes" if work_ok else "NO", "-" if span is None else ("yes" if span_ok else "NO"),
                          "-" if envelope is None else f"{envelope * 1e3:.3f}" + (" (fit)" if fitted else "")
                          + ("" if env_ok else " NO"),
                          f"{steals[p]:.0f}",
                          "-" if steal_bound is None else f"{steal_bound:.0f}" + (" (fit)" if fitted else "")
                          + ("" if steal_ok else " NO"),
                          f"{threads[p]:.0f}"])
    return table, broken


def determinism(exe, size, reps, progress, rows, seed):
    env = virtual_env(NUGO_MODE="numa", NUGO_PROCS=16, NUGO_TOPOLOGY=catalogue.machine_spec(TWO_SOCKET),
                      NUGO_SEED=1)
    runs = run_all(exe, [("det", "fib", env)] * reps, size, progress, rows, "determinism", seed)["det"]
    out = []
    for key in ("seconds", "runs", "steals"):
        s = explib.spread([r[key] for r in runs])
        rel = (s.hi - s.lo) / s.median if s.median else 0
        out.append([key, explib.fmt(s.median), explib.fmt(s.lo), explib.fmt(s.hi), f"{rel * 100:.1f}%"])
    facts = {"schedules": len({r["virtual"]["fingerprint"] for r in runs}),
             "main_home_nodes": sorted({n for r in runs for n in r["foreign_nodes"]}),
             "runs": len(runs)}
    return out, env, facts


def plot(data: dict, path: Path) -> str:
    """The speedup figure, drawn as plot.py draws it (pipeline/figures/virtual_validation.py) from
    the same data as virtual.json holds."""
    try:
        from pipeline.figures.virtual_validation import speedup_figure
    except ImportError:  # matplotlib
        return "(no figure: python3-matplotlib is missing; run with /usr/bin/python3)"
    fig, _, _ = speedup_figure(data)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return f"![speedup]({path.name})"


def main() -> int:
    p = explib.parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="uts in the scaling part too")
    p.add_argument("--repetitions", type=int, default=10, help="runs per configuration (default 10)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the runs' order (default 1)")
    args = p.parse_args()
    exe = args.build_dir / "experiments" / "nugo-workload"
    if not exe.exists():
        return explib.bad_input(PROG, f"{exe}: no such program (a virtual-time build: cmake "
                                      "-DNUGO_VIRTUAL_TIME=ON, or scripts/test.sh --virtual)")
    probe = subprocess.run([str(exe), "fib", "--size", "tiny"], env=os.environ | virtual_env(),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return explib.bad_input(PROG, f"{exe} does not run in virtual time: {explib.tail(probe.stderr, 3)}")
    if args.repetitions < 2:
        return explib.bad_input(PROG, "--repetitions: at least 2 (an interval needs two runs)")
    if args.quick and args.full:
        return explib.bad_input(PROG, "--quick and --full: one or the other")
    reps = 3 if args.quick else args.repetitions
    size = "small" if args.quick else "default"
    cpu_counts = [1, 2, 4, 8, 16, 32, 64] + ([] if args.quick else [128, 256])
    workloads = SCALING + (["uts"] if args.full else [])
    topology = catalogue.machine_spec(BIG_MACHINE)
    virt = explib.virtualization()
    machine = explib.machine_kind(virt)
    progress = explib.Progress(len(AGREEMENT) * 2 * 2 * reps + len(workloads) * len(cpu_counts) * reps + reps)
    rows = []
    try:
        agree = agreement(exe, size, reps, progress, rows, args.seed)
        scale, broken = scaling(exe, size, cpu_counts, topology, workloads, reps, progress, rows, args.seed + 1)
        det, det_env, det_facts = determinism(exe, size, reps, progress, rows, args.seed + 2)
    except explib.Failed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"quick": args.quick, "full": args.full, "repetitions": reps, "size": size,
                "topology": topology, "cpu_counts": cpu_counts, "order_seed": args.seed,
                "model": catalogue.VIRTUAL_MODEL, "virtual_setting": catalogue.virtual_setting()}
    figure = plot({"settings": settings, "scaling": scale, "runs": rows}, args.out / "speedup.png")
    inconclusive = [f"{r[0]} at {r[1]} P" for r in agree if r[5].startswith("inconclusive")]
    md = [f"# Virtual time: validation ({'quick' if args.quick else 'full' if args.full else 'default'} run)", "",
          f"Made by `{explib.quote(sys.argv)}` on {machine}; every run is in virtual.json with its "
          "command and seed. REAL: timed on this machine. VIRTUAL: timed in virtual time, on a virtual "
          f"machine run by this one, with the model's constants `NUGO_VIRTUAL={catalogue.virtual_setting()}`. "
          f"Runs in a random order drawn from seed {args.seed}.", "",
          f"## 1. Virtual against real time ({size} size, {reps} interleaved runs each; "
          "median seconds with 95% intervals)", "",
          explib.table(agree, ["workload", "P", "REAL s", "VIRTUAL s", "virtual/real", "15% bar",
                               "runs real/virtual", "steals real/virtual"], markdown=True), "",
          ("Inconclusive against the bar: " + ", ".join(inconclusive) + " (their intervals straddle it: "
           "the runs' spread on this machine is wider than the bar allows at this many repetitions)."
           if inconclusive else "Every interval is conclusive against the bar."), "",
          f"## 2. Fork-join on 1 to {cpu_counts[-1]} VIRTUAL CPUs ({size} size, {reps} runs a point; "
          f"{topology}, flat)", "",
          "Envelope: a greedy scheduler's T_1/p + c T_inf, c fitted at "
          f"{', '.join(map(str, FIT_CPUS))} CPUs; steal bound: k p D, k fitted there too. A bound counts "
          "as kept within 10%.", "",
          explib.table(scale, ["workload", "CPUs", "T_p ms (min-max)", "speedup (interval)", "efficiency",
                               "work law", "span law", "envelope ms", "steals", "steal bound", "threads"],
                       markdown=True), "",
          figure, "",
          f"## 3. Determinism: fib at 16 VIRTUAL CPUs, NUMA mode, the 2-socket shape, one seed, {reps} runs "
          f"(`{' '.join(f'{k}={v}' for k, v in det_env.items() if k != 'NUGO_TOPOLOGY')}`)", "",
          explib.table(det, ["measure", "median", "min", "max", "max-min / median"], markdown=True), "",
          f"{det_facts['schedules']} distinct schedules (fingerprints) in {det_facts['runs']} runs; the main "
          f"goroutine started on node(s) {det_facts['main_home_nodes']} in every run. Virtual time is made of "
          "this machine's CPU time: a turn lasts as long as the code really took (there is no instruction "
          "counter on this machine), so one seed fixes every random choice but not the interleaving, "
          "and the counters vary as the interleaving does.", ""]
    md += (["**Bounds broken by more than 10%** (bounds on ideal executions, against measurements):", ""]
           + [f"- {b}" for b in broken] + [""]) if broken else ["Every bound holds at every point.", ""]
    (args.out / "virtual.md").write_text("\n".join(md))
    explib.write_json(args.out / "virtual.json",
                      {"machine": machine, "virtualization": virt, "runs": rows,
                       "agreement": agree, "scaling": scale, "determinism": det,
                       "determinism_facts": det_facts, "broken": broken, "inconclusive": inconclusive},
                      settings, [explib.quote(sys.argv)])
    print("\n".join(md))
    print(f"{PROG}: wrote {args.out}/virtual.md, virtual.json and speedup.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
