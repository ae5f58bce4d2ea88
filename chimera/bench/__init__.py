"""Benchmarks (``invoke bench --what ...``): rates and ratios measured in one run, never asserted in tests.

A bench is one record in ``BENCHES``: its name, the module whose ``main(**options)`` runs it, the options it
takes (a model: an option another bench takes is refused with the benches that do take it), the target it
needs, and what a night tracks of it. ``invoke bench``, the nightly suite and its config all read the record;
a new bench is its module and one line here.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError

from chimera.errors import ConfigError

log = logging.getLogger(__name__)


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IngestOptions(NoOptions):
    pcap: Path | None = None          # a capture of yours instead of the generated one


class FidelityOptions(NoOptions):
    seeds: tuple[int, ...] | None = None
    only: tuple[str, ...] | None = None


class ScaleOptions(NoOptions):
    sizes: tuple[int, ...] | None = None   # packets per dataset (default 10^5, 10^6, 10^7)


class ShardsOptions(NoOptions):
    shards: tuple[int, ...] | None = None    # the numbers of testbeds to hash the packets over (default 1, 2)
    targets: tuple[str, ...] | None = None   # the testbeds to run (default every one the benches hold to goals)


class ToolchainOptions(NoOptions):
    p4c: Path | None = None           # the bin directory of the p4c build to check (default: the one on PATH)
    switch: Path | None = None        # the bin directory of the BMv2 build to check (default: the one on PATH)


class VerifierOptions(NoOptions):
    experiment: str | None = None     # the experiment whose variants' programs are loaded (default: ablation)
    export: Path | None = None        # write the objects for a VM to load instead (scripts/vm-boot --only verifier)
    guest: Path | None = None         # the record of a VM's loads, from the folder its guest wrote


class Bmv2FilesOptions(NoOptions):
    baseline: str | None = None       # the git revision whose chimera.p4 the shipped one is timed against


class NightStat(TypedDict, total=False):
    """What a night keeps of a bench's metric (nightly.golden.BenchStat validates it)."""
    median: float
    iqr: float
    n: int
    results: str   # the bench's run directory


@dataclass
class NightPrior:
    """What earlier benches of the same night measured: the reference pipeline's rate is divided by that night's
    ingest rate, so the machine's speed cancels."""
    ingest_pps: float | None = None


#: a bench's nightly hook: (repeats, what earlier benches measured) -> metric name -> what the night keeps
NightlyFn = Callable[[int, NightPrior], dict[str, NightStat]]


@dataclass(frozen=True)
class Bench:
    name: str
    module: str
    summary: str
    options: type[NoOptions] = NoOptions
    nightly: NightlyFn | None = None  # None: not a nightly bench
    metric: str = ""                  # the metric a night files its error under (the golden's key)
    measures: str = ""                # what the night's metric is, in words (the book's benches table)
    unit: str = ""                    # the metric's unit as the book prints it after the number
    goal: str = ""                    # the goal its issue set, in words
    lower_is_better: bool = False     # the night's band check: a rise is the regression

    @property
    def target(self) -> str | None:
        """The switch target whose own bench this is (its record's ``bench.benches`` names it; a night skips or
        fails the bench as it does that target), or None: any machine runs it."""
        from chimera.targets.registry import classes
        return next((c.name for c in classes() if c.bench is not None and self.name in c.bench.benches), None)

    def run(self, **options: Any) -> Any:
        """``main(**options)`` of its module, the options checked against its model first."""
        given = {k: v for k, v in options.items() if v not in (None, "", ())}
        try:
            opts = self.options.model_validate(given)
        except ValidationError as e:
            bad = sorted({str(err["loc"][0]) for err in e.errors() if err["loc"]})
            takers = {b.name for b in BENCHES.values() for k in bad if k in b.options.model_fields}
            raise ConfigError(f"bench {self.name} takes no option {', '.join('--' + k for k in bad)}"
                              if any(err["type"] == "extra_forbidden" for err in e.errors()) else
                              f"bench {self.name}: bad option ({e.errors()[0]['msg']})",
                              f"drop it (it applies to: {', '.join(sorted(takers)) or 'no bench'})") from None
        return importlib.import_module(self.module).main(**opts.model_dump(exclude_none=True))


def _ingest(repeats: int, prior: NightPrior) -> dict[str, NightStat]:
    from chimera.bench.ingest import default_pcap, run
    r, where = run(default_pcap(), repeats)
    prior.ingest_pps = r.ours_pps
    return {"ingest_ratio": {"median": r.ratio, "iqr": r.ratio_iqr, "n": repeats, "results": where}}


