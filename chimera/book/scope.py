"""Where a run's code starts (chimera.report.provenance.Scope), read from what its manifest says it was.

An experiment run starts at the runner, its kind's package and the targets it ran on (the manifest's target and
the targets its variants ran on), and names its experiment YAML; a bench starts at its module and the target
its record names; the fuzzer, the mutation run, the night and the reproduction at their own entry modules. A
run that made runs of its own (a night's or a bench's ``runs/``) also depends on what those did. A record of the
test suite (fresh-check, bench-suite), or a run this build does not know, depends on everything. Every name
is read from the registries (kinds, benches, targets), never typed here.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from pathlib import Path

from chimera.bench import BENCHES
from chimera.formats.rundir import Manifest
from chimera.report.book import Book
from chimera.report.provenance import EVERYTHING, ROOT, Scope
from chimera.report.runs import RunSet
from chimera.targets.registry import TARGETS

#: where a run's code starts, for the runs that are neither an experiment kind nor a bench (by experiment name)
ENTRIES: dict[str, Scope] = {
    "fuzz": Scope(("chimera.fuzz.run",)),
    "mutate": Scope(("chimera.fuzz.mutate",)),
    "nightly": Scope(("chimera.nightly.suite",)),
    "reproduce": Scope(("chimera.book.reproduce",)),
    # set-up in a VM, and the runs the guest made (their runs/)
    "vm-boot": Scope(("chimera.provision",), ("scripts/bootstrap", "scripts/vm-boot", "scripts/vm-lib.sh")),
    "vagrant-up": Scope(("chimera.provision",), ("Vagrantfile", "scripts/bootstrap", "scripts/provision-vm",
                                                 "scripts/vagrant-box", "scripts/vagrant-up", "scripts/vm-lib.sh")),
}
#: records whose numbers time the whole project (its test suite): their code is all of it
WHOLE = ("fresh-check", "bench-suite")
#: the module every experiment run starts from
RUNNER = "chimera.experiments.runner"
#: where a sweep's own code starts (its tasks are runs of the swept experiment, from the runner)
SWEEP = "chimera.sweep.driver"
BENCH_PREFIX = "bench-"


@functools.cache
def kind_packages() -> dict[str, str]:
    """Each experiment kind's package, by the kind's name (read from the kinds' registry)."""
    from chimera.experiments.kinds import PACKAGES
    base = "chimera.experiments.kinds"
    return {importlib.import_module(f"{base}.{p}").KIND.name: f"{base}.{p}" for p in PACKAGES}


def target_modules(names: Iterable[str]) -> tuple[str, ...]:
    """The modules of the registered targets among ``names`` (a combined label such as ``reference-ebpf`` is
    split; a name that is no target, such as a bench's ``local``, has none)."""
    out = set()
    for name in names:
        for part in {name, *name.split("-")}:
            entry = TARGETS.get(part)
            if entry is not None:
                out.add(entry.split(":")[0] if isinstance(entry, str) else entry.__module__)
    return tuple(sorted(out))


def scope_of(m: Manifest, nested: Iterable[Manifest] = ()) -> Scope:
    """The scope of the run ``m`` (and of the runs ``nested`` in it)."""
    own = _own(m)
    for n in nested:
        own = own | _own(n)
    return own


def _own(m: Manifest) -> Scope:
    targets = target_modules([m.target, *m.variant_targets.values()])
    if m.experiment in WHOLE:
        return EVERYTHING
    if m.kind in kind_packages():
        return Scope((RUNNER, kind_packages()[m.kind], *targets), (f"experiments/{m.experiment}.yaml",))
    if m.experiment in ENTRIES:
        return ENTRIES[m.experiment] | Scope(targets)
    if m.kind == "sweep":   # a sweep of one experiment: the runner, the sweep, that experiment's kind and YAML
        from chimera.sweep.driver import SweepRecord
        sw = m.get("sweep", SweepRecord)
        kind = _experiment_kind(sw.experiment) if sw is not None else None
        if sw is not None and kind in kind_packages():
            return Scope((RUNNER, SWEEP, kind_packages()[kind], *targets, *target_modules([sw.target])),
                         (f"experiments/{sw.experiment}.yaml",))
    if m.experiment.startswith(BENCH_PREFIX) and m.experiment[len(BENCH_PREFIX):] in BENCHES:
        b = BENCHES[m.experiment[len(BENCH_PREFIX):]]
        return Scope((b.module, *targets, *target_modules([b.target or ""])))
    return EVERYTHING


def _experiment_kind(experiment: str) -> str | None:
    """The kind an experiment of experiments/ declares, or the default kind where it names none, as the loader
    reads it (None: a YAML path from elsewhere, or no such file)."""
    import yaml

    from chimera.experiments.config import ExperimentConfig
    p = ROOT / "experiments" / f"{experiment}.yaml"
    if not p.is_file():
        return None
    kind = (yaml.safe_load(p.read_text()) or {}).get("kind") or ExperimentConfig.model_fields["kind"].default
    return str(kind) if kind else None


def run_scope(run_dir: Path) -> Scope:
    """The scope of the run directory ``run_dir``, with the runs under its ``runs/``."""
    nested = [Manifest.read(p) for p in sorted(run_dir.glob("runs/*/*/manifest.json"))]
    return scope_of(Manifest.read(run_dir / "manifest.json"), nested)


def run_set(base: Path | None = None, root: Path = ROOT) -> RunSet:
    """The complete runs under ``base`` (the published runs by default), each judged fresh or stale by the scope
    read here from the registries."""
    return RunSet(base if base is not None else root / "results" / "published", root, scope_of=scope_of)


def published_book(root: Path = ROOT) -> Book:
    """The book of the published runs: what ``invoke book`` renders the pages from."""
    return Book(run_set(None, root), root)
