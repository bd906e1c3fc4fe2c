#!/usr/bin/env bash
# For the project's maintainers: make one run the paper's published results.
#
#   scripts/dev/publish.sh RESULTS_DIR
#
# Copies the run's figures into paper/figures/ and its numbers, tables, captions, results.md and
# claims into paper/generated/ (and its PDF to paper/paper.pdf, which git ignores), replacing
# what was there, so that everything the paper and the README quote comes from that one run.
# A user's run never does this by itself (scripts/reproduce.sh writes only under its results
# directory). Refused, saying why, and nothing copied, unless the run is publishable:
#   - it has a run.json (reproduce.sh made it) that says it finished with every step done;
#   - one revision made it (no --resume across revisions), from a tree without uncommitted
#     changes;
#   - it is a complete run: the default or --full profile, with none of --only, --modes,
#     --procs, --topology, --build-dir, --virtual-build-dir or --rehearsal;
#   - this clone has no uncommitted changes to paper/ (the copy must be the only change).
# Then commit paper/ with the run's revision in the message.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: scripts/dev/publish.sh RESULTS_DIR" >&2; exit 2; }
case "$1" in /*) run=$1 ;; *) run=$caller/$1 ;; esac
[ -d "$run" ] || { echo "publish.sh: $1: no such results directory" >&2; exit 2; }
run=$(cd "$run" && pwd)
/usr/bin/python3 - "$run" <<'PY' || exit 2
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
why = []
try:
    m = json.loads((run / "run.json").read_text())
except FileNotFoundError:
    sys.exit(f"publish.sh: {run}/run.json missing: not a run of scripts/reproduce.sh")
except json.JSONDecodeError as e:
    sys.exit(f"publish.sh: {run}/run.json: not JSON: {e}")
if not m.get("finished"):
    why.append("it did not finish (run.json has no finish time): --resume it first")
not_done = [s["name"] for s in m.get("steps", []) if s.get("status") != "done"]
if not_done:
    why.append(f"steps not done: {', '.join(not_done)}")
if len(m.get("revisions", [])) != 1:
    why.append(f"made by more than one revision: {', '.join(r[:12] for r in m.get('revisions', []))}")
if m.get("dirty"):
    why.append(f"made from a tree with uncommitted changes (at {m.get('revision', '?')[:12]})")
if m.get("profile") not in ("default", "full"):
    why.append(f"profile {m.get('profile')}: only a default or --full run is published")
partial = [a for a in m.get("args", []) if a in ("--only", "--modes", "--procs", "--topology", "--build-dir",
                                                 "--virtual-build-dir", "--rehearsal")]
if partial:
    why.append(f"not a complete run: {', '.join(partial)}")
for f in ("generated/numbers.tex", "generated/numbers.json", "generated/results.md", "claims.json", "claims.md"):
    if not (run / f).exists():
        why.append(f"{f} missing")
if not list((run / "figures").glob("*.png")):
    why.append("figures/ has no figure")
if m.get("revision", "unknown") == "unknown":
    why.append("no revision recorded (made without git)")
if why:
    sys.exit("publish.sh: refusing to publish " + str(run) + ":\n  " + "\n  ".join(why))
PY
if [ -n "$(git status --porcelain -- paper)" ]; then
  echo "publish.sh: paper/ has uncommitted changes; commit or discard them first (the copy must be the only change)" >&2
  exit 2
fi
mkdir -p paper/figures paper/generated
rm -f paper/figures/*.png paper/generated/* paper/paper.pdf  # nothing stale stays
cp "$run"/figures/*.png paper/figures/
cp "$run"/generated/*.tex "$run"/generated/results.md "$run"/generated/numbers.json "$run"/claims.md "$run"/claims.json \
  paper/generated/
[ -f "$run/paper/paper.pdf" ] && cp "$run/paper/paper.pdf" paper/paper.pdf
rev=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["revision"][:12])' "$run/run.json")
echo "publish.sh: published $run (revision $rev) to paper/figures/ and paper/generated/"
echo "  git add paper && git commit -m \"paper: the results of run $(basename "$run") at $rev\""
