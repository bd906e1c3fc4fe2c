#!/usr/bin/env python3
"""The paper's rules, checked: every number is a macro, every citation resolves.

usage: scripts/check/paper_check.py [--numbers GENERATED_NUMBERS_TEX] [PAPER_DIR]

PAPER_DIR (default paper/) holds paper.tex, references.bib, constants.tex and published.tex.
Checks, each failure printed with its line:
  1. No digit in the text of paper.tex (its document body, comments, verbatim, \\texttt{},
     labels, references, citations and figure widths aside): every number is a macro.
     Results are \\num... (scripts/pipeline/plot.py writes them from a results directory), design constants
     \\const... (constants.tex), published numbers of other papers \\pub... (published.tex).
  2. Every \\cite key is an entry of references.bib, and no two entries share a key.
  3. Every \\const... macro's value is in the source file its line names, at the text it gives
     (@ standing for the value): the paper cannot drift from the code.
  4. Every \\pub... macro names the BibTeX key of its source, which is in references.bib and
     cited by the paper.
  5. Every \\num... macro the paper uses is written by plot.py: with --numbers, one that the
     given numbers.tex defines (ctest passes a fresh plot.py run on the committed sample
     results); without it, one that the committed paper/generated/numbers.tex defines.
  6. Every \\const..., \\pub... and \\table... macro the paper uses is defined.
Exit status 0 when every rule holds, 1 when one is broken, 2 on bad usage.
"""
import re
import tomllib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Macros whose names the paper may use with digits around them removed: results, constants,
# published numbers, generated tables and captions, and the provenance labels.
MACRO = re.compile(r"\\(num|const|pub|table|caption|has)[A-Za-z]+")
# Commands whose braced argument is a name, not text: its digits are not numbers.
NAME_ARGS = ("texttt", "label", "ref", "eqref", "cite", "citet", "citep", "citeauthor", "citeyear", "bibliography",
             "bibliographystyle", "input", "url", "includegraphics", "begin", "end")
# Names of things that contain digits and are not numbers.
NAMES = ("x86-64", "x87", "em64t", "p99", "p50", "Debian~12")


def strip_comments(text: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in text.split("\n"))


