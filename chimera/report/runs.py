"""The runs a book is rendered from: every run directory under one root, read through ``RunView``, with each
run's freshness against the code of the working tree.

A book cites runs it *selects* by what they are (the newest published run of an experiment on a target, on a
dataset), never by a hand-typed id, so republishing moves every number at once; and it reports the newest,
not the best. A run is fresh when the fingerprint of its own code (chimera.report.provenance: what its kind or
bench and its targets import) at its commit equals the working tree's; a stale run is still shown, marked, with
the commits that changed its code since. Where a run's code starts is read from the registries of kinds,
benches and targets, which sit above this floor: the book passes that reading in (``ScopeFn``,
``chimera.book.scope.scope_of``), so the residents' renderers can select runs without importing the book.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from chimera.errors import ResultsError
from chimera.formats.rundir import Manifest
from chimera.formats.tables import TableSchema
from chimera.report.archive import is_testbed, key_of
from chimera.report.provenance import ROOT, Scope, TreeCode, changed_since, fingerprint_at
from chimera.report.publish import check_seal, table_file
from chimera.report.run import RunView

PUBLISHED = ROOT / "results" / "published"
#: where a run's code starts, from its manifest and those of the runs nested in it
ScopeFn = Callable[[Manifest, Iterable[Manifest]], Scope]


@dataclass(frozen=True)
class Freshness:
    """Whether a run's numbers come from the code of the working tree; if not, which commits changed it."""
    fresh: bool
    commit: str
    since: tuple[str, ...] = ()

    def mark(self) -> str:
        """The visible stale mark ("" for a fresh run)."""
        if self.fresh:
            return ""
        return f" **[stale: made at {self.commit[:7]}; {changed_since(self.since)}]**"



class WorkingTree:
    """The code a book is rendered against, read once: a book is rendered at one moment, and reading the whole
    tree again for each run it looks at cost a night's book most of its time."""

    def __init__(self, root: Path, scope_of: ScopeFn) -> None:
        self.root = root
        self.scope_of = scope_of
        self._of: dict[tuple[str, Scope], Freshness] = {}

    @functools.cached_property
    def code(self) -> TreeCode:
        return TreeCode(self.root)

    def freshness(self, commit: str, scope: Scope) -> Freshness:
        """A committed run's freshness: its code at its commit against the working tree's (found once per
        commit and scope: runs of one commit and code share it)."""
        key = (commit, scope)
        if key not in self._of:
            fresh = fingerprint_at(commit, self.root, scope) == self.code.fingerprint(scope)
            self._of[key] = Freshness(True, commit) if fresh else \
                Freshness(False, commit, tuple(self.code.code_commits(commit, scope)))
        return self._of[key]


@dataclass
class Run:
    """One run directory of a run set: its view (manifest, config, tables) and where it is cited from."""
    view: RunView
    rel: str                 # the path a reader opens, relative to the repository root
    root: Path
    tree: WorkingTree  # its set's, shared by every run the set reads

    @property
    def manifest(self) -> Manifest:
        return self.view.manifest

    @property
    def experiment(self) -> str:
        return self.manifest.experiment

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def target(self) -> str:
        return self.manifest.target

    @property
    def path(self) -> Path:
        return self.view.path

    @functools.cached_property
    def scope(self) -> Scope:
        """Where its code starts: its kind or bench and its targets, with those of the runs nested in it."""
        return self.tree.scope_of(self.manifest, (n.manifest for n in self.nested()))

    @functools.cached_property
    def freshness(self) -> Freshness:
        commit = self.manifest.git.commit
        if commit is None or self.manifest.git.dirty:
            return Freshness(False, commit or "unknown")
        return self.tree.freshness(commit, self.scope)

    def cite(self, sub: str = "") -> str:
        """`results/published/<experiment>/<run-id>[/sub]`, with the stale mark where the run is stale."""
        return f"`{self.rel}{'/' + sub if sub else ''}`" + self.freshness.mark()

    def table(self, schema: TableSchema) -> pd.DataFrame:
        return self.view.table(schema)

    def has_csv(self, name: str) -> bool:
        """Whether the run holds the table ``name`` (as written, or gzipped by publish)."""
        return table_file(self.path, name) is not None

    def csv(self, name: str) -> pd.DataFrame:
        """A table without a schema of its own (a bench's), read plainly (gzipped where publish gzipped it)."""
        p = table_file(self.path, name)
        if p is None:
            raise ResultsError(f"{self.rel}: {name} is missing", "publish the complete run again")
        return pd.read_csv(p)

    def minutes(self) -> float:
        """Wall time from the manifest's start and end. A run that resumed a stopped one (``resumed_from``) ran
        only its unfinished units between those two: its time is then its stages' seconds (``timings_s``, which
        hold the taken units' own), where they are more."""
        import datetime as dt
        m = self.manifest
        if not m.finished:
            return float("nan")
        a, b = (dt.datetime.fromisoformat(x) for x in (m.started, m.finished))
        wall = (b - a).total_seconds() / 60
        return max(wall, sum(m.timings_s.values()) / 60) if m.resumed_from else wall

    @functools.cached_property
    def _nested(self) -> tuple["Run", ...]:
        return tuple(Run(RunView.open(m.parent), f"{self.rel}/{m.parent.relative_to(self.path).as_posix()}", self.root,
                         self.tree) for m in sorted((self.path / "runs").glob("*/*/manifest.json")))

    def nested(self) -> list["Run"]:
        """The runs a night (or a bench) made, under its ``runs/`` (read once: each keeps its freshness)."""
        return list(self._nested)


