"""Preemption latency, sysmon's cost, and preemption's cost on whole workloads (preempt.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json
import statistics

from pipeline import explib
from pipeline.figures.common import Run, plt

# Every \\num macro this module writes.
MACROS = (
    "PreemptGoLoss",
    "PreemptGoPNinetyNine",
    "PreemptGoSlices",
    "PreemptLossOneMs",
    "PreemptLossOneMsCI",
    "PreemptLossTenMs",
    "PreemptLossTenMsCI",
    "PreemptLossTwoHundredUs",
    "PreemptLossTwoHundredUsCI",
    "PreemptNugoPNinetyNine",
    "PreemptNugoSlices",
    "PreemptRounds",
    "PreemptWholeOneMs",
    "PreemptWholeOneMsCI",
    "PreemptWholeOneMsDiffer",
    "PreemptWholeOneMsFaster",
    "PreemptWholeOneMsSlower",
    "PreemptWholeOneMsVerdict",
    "PreemptWholeRounds",
    "PreemptWholeTenMs",
    "PreemptWholeTenMsCI",
    "PreemptWholeTenMsDiffer",
    "PreemptWholeTenMsFaster",
    "PreemptWholeTenMsSlower",
    "PreemptWholeTenMsVerdict",
    "PreemptWholeTwoHundredUs",
    "PreemptWholeTwoHundredUsCI",
    "PreemptWholeTwoHundredUsDiffer",
    "PreemptWholeTwoHundredUsFaster",
    "PreemptWholeTwoHundredUsSlower",
    "PreemptWholeTwoHundredUsVerdict",
    "PreemptWholeWorkloads",
    "SysmonCoresOff",
    "SysmonCoresOneMs",
    "SysmonCoresTenMs",
)


def draw(p: Run) -> None:
    p.na("PreemptNugoPNinetyNine", "PreemptGoPNinetyNine", "PreemptNugoSlices", "PreemptGoSlices", "PreemptLossTenMs", "PreemptLossOneMs",
            "PreemptLossTwoHundredUs", "PreemptGoLoss", "SysmonCoresTenMs", "SysmonCoresOneMs", "SysmonCoresOff", "PreemptRounds")
    for c in ("TenMs", "OneMs", "TwoHundredUs"):
        p.interval(f"PreemptLoss{c}", None, None, "")
    preempt_whole(p)
    path = p.dir / "preempt" / "preempt.json"
    if not path.exists():
        p.missing.append("preemption (no preempt/preempt.json)")
        return
    d = json.loads(path.read_text())
    series = []
    for key, b in sorted(d["nugo"].items()):
        if key.startswith("preempt_latency/") and "p50_us" in b:
            series.append((f"nugo {key.split('/')[1]}", b["p50_us"] / 1e3, b["p99_us"] / 1e3, b.get("slice_us", 0) / 1e3))
    g = d.get("go", {}).get("BenchmarkPreemptLatency")
    if g:
        series.append(("Go 1.19 (10 ms, fixed)", g["p50_us"] / 1e3, g["p99_us"] / 1e3, 10.0))
    fig, ax = plt.subplots(figsize=(8, 3.2))
    x = range(len(series))
    ax.bar([i - 0.2 for i in x], [s[1] for s in series], 0.4, color="tab:blue", label="p50")
    ax.bar([i + 0.2 for i in x], [s[2] for s in series], 0.4, color="tab:red", label="p99")
    ax.scatter(list(x), [s[3] for s in series], marker="_", s=400, color="black", label="configured slice", zorder=3)
    ax.set_yscale("log")
    ax.set_xticks(list(x), [s[0] for s in series], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("wake delay (ms)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    p.save(fig, "preempt",
              "Preemption latency: how long a goroutine that became runnable waits behind CPU hogs, p50 and "
              "p99, for nugo's time slices (lock\\_hog: the hog holds a std::mutex) and for Go 1.19 "
              f"({p.real()}). Results: \\texttt{{{p.where('preempt/preempt.json')}}}.")
    ten = d["nugo"].get("preempt_latency/slice:10ms")
    p.number("PreemptNugoPNinetyNine", ten["p99_us"] / 1e3 if ten else None, p.where("preempt/preempt.json"))
    p.number("PreemptGoPNinetyNine", g["p99_us"] / 1e3 if g else None, p.where("preempt/preempt.json"))
    # The p99 in slices of 10 ms: nugo's at its default slice, Go's at its fixed one.
    p.number("PreemptNugoSlices", ten["p99_us"] / 1e4 if ten else None, p.where("preempt/preempt.json"), digits=2)
    p.number("PreemptGoSlices", g["p99_us"] / 1e4 if g else None, p.where("preempt/preempt.json"), digits=2)
    over, src = d.get("overhead", {}), p.where("preempt/preempt.json")
    for config, macro in (("slice:10ms", "TenMs"), ("slice:1ms", "OneMs"), ("slice:200us", "TwoHundredUs")):
        losses = over.get("nugo_loss", {}).get(config)
        if losses:
            sp = explib.spread([100 * x for x in losses])
            p.number(f"PreemptLoss{macro}", sp.median, src, percent=True)
            p.interval(f"PreemptLoss{macro}", sp.ci_lo if sp.n > 1 else None, sp.ci_hi if sp.n > 1 else None,
                          src, percent=True)
    if over.get("go_loss"):
        p.number("PreemptGoLoss", 100 * statistics.median(over["go_loss"]), src, percent=True)
    for config, macro in (("slice:10ms", "TenMs"), ("slice:1ms", "OneMs"), ("async:off", "Off")):
        cores = over.get("nugo_other_cores", {}).get(config)
        p.number(f"SysmonCores{macro}", 100 * statistics.median(cores) if cores else None, src, percent=True)
    p.number("PreemptRounds", d.get("settings", {}).get("rounds"), src)


def preempt_whole(p: Run) -> None:
    """Preemption's cost on whole workloads (preempt/workloads.json, scripts/pipeline/preempt.py)."""
    p.na("PreemptWholeWorkloads", "PreemptWholeRounds")
    for c in ("TenMs", "OneMs", "TwoHundredUs"):
        p.na(f"PreemptWhole{c}", f"PreemptWhole{c}Differ", f"PreemptWhole{c}Verdict", f"PreemptWhole{c}Faster",
                f"PreemptWhole{c}Slower")
        p.interval(f"PreemptWhole{c}", None, None, "")
    path = p.dir / "preempt" / "workloads.json"
    if not path.exists():
        p.missing.append("preemption on whole workloads (no preempt/workloads.json)")
        return
    d, src = json.loads(path.read_text()), p.where("preempt/workloads.json")
    summary = d["summary"]
    p.number("PreemptWholeWorkloads", len(summary), src)
    p.number("PreemptWholeRounds", d["settings"]["rounds"], src)
    for config, macro in (("10ms", "TenMs"), ("1ms", "OneMs"), ("200us", "TwoHundredUs")):
        triples = [(v[config]["median"], v[config]["ci_lo"], v[config]["ci_hi"]) for v in summary.values()]
        p.geomean_interval(f"PreemptWhole{macro}", triples,
                              f"{src}: geometric mean over the workloads of time at {config} / time with "
                              "asynchronous preemption off")
        p.number(f"PreemptWhole{macro}Differ", sum(1 for v in summary.values() if v[config]["differs"]), src)
        p.number(f"PreemptWhole{macro}Faster", sum(1 for v in summary.values() if v[config]["ci_hi"] < 1), src)
        p.number(f"PreemptWhole{macro}Slower", sum(1 for v in summary.values() if v[config]["ci_lo"] > 1), src)
