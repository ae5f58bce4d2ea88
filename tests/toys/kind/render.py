"""The toy kind's report."""

from __future__ import annotations

from chimera.experiments.kinds.toy import tables as T
from chimera.experiments.kinds.toy.config import ToySection
from chimera.report.common import first_line, table
from chimera.report.run import RunView


def render(run: RunView) -> list[str]:
    sec = run.manifest.get("toy", ToySection)
    return [first_line(run), "", "# toy", "", f"classes seen: {sec.classes_seen if sec else '?'}", "",
            table(run.table(T.COUNTS), T.COUNTS), ""]
