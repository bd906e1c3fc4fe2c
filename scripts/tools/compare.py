#!/usr/bin/python3
"""Two runs of the pipeline side by side: what changed in run B against run A, beyond the noise.

usage: scripts/tools/compare.py RUN_A RUN_B [--json PATH] [--md PATH]

RUN_A and RUN_B are results directories of scripts/reproduce.sh (the published run and a user's,
or a run before a change and one after). The report opens with the two machines and builds
(CPU model, CPUs, NUMA nodes, machine kind, kernel, revision, build type: run.json's where the
run has one, else machine.json's), since a difference of machine explains more than anything
below. Then, per section (the sweep: results.csv; the ablation: ablation/; the virtual set:
virtual/; the hierarchy's trial: hierarchy/), skipping, with a word, a section a run lacks, its
overall change first, then its medians and its ratios:

Overall. The section's change as a whole: the geometric mean over its configurations (defined
below; those both runs have, oversubscribed ones left out) of B's median over A's, then the same
per mode (flat, numa, go, ...; the arm in the ablation and the trial) when the section has more
than one. Its interval is a percentile bootstrap resampling the configurations (seeded; enough
resamples to leave 20 beyond each end, BOOTSTRAP_RESAMPLES at the least), widened about the
estimate by t(n - 1) / (z sqrt((n - 1) / n)) for n configurations, as a percentile interval of a
mean is that much too narrow in small samples (Hesterberg's expanded percentile interval, "What
teachers should know about the bootstrap", 2015), at the level 1 - ALPHA / m, m the report's
overall tests (Bonferroni: the whole set of overall verdicts keeps its ALPHA): "B faster" or "B
slower" where it excludes 1, else "no difference"; with fewer than OVERALL_MIN (5)
configurations, "too few configurations" (and not counted in m). The noise it weighs is the
spread of the changes across configurations, so it works with one run per configuration
(reproduce.sh --quick), where no configuration can be tested, and in families past the median
test's floor (below). It assumes a change common to the configurations, and takes the
configurations as independent draws of it (the unit of resampling). What it cannot tell: which
configurations changed (a change of one workload, repeated over that workload's configurations,
moves the whole; changes of opposite signs cancel); whether the cause is the code: a shift common
to every configuration of one run, from the machine (its load, its clock frequency, a virtual
machine's neighbours, another day), is called as surely as one from a build, as nothing here
measures the drift of a machine from run to run (run A and B back to back on the same quiet
machine before blaming the code); and it claims nothing beyond these configurations, whose
changes, where they move together (one workload's, one topology's), make the interval too
narrow. Simulated with 5 to 40 configurations and no change (tests of the method, not of the
pipeline): symmetric spreads (normal; t, 3 degrees of freedom) were called different in 4 to 7%
of tests at the 95% level and 0.4 to 1% at 99.5% (the percentile interval unwidened: 6 to 16%,
and up to 9%); strongly skewed ones (exponential) in up to 11% and 4%.

Medians. A configuration is (topology, workload, Ps, size, setting, mode): the setting is the
binding asked for in the sweep and the virtual set, the latency model's penalty in the ablation,
the level in the hierarchy's trial; the mode is the ablation's and the trial's arm. Its sample is
the times of its rows with ok = 1 and timing_reported = 1. For every configuration both runs
have, the change is B's median over A's with a percentile-bootstrap 95% interval and a
permutation test (pipeline/inference.py compare), corrected by Holm's method within a family
(inference.judge): "B faster" (change < 1) or "B slower" where the difference stands, else "no
difference". A configuration with more Ps than CPUs (oversubscribed, or, in a results.csv older
than that column, inferred from machine.json's cpus_usable) is shown but never judged, and kept
out of its family. With one run a side there is nothing to test (counted as untestable).

A family is a section's topology. The test of medians cannot reach small p-values: relabellings
that exchange values between the two samples' inner halves leave both medians in place and tie
with the observed labelling, so with n runs a side p never falls below 2 C(2k, k) / C(2n, n),
k = (n - 1) // 2, rather than 2 / C(2n, n): 0.0031 at 8 runs, 0.00076 at 10. Holm's first
step asks for ALPHA / m, so at 10 runs a family of more than 65 calls nothing, at 8 (the default
profile's sweep) one of more than 16 (a quick sweep's `machine` topology has 92 rows). The report
says so of every family past that floor (for unequal sizes estimated on two samples far apart):
there "no difference" means "not testable at this size", and more runs would help. Each test
draws enough permutations for 20 to fall below ALPHA / m (the pipeline's 2000 resolve 0.0005).

Ratios. Per (topology, workload, Ps, size, setting): NUMA mode's median time over flat mode's
and flat mode's over Go's in the sweep and the virtual set, every arm's over the flat arm's in
the ablation and the trial. The change is B's ratio over A's. Its interval is a percentile
bootstrap of that quotient of four medians, each of the four samples resampled on its own (a
run's ratio is a ratio of two independent samples; the two runs are independent too), at the
level 1 - ALPHA / m, m the judged ratios of the family (Bonferroni): "lower in B" or "higher in
B" where the interval excludes 1, else "no difference" (with one run of any of the four samples, no
interval: "no difference", counted as untestable). No permutation test: the null of an
unchanged ratio fixes no exchangeable labelling of four samples. Enough resamples are drawn to
leave 20 beyond each end of the interval. On identical log-normal samples of 10 a side this
called a difference in 2% of single ratios and 1% of families of 10 (simulated: conservative).

Refused, with exit status 2 and the reason, because their numbers do not measure the same thing:
a rehearsal against a run that is not one (a rehearsal's timings are not results); a section
whose topologies ran on different clocks (real against virtual); different workload sizes (the
size column, or the settings' size; the message names both profiles when they differ, as a
profile sets the sizes); different virtual-time model constants for the same setting (NUGO_VIRTUAL
of the virtual rows, or of the settings and commands when the rows predate that column: "on" is
the build's defaults, which no file records). Bad input, also exit status 2: a directory that is not there, one without
results.csv, a results.csv without the columns the comparison needs, a JSON file that is not JSON.
Differences are findings, not errors: exit status 0 whatever the verdicts.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib, inference  # noqa: E402
from pipeline.hierarchy import level_of  # noqa: E402

PROG = "compare.py"
ALPHA = inference.ALPHA
REQUIRED = ("workload", "topology", "mode", "procs", "size", "ok", "timing_reported", "seconds")
# (name, directory, its settings files, the first that exists; title)
SECTIONS = [("sweep", "", ("sweep.json",), "the sweep"),
            ("ablation", "ablation", ("ablation.json",), "the ablation"),
            ("virtual", "virtual", ("sweep.json",), "the virtual set"),
            ("hierarchy", "hierarchy", ("settings.json", "hierarchy.json"), "the hierarchy's trial")]
ARMED = ("ablation", "hierarchy")  # sections whose configurations are arms
VIRTUAL_ENV = re.compile(r"NUGO_VIRTUAL=([^\s)]+)")
TAIL_DRAWS = 20  # resamples beyond each end of a ratio change's interval, at the least
OVERALL_MIN = 5  # configurations an overall change needs
OVERALL_CHUNK = 4000  # bootstrap resamples drawn at once (memory: this times the configurations)


class Refused(Exception):
    """Bad input, or two runs whose numbers do not measure the same thing: exit status 2."""


# ---- reading a run ----

def read_json(path: Path) -> dict:
    try:
        return explib.read_json_object(path) or {}
    except ValueError as e:
        raise Refused(str(e)) from e


def read_rows(path: Path, cpus: int | None) -> list[dict]:
    """results.csv's rows, checked for the columns the comparison needs, seconds as floats."""
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        rows = explib.read_results(path)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as e:
        raise Refused(f"{path}: not a readable results.csv ({e})")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise Refused(f"{path}: no column {', '.join(missing)}: not a results.csv of this pipeline "
                      "(scripts/pipeline/sweep.py COLUMNS), or of an incompatible version")
    for i, r in enumerate(rows, 1):
        r["clock"] = r.get("clock") or "real"
        if "oversubscribed" not in header and cpus and r["clock"] == "real":
            r["oversubscribed"] = int(r["procs"] > cpus)  # a run older than the column
        try:
            r["seconds"] = float(r["seconds"]) if r["ok"] == 1 and r["timing_reported"] == 1 else None
        except (TypeError, ValueError):
            raise Refused(f"{path}, row {i}: seconds '{r['seconds']}' is not a number")
    return rows