def braced(text: str, start: int) -> int:
    """The index just past the brace group that opens at text[start] ('{')."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def blank_names(text: str) -> str:
    """Blanks the arguments of NAME_ARGS commands (and their [options]) and the width of
    \\resultfigure and \\resultfigurewide, keeping every newline so that line numbers stay right."""
    out = list(text)
    pattern = re.compile(r"\\(" + "|".join(NAME_ARGS) + r")\*?(\[[^\]]*\])*\{")
    for m in pattern.finditer(text):
        end = braced(text, m.end() - 1)
        for i in range(m.start(), end):
            if out[i] != "\n":
                out[i] = " "
    for m in re.finditer(r"\\resultfigure(wide)?\{", text):  # its fourth argument is a width
        i = m.end() - 1
        for _ in range(3):
            i = braced(text, i)
        end = braced(text, i)
        for j in range(i, end):
            out[j] = " "
    return "".join(out)


def body(text: str) -> tuple[str, int]:
    start = text.index("\\begin{document}")
    return text[start:], text[:start].count("\n")


def defined(path: Path) -> dict[str, str]:
    """\\newcommand{\\name}{value}  % comment -> {name: the whole line}"""
    lines = {}
    for line in path.read_text().split("\n"):
        m = re.match(r"\\newcommand\{\\([A-Za-z]+)\}", line)
        if m:
            lines[m.group(1)] = line
    return lines


def bib_keys(path: Path) -> list[str]:
    return re.findall(r"^@[A-Za-z]+\{([^,\s]+),", path.read_text(), re.M)


def main() -> int:
    args = sys.argv[1:]
    numbers = None
    if args[:1] == ["--numbers"]:
        if len(args) < 2:
            print("usage: scripts/check/paper_check.py [--numbers NUMBERS_TEX] [PAPER_DIR]", file=sys.stderr)
            return 2
        numbers, args = Path(args[1]), args[2:]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print("usage: scripts/check/paper_check.py [--numbers NUMBERS_TEX] [PAPER_DIR]", file=sys.stderr)
        return 2
    paper = Path(args[0]) if args else ROOT / "paper"
    files = {name: paper / name for name in ("paper.tex", "references.bib", "constants.tex", "published.tex")}
    numbers = numbers or paper / "generated" / "numbers.tex"
    for path in (*files.values(), numbers):
        if not path.is_file():
            print(f"paper_check.py: {path}: no such file", file=sys.stderr)
            return 2
    problems = []
    raw = files["paper.tex"].read_text()
    text = strip_comments(raw)

    # 1. no digit outside macros and names
    doc, offset = body(text)
    doc = re.sub(r"\\begin\{verbatim\}.*?\\end\{verbatim\}", lambda m: "\n" * m.group(0).count("\n"), doc, flags=re.S)
    doc = blank_names(doc)
    doc = MACRO.sub("", doc)
    for name in NAMES:
        doc = doc.replace(name, "")
    for n, line in enumerate(doc.split("\n"), offset + 1):
        for m in re.finditer(r"[0-9][0-9.,]*", line):
            problems.append(f"paper.tex:{n}: the number {m.group(0)!r} is typed, not a macro: "
                            f"{raw.split(chr(10))[n - 1].strip()[:100]}")

    # 2. citations
    keys = bib_keys(files["references.bib"])
    for k in {k for k in keys if keys.count(k) > 1}:
        problems.append(f"references.bib: the key {k} is used by more than one entry")
    cited = set()
    for m in re.finditer(r"\\cite[a-z]*\*?(?:\[[^\]]*\])*\{([^}]*)\}", text):
        for k in (k.strip() for k in m.group(1).split(",")):
            cited.add(k)
            if k not in keys:
                line = text[:m.start()].count("\n") + 1
                problems.append(f"paper.tex:{line}: \\cite key {k} is not in references.bib")

    # 3. constants against the source
    constants = defined(files["constants.tex"])
    for name, line in constants.items():
        value = re.match(r"\\newcommand\{\\[A-Za-z]+\}\{([^}]*)\}", line).group(1)
        m = re.search(r"%\s*(\S+)\s*\|\s*(.+?)\s*$", line)
        if not m:
            problems.append(f"constants.tex: \\{name} names no source (% FILE | TEXT with @ for the value)")
            continue
        source, expected = ROOT / m.group(1), m.group(2).replace("@", value)
        if not source.is_file():
            problems.append(f"constants.tex: \\{name}: {m.group(1)} does not exist")
        elif expected not in source.read_text():
            problems.append(f"constants.tex: \\{name} = {value}, but {m.group(1)} does not say '{expected}'")

    # 4. published numbers name their source
    published = defined(files["published.tex"])
    for name, line in published.items():
        m = re.search(r"%\s*key:\s*([^\s|]+)", line)
        if not m:
            problems.append(f"published.tex: \\{name} names no BibTeX key (% key: KEY | where)")
        elif m.group(1) not in keys:
            problems.append(f"published.tex: \\{name}'s source {m.group(1)} is not in references.bib")
        elif m.group(1) not in cited and re.search(r"\\" + name + r"(?![A-Za-z])", text):
            problems.append(f"published.tex: \\{name} is quoted but its source {m.group(1)} is never cited")

    # 5. and 6. every macro the paper uses is defined where it should be
    results = defined(numbers)
    tables_tex = numbers.parent / "tables.tex"
    tables = tables_tex.read_text() if tables_tex.is_file() else ""
    for name in sorted(set(re.findall(r"\\((?:num|const|pub|table)[A-Za-z]+)", text))):
        where = {"num": (results, numbers.name), "const": (constants, "constants.tex"),
                 "pub": (published, "published.tex")}.get(re.match(r"[a-z]+", name).group(0))
        if where and name not in where[0]:
            problems.append(f"paper.tex uses \\{name}, which {where[1]} does not define")
        if name.startswith("table") and f"newcommand{{\\{name}}}" not in tables:
            problems.append(f"paper.tex uses \\{name}, which {tables_tex} does not define")

    # 7. the findings and the claims (paper/claims.toml): every \claim names a claim, and a
    # paragraph that states a finding (a number some claim rests on, or any verdict or count of
    # differences) cites a claim that rests on it, so the text and the check cannot drift apart
    claims_path = paper / "claims.toml"
    claims = {}
    if not claims_path.is_file():
        problems.append(f"{claims_path}: no such file (the catalogue of the paper's claims)")
    else:
        try:
            claims = {c["id"]: set(c.get("numbers", [])) for c in tomllib.loads(claims_path.read_text()).get("claim", [])}
        except (tomllib.TOMLDecodeError, KeyError) as e:
            problems.append(f"{claims_path}: does not parse: {e}")
    resting = set().union(*claims.values()) if claims else set()
    finding = re.compile(r"(Verdict|Faster|Slower|Differ)(?=[A-Z]|$)")
    for match in re.finditer(r"(?:[^\n]|\n(?!\s*\n))+", text):  # paragraphs: text between blank lines
        para = match.group(0)
        line = text.count("\n", 0, match.start()) + 1 + len(para) - len(para.lstrip("\n"))
        cites = re.findall(r"\\claim\{([^}]*)\}", para)
        for cid in cites:
            if cid not in claims:
                problems.append(f"paper.tex:{line}: \\claim{{{cid}}} is not a claim of {claims_path.name}")
        backing = set().union(*(claims.get(c, set()) for c in cites)) if cites else set()
        for macro in sorted(set(re.findall(r"\\num([A-Za-z]+)", para))):
            base = re.sub(r"(CI|Verdict)$", "", macro)
            name = base if base in resting else macro
            if name not in resting and not finding.search(macro):
                continue  # a setting or a description, not a finding
            if name not in resting:
                problems.append(f"paper.tex:{line}: states a finding (\\num{macro}) that no claim of "
                                f"{claims_path.name} rests on")
            elif name not in backing:
                owners = sorted(c for c, ns in claims.items() if name in ns)
                problems.append(f"paper.tex:{line}: states a finding (\\num{macro}) without citing its claim "
                                f"(\\claim{{{owners[0]}}})")

    for p in problems:
        print(f"paper_check.py: {p}")
    if problems:
        return 1
    print(f"paper_check.py: {files['paper.tex']}: no typed number; {len(cited)} cited keys all in references.bib; "
          f"{len(constants)} constants match the source; {len(published)} published numbers name their source")
    return 0


if __name__ == "__main__":
    sys.exit(main())
