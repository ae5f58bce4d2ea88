"""Render a run's report.md and figures from its directory (the one entry point: the runner and `invoke report`);
the kind's record says which renderer."""

from __future__ import annotations

import os
from pathlib import Path

from chimera.errors import ResultsError
from chimera.experiments.kinds import KINDS
from chimera.report.run import RunView


def render(path: str | Path, allow_unfinished: bool = False) -> Path:
    """Write ``report.md`` (and the figures it shows) for the run at ``path``; returns the report's path.

    The runner calls this on its own run before marking it complete (``allow_unfinished``); ``invoke report``
    calls it on finished runs only.
    """
    run = RunView.open(path, allow_unfinished=allow_unfinished)
    kind = KINDS.get(run.kind)
    if kind is None:
        raise ResultsError(f"{run.path}: no report for experiment kind {run.kind!r}",
                           f"known kinds: {', '.join(sorted(KINDS))}")
    lines = kind.render(run)
    out = run.path / "report.md"
    tmp = out.with_name("report.md.tmp")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, out)
    return out