def load_run(arg: str) -> dict:
    d = Path(arg)
    if not d.is_dir():
        raise Refused(f"{d}: no such run directory")
    if not (d / "results.csv").is_file():
        raise Refused(f"{d / 'results.csv'}: missing: {d} is not a results directory of scripts/reproduce.sh")
    run = {"dir": str(d), "manifest": read_json(d / "run.json"), "machine": read_json(d / "machine.json"),
           "sections": {}}
    for name, sub, files, _ in SECTIONS:
        where = d / sub
        if not (where / "results.csv").is_file():
            continue
        js = next((read_json(where / f) for f in files if (where / f).is_file()), {})
        settings = js.get("settings", js)
        machine = read_json(where / "machine.json") or run["machine"]
        cpus = machine.get("cpus_usable")
        run["sections"][name] = {
            "settings": settings if isinstance(settings, dict) else {},
            "commands": [c for c in js.get("commands", []) if isinstance(c, str)] if isinstance(js.get("commands"), list) else [],
            "machine": machine,
            "rows": read_rows(where / "results.csv", cpus if isinstance(cpus, int) else None)}
    return run


def setting_of(section: str, r: dict) -> str:
    if section == "ablation":
        return f"penalty {r.get('latency_penalty') or '-'}"
    if section == "hierarchy":
        return level_of(r)
    return f"bind {r['bind_asked']}" if r.get("bind_asked") else ""


