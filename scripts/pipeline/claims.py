#!/usr/bin/python3
"""The paper's claims judged on one run: does each finding hold on this machine?

usage: scripts/pipeline/claims.py RESULTS_DIR [--catalogue paper/claims.toml] [--quiet]

Reads the catalogue (paper/claims.toml: each claim's sentence, where it applies, the numbers it
rests on and its test) and the run's numbers (RESULTS_DIR/generated/numbers.json, which plot.py
writes beside numbers.tex: the values the paper prints), and writes RESULTS_DIR/claims.json and
RESULTS_DIR/claims.md (and, for the paper, RESULTS_DIR/generated/claims.tex) and prints the table. Each claim gets one verdict:

  holds            its test passes on this run's numbers
  does not hold    its test fails: a finding of the run, not an error
  inconclusive     an interval holds the bound, there is no interval (one repetition), or the
                   counts rest on too few repetitions for the test behind them (the claim's
                   `requires`); the reason says which
  not applicable   the run could not test it here, and the reason says why: its step did not
                   run (--only, no virtual-time build), the sweep had no such mode, this machine
                   has one NUMA node, the run is a rehearsal

A claim whose step ran but whose numbers are missing (n/a) cannot be judged: that is an error of
the run, reported with the file the number should have come from, and the exit status is 1.
Bad input (no such directory, no numbers.json, a catalogue that does not parse or names an
unknown test) exits 2 naming it; nothing is written then.
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import operator
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402

PROG = "claims.py"
CATALOGUE = explib.ROOT / "paper" / "claims.toml"
VERDICTS = ("holds", "does not hold", "inconclusive", "not applicable")
WHERE = ("real", "real-multinode", "emulated", "virtual")
TESTS = ("below", "above", "same", "count")
# Where each step's numbers come from, for the messages: the file a missing number names.
STEP_FILES = {"sweep": "results.csv", "ablation": "ablation/results.csv", "micro": "micro/micro.json",
              "preempt": "preempt/workloads.json", "virtual": "virtual/results.csv",
              "virtual-validation": "virtual-validation/virtual.json", "hierarchy": "hierarchy/hierarchy.json"}


# reproduce.sh runs the virtual set's four scripts as one step, "virtual" (run.json).
MANIFEST_STEP = {"virtual-validation": "virtual", "hierarchy": "virtual"}


class BadInput(Exception):
    pass


def load_catalogue(path: Path) -> list[dict]:
    """The claims of PATH, each checked for the fields its test needs."""
    try:
        claims = tomllib.loads(path.read_text()).get("claim", [])
    except OSError as e:
        raise BadInput(f"{path}: cannot read the catalogue: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: the catalogue does not parse: {e}") from e
    if not claims:
        raise BadInput(f"{path}: no [[claim]] entries")
    seen = set()
    for c in claims:
        cid = c.get("id", "?")
        for field in ("id", "sentence", "where", "step", "numbers", "test"):
            if field not in c:
                raise BadInput(f"{path}: claim {cid}: no '{field}'")
        if cid in seen:
            raise BadInput(f"{path}: claim {cid} appears twice")
        seen.add(cid)
        if c["where"] not in WHERE:
            raise BadInput(f"{path}: claim {cid}: where = '{c['where']}' (one of {', '.join(WHERE)})")
        if c["step"] not in STEP_FILES:
            raise BadInput(f"{path}: claim {cid}: step = '{c['step']}' (one of {', '.join(STEP_FILES)})")
        if c["test"] not in TESTS:
            raise BadInput(f"{path}: claim {cid}: test = '{c['test']}' (one of {', '.join(TESTS)})")
        need = {"below": ("number", "bound"), "above": ("number", "bound"), "same": ("number", "margin"),
                "count": ("holds",)}[c["test"]]
        for field in need:
            if field not in c:
                raise BadInput(f"{path}: claim {cid}: test '{c['test']}' needs '{field}'")
        for field in ("holds", "requires"):
            if field in c:
                try:
                    names = expression_names(c[field])
                except (SyntaxError, ValueError) as e:
                    raise BadInput(f"{path}: claim {cid}: cannot read {field} = '{c[field]}': {e}") from e
                # What a claim holds on is what it shows; what it requires (a repetition count)
                # is stated in the reason when it fails.
                unknown = names - set(c["numbers"])
                if field == "holds" and unknown:
                    raise BadInput(f"{path}: claim {cid}: holds reads {', '.join(sorted(unknown))}, "
                                   "which its numbers do not list")
        for field in ("number", "also"):
            if field in c and c[field] not in c["numbers"]:
                raise BadInput(f"{path}: claim {cid}: {field} = '{c[field]}' is not among its numbers")
    return claims


# A small, closed expression language for counts: names, numbers, + - * /, comparisons, and/or/not.
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}


def expression_names(expr: str) -> set[str]:
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
                                 ast.BinOp, ast.Compare, ast.Name, ast.Load, ast.Constant, *_OPS)):
            raise ValueError(f"'{type(node).__name__}' is not allowed")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def evaluate(expr: str, values: dict[str, float]):
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp):
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            return (not ev(node.operand)) if isinstance(node.op, ast.Not) else -ev(node.operand)
        if isinstance(node, ast.BoolOp):
            results = [ev(v) for v in node.values]
            return all(results) if isinstance(node.op, ast.And) else any(results)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right in zip(node.ops, node.comparators):
                r = ev(right)
                if not _OPS[type(op)](left, r):
                    return False
                left = r
            return True
        raise ValueError(type(node).__name__)
    return ev(ast.parse(expr, mode="eval"))


class RunFacts:
    """What a run did, for applicability: its steps, the sweep's modes, the machine."""

    def __init__(self, run: Path):
        self.dir = run
        self.machine = read_json(run / "machine.json") or {}
        self.manifest = read_json(run / "run.json") or {}
        settings = (read_json(run / "sweep.json") or {}).get("settings", {})
        # The modes that ran (a twin that was not built, or Go without its toolchain, is asked
        # for but leaves no row), not the modes asked for.
        self.modes = ({r["mode"] for r in explib.read_results(run / "results.csv") if r["ok"] == 1}
                      if (run / "results.csv").exists() else set())
        steps = self.manifest.get("steps")
        if steps:  # run.json (reproduce.sh) says which steps ran to the end
            ran = {s["name"] for s in steps if s.get("status") == "done"}
            planned = {s["name"] for s in steps}
            self.ran = {c for c in STEP_FILES if MANIFEST_STEP.get(c, c) in ran}
            self.planned = {c for c in STEP_FILES if MANIFEST_STEP.get(c, c) in planned}
        else:  # a directory made by hand: a step ran if its files are there
            self.ran = {step for step, f in STEP_FILES.items() if (run / f).exists()}
            self.planned = set(self.ran)
        args = self.manifest.get("args", [])
        self.narrowed = [a for a in args if a in ("--only", "--modes", "--procs", "--topology")]
        self.profile = self.manifest.get("profile") or settings.get("profile", "default")
        self.emulated = any(t.get("emulated") for t in self.machine.get("topologies", {}).values())

    def not_applicable(self, c: dict) -> str | None:
        """Why this run cannot test claim c, or None."""
        if self.machine.get("rehearsal") and c["where"] != "virtual":
            return f"a rehearsal ({self.machine['rehearsal']}): no timing of it is a result"
        if c["where"] == "real-multinode":
            nodes = int(self.machine.get("topologies", {}).get("machine", {}).get("nodes_with_cpus")
                        or self.machine.get("numa_nodes") or 1)
            if nodes < 2:
                return f"this machine has {nodes} NUMA node: the claim needs real multi-node hardware"
        if c["step"] not in self.planned:
            why = {"virtual": "no virtual-time build, or --only", "virtual-validation": "no virtual-time build, or --only",
                   "hierarchy": "no virtual-time build, or --only"}.get(c["step"], "--only")
            return f"this run did not include the {c['step']} step ({why})"
        for need in c.get("needs", []):
            if need.startswith("mode:") and need[5:] not in self.modes:
                return f"the sweep did not run mode {need[5:]} (--modes, or its twin was not built)"
            if need == "emulated" and not self.emulated:
                return "the sweep ran no emulated topology (a multi-node machine runs its own)"
        return None


