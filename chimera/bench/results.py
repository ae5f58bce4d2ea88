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

from chimera.formats.rundir import RunDir, environment, git_state

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def bench_run(name: str, params: dict[str, Any], results_root: str | Path = "results") -> Iterator[RunDir]:
    """A RunDir for bench ``name`` with the common manifest fields filled in."""
    with RunDir(results_root, f"bench-{name}", "local") as run:
        run.manifest.record(**{"bench": name, "params": json.loads(json.dumps(params, default=str)),
                             "git": git_state(ROOT), "environment": environment()})
        yield run


def summary(samples: list[float]) -> dict[str, float]:
    """Median, IQR and count of a bench's repeats (what nightly compares and the README quotes)."""
    import numpy as np
    a = np.asarray(samples, float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "iqr": float(q3 - q1), "n": int(a.size), "min": float(a.min()), "max": float(a.max())}