def samples(section: str, rows: list[dict]) -> tuple[dict, dict]:
    """{configuration: its times}, {configuration: oversubscribed}."""
    times, over = {}, {}
    for r in rows:
        if r["seconds"] is None or r["seconds"] <= 0:
            continue
        mode = (r.get("arm") or r["mode"]) if section in ARMED else r["mode"]
        key = (r["topology"], r["workload"], r["procs"], r["size"], setting_of(section, r), mode)
        times.setdefault(key, []).append(r["seconds"])
        over[key] = over.get(key, False) or bool(r["oversubscribed"])
    return times, over


# ---- what may not be compared ----

def rehearsal(run: dict) -> str | None:
    found = [run["manifest"].get("rehearsal"), run["machine"].get("rehearsal")] + \
        [s[k].get("rehearsal") for s in run["sections"].values() for k in ("machine", "settings")]
    return next((str(x) for x in found if x), None)


def profile(run: dict, section: dict) -> str | None:
    return section["settings"].get("profile") or run["manifest"].get("profile")


def virtual_models(name: str, section: dict) -> dict[str, set[str]]:
    """The NUGO_VIRTUAL values of the virtual rows, by setting (the hierarchy's levels differ in
    them on purpose); for rows older than virtual_setting, of their runtime_env, else of the
    settings and commands."""
    got: dict[str, set[str]] = {}
    for r in section["rows"]:
        if r["clock"] == "virtual":
            model = r.get("virtual_setting") or next(iter(VIRTUAL_ENV.findall(r.get("runtime_env") or "")), "")
            got.setdefault(setting_of(name, r), set()).add(model)
    vs = section["settings"].get("virtual_setting")
    said = (set(vs.values()) if isinstance(vs, dict) else {vs} if isinstance(vs, str) else set()) | \
        {m for c in section["commands"] for m in VIRTUAL_ENV.findall(c)}
    return {k: (v - {""}) or said for k, v in got.items()}


