"""The rule of the results archive: what stays in ``results/published/``, and the history of what left it.

``results/published/`` keeps, per (experiment, target, data), the newest published run: the one the book cites.
An experiment whose pages read more than its newest run declares how many it keeps and why (``POLICY``). A run
the rule retires leaves the tree at the next ``invoke publish`` (or ``invoke prune``); it stays in git history,
and ``results/history/<experiment>/`` keeps its manifest (commit, fingerprint, timings, its measured sections)
and one row in ``index.csv`` (its headline values, and the commit at which its files were last in the tree, to
restore them: ``git checkout <commit> -- <path>``). ``invoke book --history EXPERIMENT`` lists it. A stability
day's run on a switch is retired by a newer run of ``<day>_switch`` on that switch (``moved_to``). The published
tree has a budget (``BUDGET_BYTES``), which a test checks.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from chimera import paths
from chimera.errors import ResultsError
from chimera.formats.rundir import Manifest

log = logging.getLogger(__name__)
PUBLISHED = paths.ROOT / "results" / "published"
HISTORY = paths.ROOT / "results" / "history"
#: the most ``results/published/`` may hold (bytes); tests/test_archive.py checks it
#: 20 MiB since the sweeps over held-out seeds (issue 53): the ledger judges Tables 1, 3 and 4 on them, and a
#: sweep's manifest records every task's outcome (180 for the hyper_dim grid); 15 MiB held single-seed runs
BUDGET_BYTES = 20 * 2**20


@dataclass(frozen=True)
class Keep:
    """How many of the newest runs of each (experiment, target, data) stay (None: all), and why; ``target``: the
    target as the rule keys it, where two names measure the same thing (default: the run's own name)."""
    newest: int | None
    why: str
    target: Callable[[str], str] | None = None
    #: one key per Python (major.minor) the run ran on: a record of the suite on 3.12 does not retire 3.11's
    per_python: bool = False


def kernel_release(label: str) -> str:
    """A kernel's label without its build (``k6.18.44-fc-v782`` -> ``k6.18.44``, ``k6.1.0-56-amd64`` -> ``k6.1.0``):
    a rebuild of the same release, or a distribution's newer build of it, is the same column."""
    m = re.match(r"k\d+\.\d+(\.\d+)?", label)
    return m.group(0) if m else label


#: how many records of one code on one host a time goal is judged by (the median of three: the guide's rule); the
#: archive keeps that many of each experiment whose time goal a page judges
MEDIAN_OF = 3

DEFAULT = Keep(1, "the book cites the newest run of each experiment, target and data")
#: experiments whose pages read more than their newest run; every entry says which page reads what
POLICY: dict[str, Keep] = {
    "ablation": Keep(2, "the ablation block compares the † rows with a run made from the same code"),
    "latency": Keep(2, "two interleaved runs on one machine show whether the timing verdicts reproduce"),
    "fresh-check": Keep(MEDIAN_OF, "set-up and suite times are read as the median of the newest three on one host"),
    "bench-scale": Keep(MEDIAN_OF, "the scale goal is judged by the median time of the newest three of one code "
                                   "on one host"),
    "mutate": Keep(None, "the mutation block counts every mutant the published runs drew (a few KB each)"),
    "fuzz": Keep(None, "the fuzz block cites the longest run beside the newest (a few KB each)"),
    "bench-fidelity": Keep(None, "a run made for some kinds of data leaves the others to an older run, and the "
                                 "fidelity history block shows every run (CSV only, under 100 KB each)"),
    "bench-toolchain": Keep(None, "one run per p4c/BMv2 pair: the version matrix shows every pair"),
    "bench-bmv2files": Keep(None, "the BMv2 rate history block shows every run (a few KB each)"),
    "bench-zeroloss": Keep(None, "the BMv2 rate history block shows every run (a few KB each)"),
    "bench-bmv2ratio": Keep(None, "the BMv2 rate history block shows every run (a few KB each)"),
    "bench-suite": Keep(1, "the suite block states the newest record on each supported Python", per_python=True),
    "bench-verifier": Keep(1, "the kernel matrix has one column per kernel release: this machine's kernel rebuilt "
                              "(6.18.44-fc-v657 after -v782), or Debian's next build of 6.1, replaces its column",
                           target=kernel_release),
}


def policy(experiment: str) -> Keep:
    return POLICY.get(experiment, DEFAULT)


@dataclass(frozen=True)
class Published:
    """One published run as the archive sees it."""
    path: Path
    manifest: Manifest

    @property
    def key(self) -> tuple[str, str, str]:
        return key_of(self.manifest)


def key_of(m: Manifest) -> tuple[str, str, str]:
    """(experiment, target, data): what the archive keeps the newest run of, and what the book cites per."""
    return m.experiment, target_of(m), data_of(m)


def target_of(m: Manifest) -> str:
    """The target a run measured, as the archive keys it (its experiment's ``Keep.target`` where it has one). A
    sweep left on its experiment's own target names its folder ``default``; its tasks record the target they ran
    on, so a sweep of the same experiment and data asked for that target by name is the same measurement (the
    newer retires the older)."""
    rule = policy(m.experiment)
    if rule.per_python:
        return f"{rule.target(m.target) if rule.target else m.target} (Python {python_of(m)})"
    if rule.target is not None:
        return rule.target(m.target)
    sweep = m.sections.get("sweep")
    if m.target != "default" or not isinstance(sweep, dict):
        return m.target
    ran = {str(t.get("manifest", {}).get("target")) for t in sweep.get("tasks", []) if isinstance(t, dict)}
    return ran.pop() if len(ran) == 1 and "None" not in ran else m.target


def python_of(m: Manifest) -> str:
    """The Python (major.minor) a run ran on, from its manifest's environment ("?" where it recorded none)."""
    full = str(m.environment.get("python") or "?")
    return ".".join(full.split(".")[:2])


def data_of(m: Manifest) -> str:
    """What data a run measured, as the archive and the book key runs by: the dataset it was given in place of
    its experiment's (its folder's name), the datasets a sweep was given (their names, sorted), or "" for the
    experiment's own. Two sweeps of one experiment over different data are two keys: neither retires the other."""
    if m.dataset_override:
        return Path(m.dataset_override).name
    sweep = m.sections.get("sweep")
    datasets = sweep.get("datasets") if isinstance(sweep, dict) else None
    return ",".join(sorted(Path(str(d)).name for d in datasets)) if datasets else ""


#: an experiment whose runs on a switch moved to another experiment: ``<day>_switch`` replays a stability day on a
#: switch with one seed and is checked row for row against the day's reference run (docs/controlplane.md, "The days
#: on a switch"); a newer run there, on the same target and data, retires the day's own run on that target
SWITCH_SUFFIX = "_switch"


def is_testbed(target: str) -> bool | None:
    """Whether a target is a switch in the Mininet topology (its TESTBED capability, never its name); None for a
    name that is no registered target (a bench's "local", a fresh-check's "chroot")."""
    from chimera.targets.base import Capability
    from chimera.targets.registry import TARGETS, target_class
    return target_class(target).can(Capability.TESTBED) if target in TARGETS else None


def moved_to(r: Published, runs: list[Published]) -> Published | None:
    """The newer run of ``<experiment>_switch`` on ``r``'s target and data that took ``r``'s place, if any (only
    for a run on a switch: the day's intervals come from its run on the reference)."""
    exp, target, data = r.key
    if not is_testbed(target) or exp.endswith(SWITCH_SUFFIX):
        return None
    newer = [x for x in runs if x.key == (exp + SWITCH_SUFFIX, target, data) and x.manifest.run_id > r.manifest.run_id]
    return max(newer, key=lambda x: x.manifest.run_id) if newer else None


def published_runs(published: Path = PUBLISHED) -> list[Published]:
    out = []
    for mf in sorted(published.glob("*/*/manifest.json")):
        out.append(Published(mf.parent, Manifest.read(mf)))
    return out


def plan(published: Path = PUBLISHED) -> list[Published]:
    """The runs the rule retires: beyond the newest ``policy(experiment).newest`` of each key (run ids sort by
    time: they start with it)."""
    by: dict[tuple[str, str, str], list[Published]] = {}
    every = published_runs(published)
    for r in every:
        by.setdefault(r.key, []).append(r)
    out = []
    for key, runs in sorted(by.items()):
        keep = policy(key[0]).newest
        if keep is None:
            continue
        out += sorted(runs, key=lambda r: r.manifest.run_id, reverse=True)[keep:]
    return out + [r for r in every if r not in out and moved_to(r, every) is not None]


def tree_bytes(published: Path = PUBLISHED) -> int:
    return sum(p.stat().st_size for p in published.rglob("*") if p.is_file())


def _head(root: Path) -> str | None:
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return r.stdout.strip() or None if r.returncode == 0 else None


def headline(run: Path) -> dict[str, Any]:  # CSV out: a row of an experiment's history
    """A run's headline values for the history: each table's declared metrics, averaged over its rows (a table
    whose schema is not known here contributes its numeric columns named ``f1``, ``macro_f1`` or ``auc``)."""
    out: dict[str, Any] = {}  # CSV out: a row of an experiment's history
    for p in sorted([*run.glob("*.csv"), *run.glob("*.csv.gz")]):   # a large table is published gzipped
        try:
            df = pd.read_csv(p)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        stem = p.name.removesuffix(".gz").removesuffix(".csv")
        for col in ("f1", "macro_f1", "auc", "switch_p50_us", "host_p50_us", "delivered_pps", "estimate"):
            if col in df and pd.api.types.is_numeric_dtype(df[col]) and df[col].notna().any():
                out[f"{stem}:{col}"] = float(df[col].mean())
    return out


# dict[str, Any]: CSV out: a row of the archive index
def index_row(r: Published, in_tree_at: str | None, root: Path) -> dict[str, Any]:
    m = r.manifest
    return {"run_id": m.run_id, "experiment": m.experiment, "target": m.target, "data": r.key[2],
            "commit": m.git.commit, "code_fingerprint": m.code_fingerprint, "status": m.status,
            "started": m.started, "finished": m.finished,
            "path": r.path.relative_to(root).as_posix() if r.path.is_relative_to(root) else str(r.path),
            "in_tree_at": in_tree_at, **headline(r.path)}


def retire(runs: list[Published], history: Path = HISTORY, root: Path = paths.ROOT) -> list[Path]:
    """Move each run out of the tree: its manifest into ``history/<experiment>/``, a row into that folder's
    ``index.csv``, its files removed (git history keeps them; the row says at which commit)."""
    head = _head(root)
    done = []
    for r in runs:
        d = history / r.manifest.experiment
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy2(r.path / "manifest.json", d / f"{r.manifest.run_id}.json")
        idx = d / "index.csv"
        old = pd.read_csv(idx, dtype=str) if idx.is_file() else pd.DataFrame()
        row = pd.DataFrame([index_row(r, head, root)])
        new = pd.concat([old, row], ignore_index=True) if len(old) else row
        new.drop_duplicates("run_id", keep="last").to_csv(idx, index=False)
        shutil.rmtree(r.path)
        done.append(r.path)
        log.info("archive: retired %s (history: %s)", r.path.relative_to(root) if r.path.is_relative_to(root)
                 else r.path, idx.relative_to(root) if idx.is_relative_to(root) else idx)
    return done


def prune(published: Path = PUBLISHED, history: Path = HISTORY, root: Path = paths.ROOT) -> list[Path]:
    """Apply the rule: retire what it retires, then check the budget (an error naming the largest experiments
    where the tree is still over it: nothing is removed beyond the rule)."""
    out = retire(plan(published), history, root)
    size = tree_bytes(published)
    if size > BUDGET_BYTES:
        sizes = sorted(((sum(p.stat().st_size for p in d.rglob("*") if p.is_file()), d.name)
                        for d in published.iterdir() if d.is_dir()), reverse=True)[:5]
        raise ResultsError(f"results/published is {size / 2**20:.1f} MiB after the archive rule, over its budget of "
                           f"{BUDGET_BYTES / 2**20:.0f} MiB; largest: " +
                           ", ".join(f"{n} {s / 2**20:.1f} MiB" for s, n in sizes),
                           "keep fewer runs of those (chimera/report/archive.py POLICY) or make their files lighter")
    return out


def history_table(experiment: str, history: Path = HISTORY) -> pd.DataFrame:
    """The retired runs of ``experiment``, oldest first (empty where none)."""
    idx = history / experiment / "index.csv"
    return pd.read_csv(idx, dtype=str).fillna("").sort_values("run_id") if idx.is_file() else pd.DataFrame()


def restore_hint(row: dict[str, Any]) -> str:  # CSV in: a row of the archive index
    return f"git checkout {str(row.get('in_tree_at') or '')[:10]} -- {row.get('path')}"