def night_overrides(night: Run) -> frozenset[str]:
    """The experiments a night ran with its suite's overrides (results/baseline/nightly.yaml, ``overrides``): their
    nested runs check the code's bits, at a night's size, and stand for no published measurement."""
    suite = night.manifest.sections.get("nightly", {}).get("suite", {})
    return frozenset((suite.get("overrides") or {}) if isinstance(suite, dict) else ())


@dataclass
class RunSet:
    """Every complete run under ``base`` (``results/published`` or a reproduction's directory)."""
    base: Path = PUBLISHED
    root: Path = ROOT
    _runs: list[Run] = field(default_factory=list, repr=False)
    #: where each run's code starts (``chimera.book.scope.scope_of``: the registries' reading)
    scope_of: ScopeFn = field(repr=False, kw_only=True)
    tree: WorkingTree = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.tree = WorkingTree(self.root, self.scope_of)
        if not self._runs:
            for m in sorted(self.base.glob("*/*/manifest.json")):
                self._add(m.parent)

    def _add(self, d: Path) -> None:
        """Add the run directory ``d`` if it is complete, cited by its path from the repository root."""
        view = RunView.open(d, allow_unfinished=True)
        if view.manifest.status != "complete":
            return
        check_seal(d, view.manifest)
        try:
            rel = d.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            rel = d.as_posix()
        self._runs.append(Run(view, rel, self.root, self.tree))

    def with_runs(self, dirs: list[Path]) -> "RunSet":
        """This set plus the complete run directories ``dirs`` (a night and the runs it made): a book rendered
        from it cites tonight's runs where they are the newest of their experiment."""
        out = RunSet(self.base, self.root, list(self._runs), scope_of=self.scope_of)
        out.tree = self.tree   # one freshness cache for the published runs and tonight's
        for d in dirs:
            out._add(d)
        return out

    def newest_each(self) -> list[Run]:
        """The newest run of each experiment, target and dataset: the runs a book selects, sorted by that key."""
        seen: dict[tuple[str, str, str], Run] = {}
        for r in self._runs:
            key = key_of(r.manifest)
            if key not in seen or r.run_id > seen[key].run_id:
                seen[key] = r
        return [seen[k] for k in sorted(seen)]

    def __iter__(self) -> Iterator[Run]:
        return iter(self._runs)

    def all(self, experiment: str, where: Callable[[Run], bool] = lambda r: True) -> list[Run]:
        """The runs of an experiment that satisfy ``where``, oldest first (run ids start with the time)."""
        return sorted((r for r in self._runs if r.experiment == experiment and where(r)),
                      key=lambda r: r.run_id)

    def latest(self, experiment: str, where: Callable[[Run], bool] = lambda r: True) -> Run | None:
        runs = self.all(experiment, where)
        return runs[-1] if runs else None

    def freshest(self, experiment: str, where: Callable[[Run], bool] = lambda r: True) -> Run | None:
        """The newest run of an experiment whose code is the working tree's, looking also inside the published
        nights (their ``runs/``); the newest stale one where no run is fresh. A block that must say what the
        current code measures reads this, not ``latest``."""
        cands = [r for r in self._runs if r.experiment == experiment and where(r)]
        for night in self.all("nightly"):
            if experiment in night_overrides(night):
                continue   # the night ran it at another size (a night-sized grid): not the experiment's measurement
            cands += [r for r in night.nested() if r.experiment == experiment and where(r)]
        if not cands:
            return None
        return max(cands, key=lambda r: (r.freshness.fresh, r.run_id))

    def need(self, experiment: str, where: Callable[[Run], bool] = lambda r: True, what: str = "") -> Run:
        r = self.latest(experiment, where)
        if r is None:
            raise ResultsError(f"no published run of {experiment}{' (' + what + ')' if what else ''} under {self.base}",
                               "run it and `invoke publish` the run (or `invoke reproduce` for this machine)")
        return r


def on_target(target: str) -> Callable[[Run], bool]:
    return lambda r: r.target == target


def on_dataset(fragment: str | None) -> Callable[[Run], bool]:
    """Runs on the experiment's own datasets (None) or on a dataset directory whose name contains ``fragment``."""
    if fragment is None:
        return lambda r: not r.manifest.dataset_override
    return lambda r: fragment in (r.manifest.dataset_override or "")


def on_testbed(r: Run) -> bool:
    """A run made on a switch in the Mininet topology."""
    return bool(is_testbed(r.target))