def read_json(path: Path) -> dict | None:
    try:
        return explib.read_json_object(path)
    except ValueError as e:
        raise BadInput(str(e)) from e


def show(entry: dict | None) -> str:
    """A number as the table shows it: value and, when there is one, its interval."""
    if not entry or entry.get("value") is None:
        return (entry or {}).get("text") or "n/a"
    v, iv, pct = entry["value"], entry.get("interval"), entry.get("percent")
    unit = "%" if pct else ""
    text = f"{v:,}" if isinstance(v, int) else f"{v:.3g}{unit}"
    if iv:
        text += f" [{iv[0]:.3g}, {iv[1]:.3g}]{unit}"
    return text


def judge(c: dict, facts: RunFacts, numbers: dict) -> dict:
    out = {k: c[k] for k in ("id", "sentence", "where", "step")}
    out["condition"] = condition_text(c)
    out["source"] = STEP_FILES[c["step"]]
    out["numbers"] = [{"name": n, "value": (numbers.get(n) or {}).get("value"),
                       "interval": (numbers.get(n) or {}).get("interval"), "text": show(numbers.get(n))}
                      for n in c["numbers"]]
    why = facts.not_applicable(c)
    if why:
        return {**out, "verdict": "not applicable", "reason": why}
    if c["step"] not in facts.ran:
        return {**out, "verdict": "missing", "reason": f"the {c['step']} step failed or did not finish "
                f"(run.json); {STEP_FILES[c['step']]} is incomplete"}
    # What the test reads must be there; the other numbers a claim shows may be n/a (a range of
    # the faster rows when none is faster).
    names = ({c[k] for k in ("number", "also") if k in c} | expression_names(c.get("requires") or "0")
             | expression_names(c.get("holds") or "0"))
    missing = sorted(n for n in names if (numbers.get(n) or {}).get("value") is None)
    if missing:
        what = f"{', '.join(missing)} n/a"
        if c["step"] == "sweep" and facts.narrowed:
            return {**out, "verdict": "not applicable",
                    "reason": f"{what}: the sweep was narrowed ({', '.join(facts.narrowed)}) and has no rows for it"}
        if facts.profile == "quick":
            return {**out, "verdict": "inconclusive", "reason": f"{what} in a --quick run (tiny sizes, one repetition)"}
        return {**out, "verdict": "missing",
                "reason": f"{what} although the {c['step']} step ran: see {STEP_FILES[c['step']]}"}
    values = {n: numbers[n]["value"] for n in names}
    if c["test"] == "count":
        if c.get("requires") and not evaluate(c["requires"], values):
            return {**out, "verdict": "inconclusive", "reason": f"needs {c['requires']} (this run: " +
                    ", ".join(f"{n} = {values[n]:g}" for n in sorted(expression_names(c['requires']))) + ")"}
        ok = evaluate(c["holds"], values)
        return {**out, "verdict": "holds" if ok else "does not hold", "reason": ""}
    verdicts = [interval_verdict(c, numbers[n]) for n in (c["number"], c.get("also")) if n]
    # The weakest verdict of the numbers tested: one that does not hold decides, then one that
    # cannot be told.
    for weakest in ("does not hold", "inconclusive"):
        for v, reason in verdicts:
            if v == weakest:
                return {**out, "verdict": v, "reason": reason}
    return {**out, "verdict": "holds", "reason": ""}


