#!/usr/bin/env python3
"""scripts/pipeline/catalogue.py against what it describes.

usage: tests/catalogue_test.py STATS_JSON NUGO_TOPO

STATS_JSON: a NUGO_STATS file the runtime just wrote. Its per-P counters (every integer of a
"ps" entry but "p" and "node") must be exactly catalogue.STATS_COUNTERS, and "totals" and every
"nodes" entry must have each of them: the C++ side (kCounterKeys, core/src/obs/stats.hpp, plus
the derived runs_home and idle_ns) and the pipeline's list cannot drift apart.
NUGO_TOPO: the nugo-topo tool; every machine the catalogue names must be a file of
topology/machines that the runtime loads, with the node count its name implies.
Exit status 0 when all holds, 1 naming what does not.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pipeline import catalogue  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    stats, topo = json.loads(Path(argv[0]).read_text()), argv[1]
    errors = []
    per_p = [k for k, v in stats["ps"][0].items() if isinstance(v, int) and k not in ("p", "node")]
    if set(per_p) != set(catalogue.STATS_COUNTERS):
        errors.append(f"the runtime's per-P counters {sorted(per_p)} are not catalogue.STATS_COUNTERS "
                      f"{sorted(catalogue.STATS_COUNTERS)}")
    for where, block in [("totals", stats["totals"])] + [(f"nodes[{i}]", n) for i, n in enumerate(stats["nodes"])]:
        missing = [k for k in catalogue.STATS_COUNTERS if k not in block]
        if missing:
            errors.append(f"{where} lacks {missing}")
    machines = {m.file for m in [*catalogue.EMULATED.values(), *catalogue.VIRTUAL_MACHINES.values()]}
    machines |= {f for f, _ in catalogue.LOCALITY} | {catalogue.VALIDATION_BIG}
    for file in sorted(machines):
        try:
            spec = catalogue.machine_spec(file)
        except catalogue.MissingMachine as e:
            errors.append(str(e))
            continue
        out = subprocess.run([topo], env=os.environ | {"NUGO_TOPOLOGY": spec}, capture_output=True, text=True)
        nodes = re.search(r"(\d+) NUMA nodes", out.stdout)
        want = re.search(r"(\d+)node", file)
        if out.returncode != 0 or not nodes:
            errors.append(f"{file}: nugo-topo failed: {out.stderr.strip()[-300:]}")
        elif want and int(nodes.group(1)) != int(want.group(1)):
            errors.append(f"{file}: {nodes.group(1)} NUMA nodes, its name says {want.group(1)}")
    try:
        catalogue.machine_spec("no-such-machine.xml")
        errors.append("a missing machine file was not refused")
    except catalogue.MissingMachine as e:
        if "no-such-machine.xml" not in str(e):
            errors.append(f"the refusal does not name the file: {e}")
    for e in errors:
        print(f"catalogue_test: {e}", file=sys.stderr)
    if not errors:
        print(f"catalogue_test: {len(catalogue.STATS_COUNTERS)} counters agree with the runtime's; "
              f"{len(machines)} machines load")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
