"""Render a run's report.md and figures from its directory (the one entry point: runner and `invoke report`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

from chimera.errors import ResultsError
from chimera.report import cadence, latency, stability, throughput, variants, yardsticks
from chimera.report.run import RunView

log = logging.getLogger(__name__)

RENDERERS: dict[str, Callable[[RunView], list[str]]] = {
    "variants": variants.render,
    "stability": stability.render,
    "cadence": cadence.render,
    "accuracy": yardsticks.render_accuracy,
    "resources": yardsticks.render_resources,
    "input_scale": yardsticks.render_input_scale,
    "hyper_dim": yardsticks.render_hyper_dim,
    "roc": yardsticks.render_roc,
    "latency": latency.render,
    "throughput": throughput.render,
}


def render(path: str | Path, allow_unfinished: bool = False) -> Path:
    """Write ``report.md`` (and the figures it shows) for the run at ``path``; returns the report's path.

    The runner calls this on its own run before marking it complete (``allow_unfinished``); ``invoke report``
    calls it on finished runs only.
    """
    run = RunView.open(path, allow_unfinished=allow_unfinished)
    fn = RENDERERS.get(run.kind)
    if fn is None:
        raise ResultsError(f"{run.path}: no report for experiment kind {run.kind!r}",
                           f"known kinds: {', '.join(sorted(RENDERERS))}")
    lines = fn(run)
    out = run.path / "report.md"
    tmp = out.with_name("report.md.tmp")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, out)
    return out