def refusals(a: dict, b: dict) -> list[str]:
    why = []
    ra, rb = rehearsal(a), rehearsal(b)
    if bool(ra) != bool(rb):
        why.append(f"{'A' if ra else 'B'} is a rehearsal ({ra or rb}) and the other is not: a rehearsal's "
                   "timings are not results")
    for name, _, _, title in SECTIONS:
        sa, sb = a["sections"].get(name), b["sections"].get(name)
        if not sa or not sb:
            continue
        for what, col in (("clock", "clock"), ("sizes", "size")):
            per = [{}, {}]
            for side, s in zip(per, (sa, sb)):
                for r in s["rows"]:
                    side.setdefault(r["topology" if col == "clock" else "workload"], set()).add(r[col])
            for k in sorted(set(per[0]) & set(per[1])):
                if per[0][k] != per[1][k]:
                    pa, pb = profile(a, sa), profile(b, sb)
                    why.append(f"{title}: {k} ran with {what} {'/'.join(sorted(per[0][k]))} in A, "
                               f"{'/'.join(sorted(per[1][k]))} in B"
                               + (f" (profiles {pa} and {pb})" if pa != pb else ""))
        size_key = "virtual_size" if name == "virtual" else "size"
        za = sa["settings"].get(size_key) or sa["settings"].get("size")
        zb = sb["settings"].get(size_key) or sb["settings"].get("size")
        if za and zb and za != zb:
            why.append(f"{title}: the settings' size is {za} in A, {zb} in B "
                       f"(profiles {profile(a, sa)} and {profile(b, sb)})")
        va, vb = virtual_models(name, sa), virtual_models(name, sb)
        for k in sorted(set(va) & set(vb)):  # one side not virtual at all: the clocks' refusal says so
            if va[k] != vb[k]:
                why.append(f"{title}: virtual time's model constants differ{f' ({k})' if k else ''}: NUGO_VIRTUAL="
                           f"{' / '.join(sorted(va[k])) or '?'} in A, {' / '.join(sorted(vb[k])) or '?'} in B"
                           + (" ('on': the build's defaults, recorded nowhere)" if "on" in va[k] | vb[k] else ""))
    return why


# ---- the comparisons ----

def floor_p(n_b: int, n_a: int, permutations: int) -> float:
    """The smallest p-value the median test gives samples of these sizes. With equal sizes n,
    exactly: both medians stay put under the 2 C(2k, k) relabellings (k = (n - 1) // 2 values
    of each sample beyond its median exchanged, either sample first) of two samples apart, and
    no relabelling moves them further apart. Otherwise estimated on two such samples."""
    if n_a == n_b:
        k = (n_a - 1) // 2
        return 2 * math.comb(2 * k, k) / math.comb(2 * n_a, n_a)
    a, b = np.exp(np.linspace(0, 0.01, n_a)), np.exp(1 + np.linspace(0, 0.01, n_b))
    return inference.compare(b, a, permutations=permutations).p


def compare_medians(ta: dict, tb: dict, over: dict, notes: list[str]) -> list[dict]:
    """B's median over A's per configuration, judged by Holm within its topology."""
    both = sorted(set(ta) & set(tb))
    families: dict[tuple, list] = {}
    for k in both:
        if not over.get(k, False):
            families.setdefault(k[0], []).append(k)
    out, tests, past = [], {}, set()
    for topo, keys in sorted(families.items()):
        # Holm's first step asks for ALPHA / m: enough permutations for 20 to fall below it.
        draws = max(inference.PERMUTATIONS, math.ceil(TAIL_DRAWS * len(keys) / ALPHA))
        tests |= inference.judge({k: inference.compare(tb[k], ta[k], permutations=draws) for k in keys})
        n_b, n_a = min(len(tb[k]) for k in keys), min(len(ta[k]) for k in keys)
        if min(n_a, n_b) >= 2 and (low := floor_p(n_b, n_a, draws)) > ALPHA / len(keys):
            past.add(topo)
            notes.append(f"{topo}: at {n_a} and {n_b} runs a side the median test's p-value stays above "
                         f"about {low:.2g}, and Holm's first step in this family of {len(keys)} asks for "
                         f"{ALPHA / len(keys):.2g}: no difference can be called here (more runs would)")
    for k in both:
        c = tests.get(k) or inference.compare(tb[k], ta[k])  # oversubscribed: shown, not judged
        out.append({"key": k, "oversubscribed": k not in tests,
                    "a_median": float(np.median(ta[k])), "b_median": float(np.median(tb[k])),
                    "n": [c.n_b, c.n_a], "change": c.ratio, "ci": [c.lo, c.hi], "p": c.p,  # compare(b, a)
                    "untestable": min(c.n_a, c.n_b) < 2 or k[0] in past,
                    "verdict": c.verdict(above="B slower", below="B faster") if k in tests
                    else "not judged (oversubscribed)"})
    return out