def interval_verdict(c: dict, entry: dict) -> tuple[str, str]:
    iv = entry.get("interval")
    if iv and not all(math.isfinite(v) for v in iv):
        return "inconclusive", f"the interval {iv} is not finite"
    if not iv or iv[0] == iv[1]:
        return "inconclusive", "no interval (one repetition?): a ratio alone cannot be tested"
    lo, hi = iv
    if c["test"] in ("below", "above"):
        b = c["bound"]
        if lo <= b <= hi:
            return "inconclusive", f"the interval [{lo:.3g}, {hi:.3g}] holds {b:g}"
        on_claimed_side = hi < b if c["test"] == "below" else lo > b
        return ("holds", "") if on_claimed_side else ("does not hold", f"the interval lies {'above' if lo > b else 'below'} {b:g}")
    m = c["margin"]
    if 1 / m <= lo and hi <= m:
        return "holds", ""
    if lo > m or hi < 1 / m:
        return "does not hold", f"the interval [{lo:.3g}, {hi:.3g}] lies outside [{1 / m:.3g}, {m:g}]"
    return "inconclusive", f"the interval [{lo:.3g}, {hi:.3g}] reaches beyond [{1 / m:.3g}, {m:g}]"


def condition_text(c: dict) -> str:
    if c["test"] == "below":
        return f"{c['number']}'s interval below {c['bound']:g}"
    if c["test"] == "above":
        return f"{c['number']}'s interval above {c['bound']:g}"
    if c["test"] == "same":
        both = c["number"] + (f" and {c['also']}" if c.get("also") else "")
        return f"{both}: interval within [{1 / c['margin']:.3g}, {c['margin']:g}]"
    return c["holds"] + (f" (given {c['requires']})" if c.get("requires") else "")


