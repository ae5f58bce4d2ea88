"""What a book block renders from, and the registry type its owner fills.

A block renders one stretch of README.md or docs/*.md from runs. It selects its runs by what they are
(``RunSet.latest``), so a newer published run replaces an older one everywhere at once; it reports the newest
run, never the best one; every number it writes is computed from the run's tables or manifest and rounded by
``chimera.report.fmt``; every run it reads is cited, with the stale mark where its code has moved on.
Interpretation that depends on the numbers (who wins, where the peak is) is computed too, so it cannot go stale.

The blocks live with what they render: a kind's in ``chimera/experiments/kinds/<kind>/blocks.py``, the
benches' in ``chimera/bench/blocks.py``, the book's own in ``chimera/book``; each module fills its own
``Blocks`` and ``chimera.book.render`` gathers them (no registration by import side effect). A ``blocks.py`` is
presentation (``chimera.report.provenance.PRESENTATION_FILES``): no run imports it, so editing it stales no run.
This module sits below the experiments floor so that every owner can import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chimera.report.provenance import ROOT
from chimera.report.runs import Run, RunSet
from chimera.report.sections import NightMeasured, section


@dataclass
class Book:
    """What blocks render from: a run set (the published runs, or a reproduction's) and the repository."""
    runs: RunSet
    root: Path = ROOT

    def night(self) -> tuple[Run, NightMeasured]:
        r = self.runs.need("nightly")
        m = section(r.manifest, "measured", NightMeasured)
        assert m is not None, f"{r.rel}: a night without its measured section"
        return r, m


BlockFn = Callable[[Book], str]


class Blocks(dict[str, BlockFn]):
    """One owner's blocks by name; ``@BLOCKS("name")`` adds one."""

    def __call__(self, name: str) -> Callable[[BlockFn], BlockFn]:
        def add(fn: BlockFn) -> BlockFn:
            if name in self:
                raise ValueError(f"book block {name!r} is defined twice in {fn.__module__}")
            self[name] = fn
            return fn
        return add


#: the row label of the full design in the ablation and Table 1 tables
CHIMERA = "Chimera (PRF, hybrid, incremental, cascade)"
#: the real captures the book reads (a fragment of the dataset directory -> the label a page prints)
REAL = {"ciciot2022-sonos": "CICIoT2022 sample (real)", "suricata-zeek-apps": "suricata-zeek-apps (real)"}


def paragraph(doc: str | None, i: int = 0) -> str:
    """Paragraph ``i`` of a docstring, on one line (the page quotes the code's own words)."""
    paras = [" ".join(x.split()) for x in (doc or "").split("\n\n") if x.strip()]
    return paras[i] if i < len(paras) else ""
