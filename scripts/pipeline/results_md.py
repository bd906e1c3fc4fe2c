#!/usr/bin/env python3
"""Renders a run's generated numbers, tables and captions as Markdown: results.md.

    python3 scripts/pipeline/results_md.py GENERATED_DIR

GENERATED_DIR is what scripts/pipeline/plot.py writes (numbers.tex, captions.tex, tables.tex), with the
figures in ../figures beside it: a run's results/<run>/generated, or paper/generated for the
published run. plot.py calls render() at the end of every run, so the Markdown and the paper's
macros are one set of numbers; README.md links the published one and types none of them.

Each number is shown with its 95% interval and verdict where plot.py computed them (the macros
NAME, NAMECI and NAMEVerdict become one row), and with the results file it came from.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PROG = "results_md.py"

# The sections, in the order a reader meets them: the macro-name prefixes each holds and the
# figures drawn from the same data (plot.py's names). A prefix no section lists lands in "Other".
SECTIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("The run", ("Git", "ResultsDir", "Machine", "Topology", "Sweep", "Published"), ()),
    ("NUMA mode against flat mode", ("Compute", "Communication", "Memory", "Fib", "Latency", "Steals", "RunsHome"),
     ("scalability", "locality", "memory-speedup")),
    ("Placement and the stealing hierarchy separated (the ablation)", ("Ablation",), ("ablation", "penalty")),
    ("nugo against Go and the C++ peers", ("Peer",),
     ("peers-compute", "peers-communication", "peers-memory")),
    ("Micro-benchmarks", ("Micro",), ("micro",)),
    ("Preemption and sysmon", ("Preempt", "Sysmon"), ("preempt",)),
    ("Network", ("Http",), ("http",)),
    ("The execution tracer", ("Tracer",), ("timeline",)),
    ("Virtual time: NUMA against flat on machines we do not have", ("Virtual",), ("virtual",)),
    ("Virtual time against real time", ("Validation",), ("virtual-speedup",)),
    ("Virtual time's verdicts against its constants", ("Sensitivity",), ("sensitivity",)),
    ("The stealing hierarchy on trial (virtual time)", ("Hierarchy",), ("hierarchy",)),
)

NEWCOMMAND = re.compile(r"^\\newcommand\{\\(num|caption|has|table)([A-Za-z]+)\}\{(.*)\}(?:\s+%\s*(.*))?$")


def plain(tex: str) -> str:
    """The TeX plot.py writes (a handful of constructs) as Markdown text."""
    out = tex
    out = re.sub(r"\\texttt\{([^{}]*)\}", r"`\1`", out)
    out = re.sub(r"\\(?:emph|textit)\{([^{}]*)\}", r"*\1*", out)
    out = re.sub(r"\\textbf\{([^{}]*)\}", r"**\1**", out)
    for a, b in (("{,}", ","), ("$-$", "-"), ("$\\sim$", "~"), ("\\textasciitilde{}", "~"),
                 ("\\textasciicircum{}", "^"), ("\\scriptsize", ""), ("---", "—"), ("--", "–"),
                 ("\\%", "%"), ("\\_", "_"), ("\\&", "&"), ("\\#", "#"), ("\\$", "$"), ("~", " ")):
        out = out.replace(a, b)
    return re.sub(r"\s+", " ", out).strip()


def words(name: str) -> str:
    """A macro's name as words: AblationSpeedupBoth -> "ablation speedup both"."""
    return " ".join(w.lower() if not w.isupper() else w for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+", name))


def read_macros(path: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """kind -> name -> (value, comment) for every one-line \\newcommand of the file."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    if not path.is_file():
        return out
    for line in path.read_text().splitlines():
        m = NEWCOMMAND.match(line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = (m.group(3), m.group(4) or "")
    return out


def read_tables(path: Path) -> dict[str, str]:
    """name -> the tabular of each \\table<name> (multi-line bodies, as tables.tex has them)."""
    if not path.is_file():
        return {}
    text = path.read_text()
    out = {}
    for m in re.finditer(r"\\newcommand\{\\table([A-Za-z]+)\}\{%\n(.*?)\}(?=\n\\newcommand|\n*\Z)", text, re.S):
        out[m.group(1)] = m.group(2)
    return out


def tabular(tex: str) -> list[str]:
    """A booktabs tabular as a Markdown table; n/a stays a line of text."""
    body = re.sub(r"\\begin\{tabular\}\{[^}]*\}|\\end\{tabular\}|\\(?:top|mid|bottom)rule|\\hline", "", tex)
    rows = [[plain(c) for c in r.split("&")] for r in body.split("\\\\") if r.strip()]
    if not rows or len(rows[0]) < 2:
        return [plain(tex)]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return lines


def section_of(name: str) -> str:
    for title, prefixes, _ in SECTIONS:
        if any(name.startswith(p) for p in prefixes):
            return title
    return "Other"


def render(generated: Path) -> str:
    macros = read_macros(generated / "numbers.tex")
    captions = read_macros(generated / "captions.tex")
    tables = read_tables(generated / "tables.tex")
    numbers = macros.get("num", {})
    if not numbers:
        raise ValueError(f"{generated / 'numbers.tex'}: no \\num macros (scripts/pipeline/plot.py writes them)")
    source_dir = numbers.get("ResultsDir", ("n/a", ""))[0]
    head = [
        "# Results",
        "",
        f"Generated by `scripts/pipeline/results_md.py` from `{generated.name}/numbers.tex`, `captions.tex` and",
        f"`tables.tex`, which `scripts/pipeline/plot.py` wrote from the results directory `{plain(source_dir)}`.",
        "Do not edit: every number here is one of the paper's `\\num...` macros, with the 95% interval",
        "and verdict plot.py computed for it and the file it came from. Each figure's caption says",
        "whether it is real, emulated, modelled or virtual.",
        "",
    ]
    if any("REHEARSAL" in line for line in (generated / "numbers.tex").read_text().splitlines()[:4]):
        head += ["**REHEARSAL: these numbers check the pipeline; none of them is a result.**", ""]
    # NAME, NAMECI and NAMEVerdict are one row.
    rows: dict[str, dict[str, str]] = {}
    for name, (value, source) in numbers.items():
        base, part = name, "value"
        for suffix, key in (("CI", "ci"), ("Verdict", "verdict")):
            if name.endswith(suffix) and name[: -len(suffix)] in numbers:
                base, part = name[: -len(suffix)], key
        rows.setdefault(base, {})[part] = plain(value)
        if part == "value":
            rows[base]["source"] = source
    by_section: dict[str, list[str]] = {}
    for name in sorted(rows):
        by_section.setdefault(section_of(name), []).append(name)
    has = captions.get("has", {})
    caption = captions.get("caption", {})
    out = head
    for title, _, figures in (*SECTIONS, ("Other", (), ())):
        names = by_section.get(title, [])
        drawn = [f for f in figures if has.get(re.sub(r"[^A-Za-z]", "", f.title()), ("0", ""))[0] == "1"]
        if not names and not drawn:
            continue
        out += [f"## {title}", ""]
        for fig in drawn:
            text = plain(caption.get(re.sub(r"[^A-Za-z]", "", fig.title()), ("", ""))[0])
            out += [f"![{fig}](../figures/{fig}.png)", "", f"*{fig}.png.* {text}", ""]
        for tname, tex in sorted(tables.items()):
            if section_of(tname) == title or (tname == "Peers" and title.startswith("nugo against")):
                out += [f"**Table {tname}** (`\\table{tname}`):", "", *tabular(tex), ""]
        if names:
            out += ["| number | value | 95% interval | verdict | macro | from |", "|---|---|---|---|---|---|"]
            for name in names:
                r = rows[name]
                cells = [words(name), r.get("value", ""), r.get("ci", ""), r.get("verdict", ""),
                         f"`\\num{name}`", f"`{plain(r.get('source', ''))}`" if r.get("source") else ""]
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            out.append("")
    return "\n".join(out)


def write(generated: Path) -> Path:
    path = generated / "results.md"
    path.write_text(render(generated))
    return path


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(f"{PROG}: usage: scripts/pipeline/results_md.py GENERATED_DIR", file=sys.stderr)
        return 2
    generated = Path(sys.argv[1])
    try:
        path = write(generated)
    except (OSError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    print(f"{PROG}: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
