"""Dataplane targets behind one interface: run a compiled artifact over the replayed packets.

``reference`` executes the integer semantics in-process; ``ebpf`` runs the
Mininet testbed with the eBPF switch; ``bmv2`` runs simple_switch_grpc with
chimera.p4. Each returns one verdict per replayed packet, in replay order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chimera.compile.artifact import Artifact
from chimera.data.pcap import PacketTable
from chimera.errors import ConfigError
from chimera.pipeline.reference import Verdicts, run_reference

log = logging.getLogger(__name__)


@dataclass
class TargetResult:
    verdicts: Verdicts
    evictions: int
    extra: dict[str, Any] = field(default_factory=dict)


class Target(Protocol):
    name: str

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str) -> TargetResult: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class ReferenceTarget:
    """The bit-exact integer model, in-process (no root, no network)."""

    name = "reference"

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str) -> TargetResult:
        v, st = run_reference(art, table)
        return TargetResult(v, int(st.counters[0]), {"new_flows": int(st.counters[1])})

    def describe(self) -> dict[str, Any]:
        return {"target": "reference", "clock": "capture timestamps"}

    def close(self) -> None:
        """Nothing to tear down."""


def ebpf_unavailable_reason() -> str | None:
    """Why the eBPF testbed cannot run here, or None if it can."""
    try:
        from chimera.targets.ebpf import unavailable_reason
    except ImportError as e:
        return f"the eBPF target is not installed in this build ({e})"
    return unavailable_reason()


def select_target(name: str, cfg: Any = None) -> Target:
    if name == "reference":
        return ReferenceTarget()
    if name == "auto":
        why = ebpf_unavailable_reason()
        if why is None:
            from chimera.targets.ebpf import EbpfTarget
            return EbpfTarget(cfg)
        log.warning("target auto -> reference: the eBPF testbed cannot run here (%s)", why)
        return ReferenceTarget()
    if name == "ebpf":
        from chimera.targets.ebpf import EbpfTarget, require_available
        require_available()
        return EbpfTarget(cfg)
    if name == "bmv2":
        from chimera.targets.bmv2 import Bmv2Target, require_available as bmv2_required
        bmv2_required()
        return Bmv2Target(cfg)
    raise ConfigError(f"unknown target {name!r}", "use one of: auto, reference, ebpf, bmv2")
