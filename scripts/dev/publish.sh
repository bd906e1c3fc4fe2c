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
#
#   scripts/dev/publish.sh --checked-builds RESULTS_DIR
#
# also accepts a run given existing builds (--build-dir, --virtual-build-dir) once each is shown
# to be the run's revision's own: its executables are those the run recorded (run.json's build
# id), the build is up to date with its source tree (ninja has nothing to do), and that tree's
# build inputs (everything but paper/, docs/, scripts/, tests/data/ and *.md, tracked or not) are
# the run's revision's. Then the executables are what a build at that revision makes, and the run
# is one revision's as much as a run that built its own.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/../.."
checked_builds=
if [ "${1:-}" = --checked-builds ]; then checked_builds=1; shift; fi
[ $# -eq 1 ] || { echo "usage: scripts/dev/publish.sh [--checked-builds] RESULTS_DIR" >&2; exit 2; }
case "$1" in /*) run=$1 ;; *) run=$caller/$1 ;; esac
[ -d "$run" ] || { echo "publish.sh: $1: no such results directory" >&2; exit 2; }
run=$(cd "$run" && pwd)
/usr/bin/python3 - "$run" "$checked_builds" <<'PY' || exit 2
import json, subprocess, sys
from pathlib import Path
run, checked_builds = Path(sys.argv[1]), sys.argv[2] == "1"
sys.path.insert(0, str(Path.cwd() / "scripts"))
from pipeline import manifest  # noqa: E402
# Everything a build reads from its source tree, as git pathspecs.
BUILD_INPUTS = [".", ":!paper", ":!docs", ":!scripts", ":!tests/data", ":!*.md"]


def build_is_revisions(kind: str, build: dict, rev: str) -> list[str]:
    """Why the recorded build may not be the revision's own (empty when it is)."""
    bdir = Path(build.get("dir", ""))
    cache = bdir / "CMakeCache.txt"
    if not cache.exists():
        return [f"{kind} {bdir}: no CMakeCache.txt"]
    src = next((line.split("=", 1)[1].strip() for line in cache.read_text().splitlines()
                if line.startswith("CMAKE_HOME_DIRECTORY:")), "")
    why = []
    if manifest.build_id(bdir).get("id") != build.get("id"):
        why.append(f"{kind} {bdir}: its executables are not the ones the run recorded (build id)")
    dry = subprocess.run(["cmake", "--build", str(bdir), "--", "-n"], capture_output=True, text=True)
    if dry.returncode != 0 or "no work to do" not in dry.stdout:
        why.append(f"{kind} {bdir}: not up to date with its source tree {src}")
    diff = subprocess.run(["git", "-C", src, "diff", "--quiet", rev, "--", *BUILD_INPUTS])
    untracked = subprocess.run(["git", "-C", src, "ls-files", "--others", "--exclude-standard", "--", *BUILD_INPUTS],
                               capture_output=True, text=True).stdout.strip()
    if diff.returncode != 0 or untracked:
        why.append(f"{kind} {bdir}: its source tree {src} differs from {rev[:12]} in what a build reads")
    return why


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
if checked_builds and m.get("revision"):
    for kind, arg, key in (("build", "--build-dir", "build"), ("virtual build", "--virtual-build-dir", "virtual_build")):
        if arg in partial and m.get(key):
            problems = build_is_revisions(kind, m[key], m["revision"])
            why.extend(problems)
            if not problems:
                partial.remove(arg)
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
