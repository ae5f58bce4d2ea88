"""Dataplane programs: build one, bring up the topology, the P4Info contract, the constants header."""

from __future__ import annotations

import logging
import shutil

from invoke import Context, Exit, task

from tasks._common import cli
from chimera.paths import ROOT


@task(help={"target": "a testbed target (auto: the highest-ranked one that can run here)",
            "experiment": "experiment whose first variant is loaded"})
@cli
def topo(c: Context, target: str = "auto", experiment: str = "quickstart", verbose: bool = False) -> None:
    """Bring up h1 - s1 - h2 with the pipeline loaded and open the Mininet CLI (needs root)."""
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    from chimera.experiments.load import build_artifact
    from chimera.targets.testbed import testbed_class
    from chimera.testbed.topology import Testbed
    cls = testbed_class(target)  # fails fast, naming what to install
    art = build_artifact(experiment).art
    with Testbed(cls.switch_cls, ROOT / "build", ROOT / "build") as tb:
        setLogLevel("output")  # the CLI prints through Mininet's own handler...
        tb.s1.load(art)
        logging.getLogger("tasks").info("%s pipeline loaded; try: h1 ping -c1 h2", cls.name)
        for h in logging.getLogger().handlers:  # ...so ours steps back while the CLI runs (no double lines)
            h.setLevel(logging.WARNING)
        CLI(tb.net)


@task(help={"target": "a target that compiles a program: ebpf, bmv2 or tofino (auto: the highest-ranked testbed that "
                      "can run here)",
            "experiment": "experiment whose first variant is compiled"})
@cli
def build(c: Context, target: str = "auto", experiment: str = "quickstart", verbose: bool = False) -> None:
    """Compile the dataplane for an experiment's model (eBPF object, chimera.p4 with p4c-bm2-ss, or chimera.p4 for
    TNA with p4c's Tofino backend: a compile-only target)."""
    from chimera.experiments.load import build_artifact
    from chimera.targets.base import Capability
    from chimera.targets.registry import AUTO, target_class
    from chimera.targets.testbed import testbed_class
    cls = testbed_class(target, available=False) if target == AUTO else target_class(target)
    if not cls.can(Capability.TESTBED):
        cls.require_available()  # a compile-only target's compiler, before the model is trained
    art = build_artifact(experiment).art
    logging.getLogger("tasks").info("%s program: %s", cls.name, cls.build_program(art, ROOT / "build"))


@task(help={"check": "also compile chimera.p4 with p4c and compare its P4Info with the committed one"})
@cli
def p4info(c: Context, check: bool = False, verbose: bool = False) -> None:
    """Regenerate p4/chimera.p4info.txtpb from the schema; --check diffs it against p4c's (where p4c exists)."""
    from chimera.targets.bmv2.schema import P4INFO, render_p4info
    P4INFO.write_text(render_p4info())
    logging.getLogger("tasks").info("wrote %s", P4INFO)
    if check:
        from chimera.experiments.load import build_artifact
        from chimera.targets.bmv2.p4info_check import check_against_p4c
        diffs = check_against_p4c(build_artifact("quickstart").art, ROOT / "build")
        if diffs:
            raise Exit("P4Info differs from p4c's:\n  " + "\n  ".join(diffs), code=1)
        logging.getLogger("tasks").info("p4c's P4Info matches the committed contract")


@task
@cli
def p4header(c: Context, verbose: bool = False) -> None:
    """Regenerate p4/chimera_constants.h, the quickstart model's header, so `p4c-bm2-ss p4/chimera.p4` compiles."""
    from chimera.compile.header import write_header
    from chimera.experiments.load import build_artifact
    from chimera.targets.bmv2.schema import P4_DIR
    path = write_header(build_artifact("quickstart").art, P4_DIR / "chimera_constants.h")
    logging.getLogger("tasks").info("wrote %s", path)


@task
def clean(c: Context) -> None:
    """Remove build outputs and caches (keeps results/ and data/)."""
    for p in ("build", ".pytest_cache", ".hypothesis"):
        shutil.rmtree(ROOT / p, ignore_errors=True)