def _pipeline(repeats: int, prior: NightPrior) -> dict[str, NightStat]:
    from chimera.bench.pipeline import main
    r = main(repeats)
    if prior.ingest_pps is None:
        return {"reference_mpps": {"median": r["pps"] / 1e6, "iqr": r["pps_iqr"] / 1e6, "n": repeats}}
    # a ratio measured in one night: the machine's speed cancels
    return {"reference_over_ingest": {"median": r["pps"] / prior.ingest_pps, "iqr": r["pps_iqr"] / prior.ingest_pps,
                                      "n": repeats}}


def _install(repeats: int, prior: NightPrior) -> dict[str, NightStat]:
    from chimera.bench.install import main
    target = BENCHES["install"].target or ""
    s = main((target,))[target]["live"]
    return {"install_live_ms": {"median": s["median_ms"], "iqr": s["iqr_ms"], "n": int(s["n"])}}


def _switch(repeats: int, prior: NightPrior) -> dict[str, NightStat]:
    from chimera.bench.switch import main
    r = main(repeats)
    return {"switch_ratio": {"median": r["ratio"], "iqr": r["ratio_iqr"], "n": repeats, "results": r["results"]}}


BENCHES: dict[str, Bench] = {b.name: b for b in (
    Bench("ingest", "chimera.bench.ingest", "our pcap reader against dpkt on the same file and fields", IngestOptions,
          nightly=_ingest, metric="ingest_ratio", measures="our pcap reader against dpkt on the same file and fields",
          unit="x", goal=">= 1 M pkt/s"),
    Bench("pipeline", "chimera.bench.pipeline", "the reference pipeline's rate", nightly=_pipeline,
          metric="reference_over_ingest", measures="the reference pipeline's rate over the ingest rate",
          goal=">= 1 M pkt/s"),
    Bench("install", "chimera.bench.install", "live full-Map update + flip under traffic",
          nightly=_install, metric="install_live_ms", lower_is_better=True,
          measures="live full-Map update + flip under traffic on the switch that runs it", unit=" ms", goal="<= 20 ms eBPF, <= 1 s BMv2"),
    Bench("switch", "chimera.bench.switch", "the full pipeline's rate over bare redirect",
          nightly=_switch, metric="switch_ratio", measures="the full pipeline's rate over bare redirect", unit="x",
          goal=">= 0.7"),
    Bench("fidelity", "chimera.bench.fidelity", "integer pipeline against trees, forests and the float model",
          FidelityOptions),
    Bench("directions", "chimera.bench.directions", "a recency term and a class-aware Map against Chimera as it is, "
          "decided on validation", FidelityOptions),
    Bench("scale", "chimera.bench.scale", "10^5, 10^6 and 10^7 packets through every offline stage", ScaleOptions),
    Bench("sweep", "chimera.bench.sweep", "Ray against sequential"),
    Bench("zeroloss", "chimera.bench.zeroloss", "the highest fixed rate with 0 loss, per target"),
    Bench("shards", "chimera.bench.shards", "the aggregate 0-loss rate of K testbeds at once, against K",
          ShardsOptions),
    Bench("suite", "chimera.bench.suite", "the README's test command timed here, with every tool this machine has"),
    Bench("bmv2ratio", "chimera.bench.bmv2ratio", "chimera.p4 against plain forwarding on the same BMv2"),
    Bench("toolchain", "chimera.bench.toolchain", "one row of the p4c/BMv2 matrix: compile, P4Info, BMv2 conformance",
          ToolchainOptions),
    Bench("bmv2files", "chimera.bench.bmv2files", "chimera.p4 alone in BMv2's file mode against a revision",
          Bmv2FilesOptions),
    Bench("verifier", "chimera.bench.verifier", "one kernel's column of the verifier matrix: every variant's program "
          "loaded, its instructions against the verifier's limit", VerifierOptions),
)}


def bench(what: str) -> Bench:
    if what not in BENCHES:
        raise ConfigError(f"unknown benchmark {what!r}", f"choose one of: {', '.join(BENCHES)}")
    return BENCHES[what]


def nightly_benches() -> tuple[str, ...]:
    return tuple(n for n, b in BENCHES.items() if b.nightly is not None)


def dispatch(what: str, **options: Any) -> None:
    """Run bench ``what`` with the options given on the command line (checked against its record)."""
    bench(what).run(**options)
