#!/usr/bin/python3
"""Checks what the users' command wrote inside a QEMU guest: the results of
scripts/dev/numa-check.sh --vm N --reproduce (see its header, "The rehearsal").

    scripts/check/rehearsal_check.py OUT --expect FILE --masked-nodes 1,3 --only fib,triad,fanin
                               --build-dir BUILD

OUT holds, from the guest: default-mode.{json,stats.json,status} and topo.txt (the whole guest),
whole/ (scripts/reproduce.sh --quick there), masked-default-mode.*, masked-topo.txt and masked/
(the runtime's choice, nugo-topo and scripts/pipeline/sweep.py on triad under taskset -c on the CPUs of
the masked nodes), and cgroup-default-mode.*, cgroup-topo.txt and cgroup/ (the same in a
cgroup v2 cpuset of those nodes' CPUs and memory). FILE has a line
"NODE|CPULIST|DISTANCES" per node of the guest, as QEMU was told to make it.

A real multi-node machine must make the pipeline choose NUMA mode by itself, bind as configured
and record it, refuse the emulated latency model, label every row real (and, here, a QEMU guest
and a rehearsal), record the node distances, use only the CPUs the process may use, and draw
and build everything. Each check prints one line, "NUGO-CHECK <name> PASS|FAIL <detail>", as the
guest's own checks do, then "NUGO-CHECK-DONE passed=N failed=M skipped=0".

Exit status: 0 when every check passed, 1 when one failed, 2 on bad arguments.
"""
import argparse
import csv
import json
import os
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402  (cpu_list, workload_names: the same parsing as sweep.py's)

# What plot.py draws from a sweep of flat, numa and the peers on `machine` alone.
SWEEP_FIGURES = ("scalability", "locality", "memory-speedup")
PEER_FIGURES = {"compute": "peers-compute", "memory": "peers-memory", "communication": "peers-communication"}
PEER_TWINS = {"tbb": "tbb-workload", "omp": "omp-workload", "fiber": "fiber-workload"}


class Checks:
    def __init__(self) -> None:
        self.passed = self.failed = 0

    def check(self, name: str, ok: bool, detail: str) -> bool:
        print(f"NUGO-CHECK {name} {'PASS' if ok else 'FAIL'} {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def read_expect(path: Path) -> dict[int, tuple[list[int], list[int]]]:
    """node -> (its CPUs, its row of distances), from numa-check.sh's expect file."""
    nodes = {}
    for line in path.read_text().splitlines():
        if line.strip():
            node, cpus, distances = line.split("|")
            nodes[int(node)] = (explib.cpu_list(cpus), [int(d) for d in distances.split()])
    return nodes


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def read_json(path: Path) -> dict:
    """A JSON file, or the JSON line a program printed last; {} when there is none."""
    text = read_text(path)
    for candidate in (text, (text.strip().splitlines() or [""])[-1]):
        try:
            value = json.loads(candidate)
            return value if isinstance(value, dict) else {}
        except json.JSONDecodeError:
            continue
    return {}


def default_mode(c: Checks, out: Path, name: str, nodes: list[int]) -> None:
    """nugo-workload with no NUGO_MODE and no NUGO_BIND: the runtime's own choice."""
    status = read_text(out / f"{name}.status").strip()
    result = read_json(out / f"{name}.json")
    stats = read_json(out / f"{name}.stats.json")
    want = "numa" if len(nodes) > 1 else "flat"
    c.check(name, status == "0" and result.get("mode") == want and result.get("ok") is True
            and stats.get("mode") == want and result.get("latency_model") is False
            and result.get("emulated") is False,
            f"exit status {status or '?'}, mode {result.get('mode')} (expected {want} on {len(nodes)} node(s)), "
            f"bound {stats.get('bind')}, emulated {result.get('emulated')}, latency model {result.get('latency_model')}, "
            f"{result.get('result', read_text(out / f'{name}.err').strip()[-160:])}")


def topo_report(c: Checks, out: Path, name: str, nodes: list[int], cpus: list[int], masked: bool) -> None:
    """nugo-topo's report: this machine, the nodes it may use, and Ps only on their CPUs."""
    text = read_text(out / f"{name}.txt")
    placed = [int(x) for x in re.findall(r"\(real CPU (\d+)\)", text)]
    # "node 1 (OS node 3): ..." where the index differs from the OS number, else "node 1: ..."
    shown = [int(os_index or index) for index, os_index in
             re.findall(r"^node (\d+)(?: \(OS node (\d+)\))?:", text, re.M)]
    restricted = "(restricted:" in text
    c.check(name, text.startswith("topology: this machine") and "emulated" not in text and placed
            and set(placed) <= set(cpus) and shown == nodes and restricted == masked,
            f"nodes {shown} (expected {nodes}), Ps on CPUs {sorted(set(placed))} (allowed {cpus}), "
            f"{'restricted' if restricted else 'not restricted'} (expected {'' if masked else 'not '}restricted)")


def offered(twin: Path) -> set[str]:
    """The workloads a peer's twin offers (its usage message lists them); none if not built."""
    if not os.access(twin, os.X_OK):
        return set()
    try:
        return set(explib.workload_names(twin))
    except explib.Failed:
        return set()


def rows_of(path: Path) -> list[dict]:
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def run(c: Checks, out: Path, name: str, nodes: list[int], expect: dict, only: list[str], build: Path,
        confined: str = "") -> None:
    """One run of the pipeline in the guest: on the whole guest (scripts/reproduce.sh: then also
    the figures, numbers.tex and the paper), or confined to some nodes by an affinity mask
    (confined="taskset") or a cgroup cpuset ("cgroup"), where scripts/pipeline/sweep.py ran: its exit
    status, results.csv, machine.json and sweep.md."""
    masked = bool(confined)
    d = out / name
    cpus = sorted(c_ for n in nodes for c_ in expect[n][0])
    status = read_text(out / f"{name}.status").strip()
    program = "scripts/pipeline/sweep.py" if masked else "scripts/reproduce.sh"
    c.check(f"{name}-exit", status == "0", f"{program} exit status {status or '? (it did not finish)'}"
            f" (its output: the console log)")

    rows = rows_of(d / "results.csv")
    failed = [r for r in rows if r["ok"] != "1"]
    c.check(f"{name}-runs", rows and not failed,
            f"{len(rows)} rows, {len(failed)} failed" + (f": {failed[0]['mode']} {failed[0]['workload']} "
                                                        f"{failed[0]['procs']} Ps: {failed[0]['error']}" if failed else ""))
    wrong = [r for r in rows if r["topology"] != "machine" or r["emulated"] != "0" or r["latency_model"] != "0"
             or r["timing_reported"] != "1" or "QEMU guest" not in r.get("machine_kind", "")]
    c.check(f"{name}-real", rows and not wrong,
            "every row on topology machine, emulated=0, latency_model=0, machine_kind a QEMU guest" if not wrong else
            f"{len(wrong)} rows not: e.g. topology {wrong[0]['topology']}, emulated {wrong[0]['emulated']}, "
            f"latency_model {wrong[0]['latency_model']}, machine_kind {wrong[0].get('machine_kind')!r}")
    modes = sorted({r["mode"] for r in rows})
    wanted = {"flat"} | ({"numa"} if len(nodes) > 1 else set()) | {m for m, twin in PEER_TWINS.items() if set(only) & offered(build / "experiments" / twin)}
    if shutil.which("go") and (build / "go-workload").exists():
        wanted.add("go")
        if len(nodes) > 1 and shutil.which("numactl"):
            wanted.add("go_numactl")
    c.check(f"{name}-modes", wanted <= set(modes) and {r["workload"] for r in rows} == set(only),
            f"modes {modes} (expected at least {sorted(wanted)}), workloads {sorted({r['workload'] for r in rows})} "
            f"(expected {sorted(only)})")
    nugo = [r for r in rows if r["mode"] in ("flat", "numa")]
    unbound = [r for r in nugo if r["bind_asked"] != "pu" or r["bind"] != "pu" or "NUGO_BIND=pu" not in r["runtime_env"]]
    c.check(f"{name}-binding", nugo and not unbound,
            "every nugo row asked NUGO_BIND=pu, and the runtime recorded pu" if not unbound else
            f"{len(unbound)} rows: asked {unbound[0]['bind_asked']}, recorded {unbound[0]['bind']!r}, "
            f"environment {unbound[0]['runtime_env']!r}")
    procs = sorted({int(r["procs"]) for r in nugo})
    c.check(f"{name}-procs", procs and procs[-1] == len(cpus) and not any(r["oversubscribed"] == "1" for r in rows),
            f"P counts {procs}, up to the {len(cpus)} CPUs the process may use, none oversubscribed")
    # Every peer placed on the allowed CPUs: OpenMP's places and Go per node's nodes say where.
    places = [int(x) for r in rows if r["mode"] == "omp" and r["bind"] == "pu"
              for x in re.findall(r"\{(\d+)\}", r["runtime_env"])]
    per_node = {r["runtime_env"] for r in rows if r["mode"] == "go_numactl"}
    node_list = f"of {nodes}"
    c.check(f"{name}-peers-placed", set(places) <= set(cpus) and all(node_list in e for e in per_node)
            and (bool(places) or "omp" not in wanted) and (bool(per_node) or "go_numactl" not in wanted),
            f"OpenMP's places on CPUs {sorted(set(places))} (allowed {cpus}); Go per node: "
            f"{sorted(per_node)[0] if per_node else 'did not run'}")

    machine = read_json(d / "machine.json")
    topo = machine.get("topologies", {}).get("machine", {})
    distance = [[expect[a][1][sorted(expect).index(b)] for b in nodes] for a in nodes]
    allowed = {int(k): explib.cpu_list(v) for k, v in (machine.get("nodes_allowed") or {}).items()}
    restriction = machine.get("restriction") or ""
    dropped = [n for n in sorted(expect) if n not in nodes]
    if confined == "taskset":  # nugo narrowed the machine itself, and names the nodes left out
        restricted_ok = f"without node{'s' if len(dropped) > 1 else ''} {', '.join(map(str, dropped))}," in restriction
    elif confined == "cgroup":  # hwloc hid what the cpuset forbids, and nugo says so
        restricted_ok = "outside this process's cgroup cpuset" in restriction
    else:
        restricted_ok = restriction == ""
    c.check(f"{name}-machine", topo.get("emulated") is False and topo.get("nodes_with_cpus") == len(nodes)
            and topo.get("distance") == distance and allowed == {n: expect[n][0] for n in nodes}
            and restricted_ok,
            f"machine.json: nodes with CPUs {topo.get('nodes_with_cpus')}, distances {topo.get('distance')} "
            f"(expected {distance}), allowed {allowed}, restriction {restriction!r}")
    c.check(f"{name}-labelled", "QEMU guest" in str(machine.get("machine_kind")) and bool(machine.get("rehearsal"))
            and machine.get("virtualization", {}).get("vm") == "qemu",
            f"machine_kind {machine.get('machine_kind')!r}, virtualization {machine.get('virtualization')}, "
            f"rehearsal {machine.get('rehearsal')!r}")

    sweep = read_text(d / "sweep.md")
    c.check(f"{name}-sweep-md", "REHEARSAL" in sweep and "QEMU guest" in sweep and "(emulated)" not in sweep
            and "EMULATED" not in sweep,
            "sweep.md says REHEARSAL and QEMU guest, and labels nothing emulated" if sweep else "no sweep.md")
    if masked:
        return
    # plot.py draws the peers' figures when a C++ peer ran: one per kind of workload a peer or Go
    # ran without failing.
    peer_kinds = {r["kind"] for r in rows if r["ok"] == "1" and r["mode"] in (*PEER_TWINS, "go")}
    figures = [f for f in SWEEP_FIGURES if f != "memory-speedup" or "numa" in wanted] + \
        [PEER_FIGURES[k] for k in sorted(peer_kinds & PEER_FIGURES.keys()) if wanted & set(PEER_TWINS)]
    missing = [f for f in figures if not (d / "figures" / f"{f}.png").is_file()
               or (d / "figures" / f"{f}.png").stat().st_size < 1000]
    captions = read_text(d / "generated" / "captions.tex")
    c.check(f"{name}-figures", not missing and "EMULATED" not in captions,
            f"{len(figures) - len(missing)} of {len(figures)} figures drawn ({', '.join(figures)})"
            + (f"; missing {missing}" if missing else "") + ("; a caption says EMULATED" if "EMULATED" in captions else ""))
    numbers = read_text(d / "generated" / "numbers.tex")
    nodes_macro = re.search(r"\\newcommand\{\\numMachineNodes\}\{(\d+)\}", numbers)
    kind_macro = re.search(r"\\newcommand\{\\numMachineKind\}\{([^}]*)\}", numbers)
    c.check(f"{name}-numbers", "% REHEARSAL" in numbers and nodes_macro and int(nodes_macro.group(1)) == len(nodes)
            and kind_macro and "QEMU" in kind_macro.group(1),
            f"numbers.tex: MachineNodes {nodes_macro.group(1) if nodes_macro else 'missing'}, MachineKind "
            f"{kind_macro.group(1) if kind_macro else 'missing'}, "
            f"{'marked' if '% REHEARSAL' in numbers else 'not marked'} a rehearsal")
    if shutil.which("latexmk") and shutil.which("pdflatex"):
        pdf = d / "paper" / "paper.pdf"
        c.check(f"{name}-paper", pdf.is_file() and pdf.stat().st_size > 10000,
                f"{pdf.relative_to(out)} {'built' if pdf.is_file() else 'missing'}")


def main() -> int:
    p = argparse.ArgumentParser(prog="rehearsal_check.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--expect", type=Path, required=True)
    p.add_argument("--masked-nodes", required=True, help="the nodes of the taskset run, e.g. 1,3")
    p.add_argument("--only", required=True, help="the workloads the runs were given")
    p.add_argument("--build-dir", type=Path, required=True)
    args = p.parse_args()
    try:
        expect = read_expect(args.expect)
        masked = [int(n) for n in args.masked_nodes.split(",") if n]
    except (OSError, ValueError) as e:
        print(f"rehearsal_check.py: --expect {args.expect} or --masked-nodes {args.masked_nodes}: {e}", file=sys.stderr)
        return 2
    if not args.out.is_dir() or not masked or not set(masked) <= set(expect):
        print(f"rehearsal_check.py: {args.out} is not a directory, or --masked-nodes {args.masked_nodes} "
              f"are not nodes of {sorted(expect)}", file=sys.stderr)
        return 2
    only = args.only.split(",")
    build = args.build_dir.resolve()
    c = Checks()
    every = sorted(expect)
    default_mode(c, args.out, "default-mode", every)
    topo_report(c, args.out, "topo", every, sorted(x for n in every for x in expect[n][0]), False)
    run(c, args.out, "whole", every, expect, only, build)
    default_mode(c, args.out, "masked-default-mode", masked)
    topo_report(c, args.out, "masked-topo", masked, sorted(x for n in masked for x in expect[n][0]), True)
    run(c, args.out, "masked", masked, expect, ["triad"], build, "taskset")
    default_mode(c, args.out, "cgroup-default-mode", masked)
    topo_report(c, args.out, "cgroup-topo", masked, sorted(x for n in masked for x in expect[n][0]), True)
    run(c, args.out, "cgroup", masked, expect, ["triad"], build, "cgroup")
    print(f"NUGO-CHECK-DONE passed={c.passed} failed={c.failed} skipped=0")
    return 0 if c.failed == 0 and c.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