def ratio_pairs(section: str, modes: set[str]) -> list[tuple[str, str]]:
    if section in ARMED:
        return [(m, "flat") for m in sorted(modes) if m != "flat"]
    return [("numa", "flat"), ("flat", "go")]


def partner(setting: str, mode: str) -> str:
    return "bind none" if mode == "go" and setting.startswith("bind ") else setting  # Go binds nothing


def log_median_boot(x: list[float], draws: int, rng) -> np.ndarray:
    return np.log(np.median(rng.choice(np.asarray(x), (draws, len(x))), axis=1))


def compare_ratios(section: str, ta: dict, tb: dict, over: dict) -> list[dict]:
    both = set(ta) & set(tb)
    found = []
    for num, den in ratio_pairs(section, {k[5] for k in both}):
        for k in sorted(k for k in both if k[5] == num):
            kd = k[:4] + (partner(k[4], den), den)
            if kd in both:
                found.append((f"{num}/{den}", k, kd))
    judged = {}
    for _, k, kd in found:
        if not (over.get(k) or over.get(kd)):
            judged[k[0]] = judged.get(k[0], 0) + 1
    out = []
    for name, k, kd in found:
        oversub = bool(over.get(k) or over.get(kd))
        m = 1 if oversub else judged[k[0]]
        level = 1 - ALPHA / m
        xs = [ta[k], ta[kd], tb[k], tb[kd]]
        ra, rb = (float(np.median(n) / np.median(d)) for n, d in ((xs[0], xs[1]), (xs[2], xs[3])))
        change, lo, hi = rb / ra, rb / ra, rb / ra
        untestable = min(map(len, xs)) < 2
        if not untestable:
            rng = np.random.default_rng(inference.SEED)
            draws = max(inference.BOOTSTRAP_RESAMPLES, math.ceil(2 * TAIL_DRAWS * m / ALPHA))
            an, ad, bn, bd = (log_median_boot(x, draws, rng) for x in xs)
            lo, hi = (float(v) for v in np.exp(np.quantile(bn - bd - an + ad, [(1 - level) / 2, (1 + level) / 2])))
        verdict = "not judged (oversubscribed)" if oversub else "no difference" if untestable else \
            "lower in B" if hi < 1 else "higher in B" if lo > 1 else "no difference"
        out.append({"key": k[:5], "ratio": name, "a": ra, "b": rb, "change": change, "ci": [lo, hi],
                    "level": level, "n": [len(x) for x in xs], "untestable": untestable,
                    "oversubscribed": oversub, "verdict": verdict})
    return out


