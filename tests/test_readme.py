"""The README's evidence: every run it cites under results/published/ is there (committed), and each measured
number in a paragraph that cites runs appears in those runs' published files (tables, summaries, manifest).

Measured numbers are decimals, percentages and numbers with thousands separators (0.8968, 97%, 82,398): a
number typed by hand that no run holds fails here. Plain integers (counts of targets, years, ports) are not
checked; neither are paragraphs that cite no published run.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITE = re.compile(r"results/published/[\w.-]+/\d{8}-\d{6}-[\w.-]*\w")
MEASURE = re.compile(r"(?<![\w.-])\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|(?<![\w.,-])\d+\.\d+%?|(?<![\w.,-])\d+%")


def _paragraphs(readme: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", readme) if p.strip()]


def _run_text(root: Path, run: str) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted((root / run).rglob("*")) if p.is_file()
                     ).replace(",", "")


def _percent_in(pct: str, text: str) -> bool:
    """97% is in a run that says 97%, or holds a fraction that rounds to it (0.97..)."""
    v = float(pct[:-1]) / 100
    return any(abs(float(m) - v) <= 0.005 for m in re.findall(r"(?<![\d.])0\.\d+", text))


def unsupported(readme: str, root: Path = ROOT) -> list[str]:
    """The measured numbers of citing paragraphs that none of the cited runs holds."""
    bad = []
    for p in _paragraphs(readme):
        runs = [c for c in CITE.findall(p) if (root / c).is_dir()]
        if not runs:
            continue
        text = "\n".join(_run_text(root, r) for r in runs)
        for tok in MEASURE.findall(CITE.sub("", p)):
            num = tok.replace(",", "")
            if not (num in text or (num.endswith("%") and _percent_in(num, text))):
                bad.append(f"{tok!r} (near {runs[0]})")
    return bad


def test_cited_runs_are_published() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = sorted({c for c in CITE.findall(readme) if not (ROOT / c / "manifest.json").is_file()})
    assert not missing, f"the README cites runs that are not published: {missing} (invoke publish RUN_DIR)"


def test_numbers_next_to_a_citation_are_in_the_cited_runs() -> None:
    bad = unsupported((ROOT / "README.md").read_text())
    assert not bad, "numbers in the README that no cited run holds: " + "; ".join(bad)


def test_the_check_catches_a_typed_number() -> None:
    runs = sorted((ROOT / "results" / "published").glob("*/*/manifest.json"))
    assert runs, "nothing is published yet: the README cites no run"
    held, run = None, ""
    for m in runs:  # a decimal some published run holds
        run = m.parent.relative_to(ROOT).as_posix()
        if (held := re.search(r'": (\d+\.\d+)', m.read_text())) is not None:
            break
    assert held is not None, "no published run holds a decimal to check against"
    assert unsupported(f"It took 123,456.789 s (`{run}`).\n") == [f"'123,456.789' (near {run})"]
    assert unsupported(f"It took {held.group(1)} s (`{run}`).\n") == []