def markdown(judged: list[dict], counts: dict, run: Path) -> str:
    lines = [f"# The paper's claims on this run ({run.name})", "",
             "Each claim of paper/claims.toml judged on this run's numbers (generated/numbers.json). "
             "Where says what kind of number it rests on: REAL (timed on this machine), EMULATED "
             "(hwloc topologies folded onto this machine), VIRTUAL (virtual time under the model: a projection).", "",
             ", ".join(f"{counts[v]} {v}" for v in (*VERDICTS, "missing") if counts.get(v)), ""]
    rows = [[c["id"], c["verdict"] + (f" ({c['reason']})" if c["reason"] else ""), c["where"].upper(),
             "; ".join(f"{n['name']} = {n['text']}" for n in c["numbers"]), c["condition"], c["sentence"]]
            for c in judged]
    lines.append(explib.table(rows, ["claim", "verdict", "where", "numbers", "condition", "sentence"], markdown=True))
    return "\n".join(lines) + "\n"


def latex(judged: list[dict], counts: dict, run: Path) -> str:
    """generated/claims.tex, for the paper: \\claimnote@ID for each claim (empty when it holds, else
    ': ' and its verdict, which the paper's \\claim prints beside the claim's id), \\claimscounts and
    \\claimstable (every claim, where it applies, its verdict on this run and its sentence)."""
    out = [f"% scripts/pipeline/claims.py {run.name}: paper/claims.toml judged on this run (claims.md)."]
    for c in judged:
        note = "" if c["verdict"] == "holds" else f": {c['verdict']}"
        out.append(f"\\expandafter\\def\\csname claimnote@{c['id']}\\endcsname{{{explib.tex(note)}}}")
    out.append("\\newcommand{\\claimscounts}{" + explib.tex(", ".join(
        f"{counts[v]} {v}" for v in (*VERDICTS, "missing") if counts.get(v))) + "}")
    rows = [f"\\texttt{{{explib.tex(c['id'])}}} & {c['where'].upper()} & {explib.tex(c['verdict'])} & "
            f"{explib.tex(c['sentence'])} \\\\" for c in judged]
    out.append("\\newcommand{\\claimstable}{%\n\\begin{tabularx}{\\textwidth}{@{}llp{0.13\\textwidth}X@{}}\\toprule\n"
               "claim & where & verdict & sentence \\\\\n\\midrule\n" + "\n".join(rows)
               + "\n\\bottomrule\n\\end{tabularx}}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description="the paper's claims judged on one run")
    ap.add_argument("results", type=Path)
    ap.add_argument("--catalogue", type=Path, default=CATALOGUE)
    ap.add_argument("--quiet", action="store_true", help="write the files, print only the counts")
    args = ap.parse_args(argv)
    try:
        if not args.results.is_dir():
            raise BadInput(f"{args.results}: no such results directory")
        claims = load_catalogue(args.catalogue)
        numbers_path = args.results / "generated" / "numbers.json"
        if not numbers_path.exists():
            raise BadInput(f"{numbers_path}: missing (scripts/pipeline/plot.py {args.results} writes it)")
        numbers = read_json(numbers_path).get("numbers")
        if not isinstance(numbers, dict):
            raise BadInput(f"{numbers_path}: no 'numbers' object (a results directory of an older version?)")
        facts = RunFacts(args.results)
    except BadInput as e:
        return explib.bad_input(PROG, str(e))
    judged = [judge(c, facts, numbers) for c in claims]
    counts = {v: sum(1 for c in judged if c["verdict"] == v) for v in (*VERDICTS, "missing")}
    data = {"run": str(args.results.resolve()), "catalogue": str(args.catalogue),
            "revision": facts.manifest.get("revision"), "claims": judged, "counts": counts}
    md = markdown(judged, counts, args.results.resolve())
    # Written whole or not at all: a half-written verdict must not look complete.
    (args.results / "generated").mkdir(exist_ok=True)
    for name, text in (("claims.json", json.dumps(data, indent=1) + "\n"), ("claims.md", md),
                       ("generated/claims.tex", latex(judged, counts, args.results.resolve()))):
        tmp = args.results / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(args.results / name)
    print(f"The paper's claims on this run ({args.results / 'claims.md'}):")
    if not args.quiet:  # the terminal's table: the verdict, and the reason where there is one
        print(explib.table([[c["id"], c["where"], c["verdict"], "; ".join(n["text"] for n in c["numbers"][:2]),
                             c["reason"]] for c in judged], ["claim", "where", "verdict", "numbers", "why"]))
    print("  " + ", ".join(f"{counts[v]} {v}" for v in (*VERDICTS, "missing") if counts[v]))
    for c in judged:
        if c["verdict"] == "missing":
            print(f"{PROG}: claim {c['id']} cannot be judged: {c['reason']}", file=sys.stderr)
    return 1 if counts["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