def t_quantile(level: float, df: int) -> float:
    """t with P(|T| < t) = level, T Student's with df (a whole number >= 1) degrees of freedom:
    the closed form of P(|T| < t) for whole df (Abramowitz and Stegun 26.7.3-4), solved by
    bisection on theta = atan(t / sqrt(df)). numpy alone: the pipeline does not need scipy."""
    def within(theta: float) -> float:
        s, c2 = math.sin(theta), math.cos(theta) ** 2
        if df % 2:
            term, total = math.cos(theta), 0.0
            for j in range(1, (df - 1) // 2 + 1):  # cos, (2/3) cos^3, ..., up to cos^(df-2)
                total += term
                term *= c2 * (2 * j) / (2 * j + 1)
            return 2 / math.pi * (theta + s * total)
        term, total = 1.0, 0.0
        for j in range(1, df // 2 + 1):  # 1, (1/2) cos^2, (1.3)/(2.4) cos^4, ..., up to cos^(df-2)
            total += term
            term *= c2 * (2 * j - 1) / (2 * j)
        return s * total
    lo, hi = 0.0, math.pi / 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if within(mid) < level else (lo, mid)
    return math.sqrt(df) * math.tan((lo + hi) / 2)


def overall_change(changes: list[float], level: float) -> tuple[float, float, float]:
    """The geometric mean of B/A over configurations (positive changes, 2 or more) and its
    interval at this level: a percentile bootstrap resampling the configurations, widened
    about the estimate by t(n - 1) / (z sqrt((n - 1) / n)), since the percentile interval of a
    mean is that much too narrow in small samples (Hesterberg, "What teachers should know about
    the bootstrap", 2015: its expanded percentile interval, here by scale, not by level, so as
    to stay within the resampled tails)."""
    x = np.log(np.asarray(changes, dtype=float))
    n, mean = len(x), float(np.mean(x))
    tail = (1 - level) / 2
    draws = max(inference.BOOTSTRAP_RESAMPLES, math.ceil(TAIL_DRAWS / tail))
    rng = np.random.default_rng(inference.SEED)
    means = np.concatenate([x[rng.integers(0, n, (min(OVERALL_CHUNK, draws - done), n))].mean(axis=1)
                            for done in range(0, draws, OVERALL_CHUNK)])
    qlo, qhi = np.quantile(means, [tail, 1 - tail])
    widen = t_quantile(level, n - 1) / (NormalDist().inv_cdf(1 - tail) * math.sqrt((n - 1) / n))
    return math.exp(mean), math.exp(mean + widen * (qlo - mean)), math.exp(mean + widen * (qhi - mean))


def compare_section(name: str, a: dict, b: dict) -> dict:
    ta, oa = samples(name, a["rows"])
    tb, ob = samples(name, b["rows"])
    over = {k: oa.get(k, False) or ob.get(k, False) for k in set(ta) | set(tb)}
    notes = []
    for side, s in (("A", a), ("B", b)):
        failed = sum(r["ok"] != 1 for r in s["rows"])
        untimed = sum(r["ok"] == 1 and r["timing_reported"] != 1 for r in s["rows"])
        zero = sum(r["seconds"] is not None and r["seconds"] <= 0 for r in s["rows"])
        if failed or untimed or zero:
            notes.append(f"{side}: {failed} failed rows, {untimed} whose timings are not reported"
                         + (f" and {zero} with a time of 0 or less" if zero else "") + ", left out")
    for side, t, u in (("A", ta, tb), ("B", tb, ta)):
        if set(t) - set(u):
            notes.append(f"only in {side}: {len(set(t) - set(u))} configurations, not compared")
    medians = compare_medians(ta, tb, over, notes)
    ratios = compare_ratios(name, ta, tb, over)
    return {"notes": notes, "medians": medians, "ratios": ratios,
            "counts": {"medians": tally(medians), "ratios": tally(ratios)}}


def compare_overall(sections: dict) -> int:
    """Sets each compared section's "overall": its change over all its configurations, then per
    mode (when it has more than one), each interval at the Bonferroni level of the report's
    overall tests (those with OVERALL_MIN configurations or more). Returns their number."""
    groups = []
    for name, _, _, _ in SECTIONS:
        s = sections[name]
        if "skipped" in s:
            continue
        used = [e for e in s["medians"] if not e["oversubscribed"]]
        modes = sorted({e["key"][5] for e in used})
        s["overall"] = []
        for mode in [None] + (modes if len(modes) > 1 else []):
            changes = [e["b_median"] / e["a_median"] for e in used if mode is None or e["key"][5] == mode]
            s["overall"].append({"mode": mode, "configurations": len(changes), "changes": changes})
            groups.append(s["overall"][-1])
    m = sum(g["configurations"] >= OVERALL_MIN for g in groups)
    for g in groups:
        changes = g.pop("changes")
        if g["configurations"] < OVERALL_MIN:
            gm = math.exp(float(np.mean(np.log(changes)))) if changes else None
            g |= {"change": gm, "ci": None, "level": None, "verdict": "too few configurations"}
            continue
        level = 1 - ALPHA / m
        gm, lo, hi = overall_change(changes, level)
        g |= {"change": gm, "ci": [lo, hi], "level": level,
              "verdict": "B faster" if hi < 1 else "B slower" if lo > 1 else "no difference"}
    return m


def tally(entries: list[dict]) -> dict:
    counts = {}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    counts["untestable"] = sum(e["untestable"] and not e["oversubscribed"] for e in entries)
    return counts


# ---- the report ----

def machine_facts(run: dict) -> list[tuple[str, str]]:
    m = run["machine"] or next((s["machine"] for s in run["sections"].values() if s["machine"]), {})
    man = run["manifest"]
    build = man.get("build") if isinstance(man.get("build"), dict) else {}
    kind = m.get("machine_kind") or (explib.machine_kind(m["virtualization"])
                                     if isinstance(m.get("virtualization"), dict) else None)
    rev = man.get("revision")
    if rev:
        revs = man.get("revisions") if isinstance(man.get("revisions"), list) else []
        rev = str(rev) + ("-dirty" if man.get("dirty") else "") + \
            (f" (and {len(revs) - 1} more revisions)" if len(revs) > 1 else "")
    btype = build.get("type") or m.get("build_type")
    prof = man.get("profile") or next((s["settings"].get("profile") for s in run["sections"].values()
                                       if s["settings"].get("profile")), None)
    return [("CPU model", m.get("cpu_model")), ("CPUs usable/online", f"{m.get('cpus_usable', '?')}/{m.get('cpus_online', '?')}"),
            ("NUMA nodes", m.get("numa_nodes")), ("machine kind", kind), ("kernel", m.get("kernel")),
            ("revision", rev or m.get("git_revision")),
            ("build type", btype), ("build id", build.get("id")),
            ("profile", prof), ("rehearsal", rehearsal(run) or "no")]


def render(report: dict, markdown: bool = False) -> str:
    def head(level: int, text: str) -> str:
        return f"{'#' * level} {text}\n" if markdown else f"{text}\n{'=-'[level > 1] * len(text)}\n"
    out = [head(1, f"{PROG}: run B against run A"), f"A: {report['a']}", f"B: {report['b']}\n",
           head(2, "Machines and builds"),
           explib.table([[f, a, b, "" if a == b else "differs"] for f, a, b in report["machine"]],
                        ["", "A", "B", ""], markdown) + "\n"]
    for name, _, _, title in SECTIONS:
        s = report["sections"][name]
        out.append(head(2, title))
        if "skipped" in s:
            out.append(f"skipped: {s['skipped']}\n")
            continue
        out.append(f"Overall: the geometric mean over configurations (not oversubscribed) of B's median time "
                   f"over A's (< 1: B faster), with a bootstrap interval over configurations at the Bonferroni "
                   f"level of the report's {report['overall_tests']} overall tests.\n")
        out.append(explib.table([[e["mode"] or "all", e["configurations"], overall_cell(e),
                                  f"{100 * e['level']:.4g}%" if e["level"] else "-", e["verdict"]]
                                 for e in s["overall"]],
                                ["over", "configurations", "B/A [interval]", "level", "verdict"], markdown) + "\n")
        out += [f"- {n}" for n in s["notes"]]
        shown = any(e["key"][4] for e in s["medians"])
        cols = ["topology", "workload", "Ps", "size"] + (["setting"] if shown else [])

        def where(k):
            return [k[0], k[1], k[2], k[3]] + ([k[4]] if shown else [])
        out.append(f"\nMedians: B's median time over A's (< 1: B faster), 95% interval, permutation p; "
                   f"Holm within each topology at {ALPHA}.\n")
        out.append(explib.table([where(e["key"]) + [e["key"][5], explib.fmt(e["a_median"]), explib.fmt(e["b_median"]),
                                 f"{e['n'][0]}/{e['n'][1]}", f"{e['change']:.3g} [{e['ci'][0]:.3g}, {e['ci'][1]:.3g}]",
                                 f"{e['p']:.3g}", verdict(e)]
                                for e in s["medians"]],
                                cols + ["mode", "A s", "B s", "n A/B", "B/A [95%]", "p", "verdict"], markdown) + "\n")
        out.append("Ratios: a time ratio in each run and its change, B's over A's, with a bootstrap interval "
                   "at the Bonferroni level of its topology's family.\n")
        out.append(explib.table([where(e["key"]) + [e["ratio"], f"{e['a']:.3g}", f"{e['b']:.3g}",
                                 f"{e['change']:.3g} [{e['ci'][0]:.3g}, {e['ci'][1]:.3g}]", f"{100 * e['level']:.4g}%",
                                 verdict(e)]
                                for e in s["ratios"]],
                                cols + ["ratio", "A", "B", "change [interval]", "level", "verdict"], markdown) + "\n")
    out.append(head(2, "Summary"))
    out += [f"- {line}" if markdown else line for line in report["summary"]]
    return "\n".join(out) + "\n"


def overall_cell(e: dict) -> str:
    if e["change"] is None:
        return "-"
    return f"{e['change']:.3g}" + (f" [{e['ci'][0]:.3g}, {e['ci'][1]:.3g}]" if e["ci"] else "")


def verdict(e: dict) -> str:
    if not e["untestable"] or e["oversubscribed"]:
        return e["verdict"]
    return e["verdict"] + (" (n < 2: untestable)" if min(e["n"]) < 2 else " (family past the test's floor)")


def summary_lines(sections: dict) -> list[str]:
    lines = []
    for name, _, _, title in SECTIONS:
        s = sections[name]
        if "skipped" in s:
            lines.append(f"{title}: skipped ({s['skipped']})")
            continue
        m, r = s["counts"]["medians"], s["counts"]["ratios"]
        first, by_mode = s["overall"][0], s["overall"][1:]
        said = {}
        for e in by_mode:
            said.setdefault(e["verdict"], []).append(e["mode"])
        modes = "; by mode: " + ", ".join(f"{v} ({', '.join(ms)})" for v, ms in said.items()) if by_mode else ""
        lines.append(f"{title}: overall B/A {overall_cell(first)} over {first['configurations']} configurations, "
                     f"{first['verdict']}{modes}; medians {m.get('no difference', 0)} no difference, {m.get('B faster', 0)} B faster, "
                     f"{m.get('B slower', 0)} B slower, {m.get('not judged (oversubscribed)', 0)} oversubscribed "
                     f"(not judged), {m['untestable']} untestable; ratios {r.get('no difference', 0)} no difference, "
                     f"{r.get('lower in B', 0)} lower in B, {r.get('higher in B', 0)} higher in B, "
                     f"{r.get('not judged (oversubscribed)', 0)} oversubscribed (not judged), {r['untestable']} untestable")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--json", type=Path, help="write the report as JSON here")
    p.add_argument("--md", type=Path, help="write the report as Markdown here")
    args = p.parse_args()
    try:
        a, b = load_run(args.run_a), load_run(args.run_b)
        facts = [(f, str(x if x is not None else "-"), str(y if y is not None else "-"))
                 for (f, x), (_, y) in zip(machine_facts(a), machine_facts(b))]
        why = refusals(a, b)
        if why:
            print(explib.table([[f, x, y, "" if x == y else "differs"] for f, x, y in facts], ["", "A", "B", ""]))
            raise Refused(f"refusing to compare {args.run_b} against {args.run_a}:\n  " + "\n  ".join(why))
        sections = {}
        for name, _, _, _ in SECTIONS:
            sa, sb = a["sections"].get(name), b["sections"].get(name)
            if sa and sb:
                sections[name] = compare_section(name, sa, sb)
            else:
                sections[name] = {"skipped": "in neither run" if not sa and not sb else
                                  f"only run {'A' if sa else 'B'} has it"}
    except Refused as e:
        return explib.bad_input(PROG, str(e))
    except (KeyError, TypeError, AttributeError, ValueError) as e:  # JSON of another shape
        return explib.bad_input(PROG, f"a run's files are not of the shape this version reads: {type(e).__name__}: {e}")
    overall_tests = compare_overall(sections)
    report = {"a": args.run_a, "b": args.run_b, "machine": facts, "overall_tests": overall_tests,
              "sections": sections, "summary": summary_lines(sections)}
    print(render(report), end="")
    try:
        if args.json:
            args.json.write_text(json.dumps(report, indent=1) + "\n")
        if args.md:
            args.md.write_text(render(report, markdown=True))
    except OSError as e:
        return explib.bad_input(PROG, f"cannot write the report: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
