"""The one registry of targets. A new target is one module (a ``Target`` subclass) plus one line here.

Entries are ``"module:Class"`` strings (imported when first used, so a target's
tools are not needed to list the others) or classes. ``--target auto`` takes the
available target of the highest ``auto_rank``: BMv2 (the card's switch) where p4c
and BMv2 are installed, else eBPF where the kernel loads the program, else the
reference; the choice and the reason for it are logged and go into every report.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import Any

from chimera.errors import ConfigError
from chimera.formats import rundir
from chimera.targets.base import Capability, MutantSource, Target
from chimera.testbed.nodes import BuildOptions

log = logging.getLogger(__name__)

TARGETS: dict[str, str | type[Target]] = {
    "reference": "chimera.targets.reference:ReferenceTarget",
    "ebpf": "chimera.targets.ebpf:EbpfTarget",
    "bmv2": "chimera.targets.bmv2:Bmv2Target",
    "tofino": "chimera.targets.tofino:TofinoTarget",
}
AUTO = "auto"
#: the target every other is checked against: the reference pipeline, in process (the conformance checks, the
#: fuzzer, the nightly's exact checks, and where a kind runs when no switch can). The upper floors name it by this
#: role, never by its name.
TRUTH = "reference"


def names() -> list[str]:
    """The names a --target accepts."""
    return [AUTO, *TARGETS]


def target_class(name: str) -> type[Target]:
    entry = TARGETS.get(name)
    if entry is None:
        raise ConfigError(f"unknown target {name!r}", f"use one of: {', '.join(names())}")
    if isinstance(entry, str):
        module, cls = entry.split(":")
        entry = getattr(importlib.import_module(module), cls)
        assert isinstance(entry, type) and issubclass(entry, Target), f"{TARGETS[name]} is not a Target"
        TARGETS[name] = entry
    return entry


@dataclass(frozen=True)
class Selection:
    """The target that will run, what was asked for, and why this one."""

    target: Target
    requested: str
    reason: str


def resolve_auto() -> tuple[str, str]:
    """(target name, why) for ``auto``: the available target of the highest rank."""
    ranked = sorted(((c.auto_rank, n, c) for n in TARGETS if (c := target_class(n)).auto_rank is not None),
                    key=lambda x: -x[0])
    skipped: list[str] = []
    for _, name, cls in ranked:
        why = cls.unavailable_reason()
        if why is None:
            reason = f"auto: {name} is the highest-ranked target that can run here"
            if skipped:
                reason += " (" + "; ".join(skipped) + ")"
            return name, reason
        skipped.append(f"{name} cannot run: {why}")
        log.info("target auto: %s cannot run here: %s", name, why)
    raise ConfigError("no target can run here", "; ".join(skipped))


def select_target(name: str, build: BuildOptions | None = None) -> Selection:
    """The target called ``name`` (or ``auto``), instantiated (a testbed target built with ``build``); a target
    that cannot run here fails fast naming what to install."""
    if name == AUTO:
        chosen, reason = resolve_auto()
        log.info("target auto -> %s: %s", chosen, reason)
    else:
        chosen, reason = name, "asked for"
    cls = target_class(chosen)
    cls.require_available()
    inst = cls(build=build)
    return Selection(inst, name, reason)


def classes() -> list[type[Target]]:
    """Every registered target's record, in registry order."""
    return [target_class(n) for n in TARGETS]


def with_capability(cap: Capability) -> list[type[Target]]:
    """The targets that have ``cap`` (the testbeds: Capability.TESTBED)."""
    return [c for c in classes() if c.can(cap)]


def by_rank(cap: Capability = Capability.NONE) -> list[type[Target]]:
    """The targets ``--target auto`` may choose (that have ``cap``, if given), the highest rank first."""
    pool = classes() if cap is Capability.NONE else with_capability(cap)
    return sorted((c for c in pool if c.auto_rank is not None), key=lambda c: -(c.auto_rank or 0))


def mutant_sources() -> dict[str, tuple[type[Target], MutantSource]]:
    """Every target's mutant source by its name (``invoke mutate --files``)."""
    return {c.mutants.name: (c, c.mutants) for c in classes() if c.mutants is not None}


def tool_commands() -> dict[str, tuple[str, ...]]:
    """The tools of every target (their versions go into each run's manifest)."""
    return {k: v for c in classes() for k, v in c.tools.items()}


def environment() -> dict[str, Any]:  # JSON out: the manifest's environment record
    """The run environment (formats.rundir.environment) with every target's tool versions."""
    return rundir.environment(tool_commands())


def describe_all() -> dict[str, str | None]:
    """Which targets can run here and, for those that cannot, why (manifests, the nightly, `invoke test`)."""
    return {n: target_class(n).unavailable_reason() for n in TARGETS}
