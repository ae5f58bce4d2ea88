"""Every benchmark writes a results directory like an experiment: ``results/bench-<name>/<run-id>/``.

It holds manifest.json (git commit, environment, the bench's parameters and its
measured numbers), the bench's tidy CSVs and a short report.md, written through
the same atomic RunDir as experiments, so a README number can name the run it
came from and a crashed bench never leaves something that looks complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chimera import paths
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.registry import environment

ROOT = paths.ROOT


class BenchParams(BaseModel):
    """Section ``params``: what a bench was asked to do (each bench its own options; ``skipped``: the targets it
    could not measure here, and why)."""

    model_config = ConfigDict(extra="allow")
    skipped: dict[str, str] = Field(default_factory=dict)
    baseline: str | None = None          # bmv2files: the revision the shipped chimera.p4 is timed against


class Stat(BaseModel):
    """Median, IQR and count of a bench's repeats (``summary``)."""

    model_config = ConfigDict(extra="allow")
    median: float = float("nan")
    iqr: float = float("nan")
    n: int = 0
    min: float | None = None
    max: float | None = None


class BenchResult(BaseModel):
    """Section ``result``: a bench's measured numbers. Each bench subclasses it with its own fields; a reader
    reads it with the bench's model (older runs may carry more: kept, not refused)."""

    model_config = ConfigDict(extra="allow")


@contextmanager
# dict[str, Any]: JSON out: the bench's parameters in its manifest
def bench_run(name: str, params: dict[str, Any], results_root: str | Path = "results",
              label: str = "local") -> Iterator[RunDir]:
    """A RunDir for bench ``name`` with the common manifest fields filled in; ``label``: the run's target label
    (the archive keeps the newest run per label: a bench whose runs are columns, one per kernel, labels each)."""
    with RunDir(results_root, f"bench-{name}", label) as run:
        run.manifest.record(git=git_state(ROOT), environment=environment())
        run.manifest.put("params", BenchParams.model_validate(json.loads(json.dumps(params, default=str))))
        yield run


def summary(samples: list[float]) -> dict[str, float]:
    """Median, IQR and count of a bench's repeats (what nightly compares and the README quotes)."""
    import numpy as np
    a = np.asarray(samples, float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "iqr": float(q3 - q1), "n": int(a.size), "min": float(a.min()), "max": float(a.max())}
