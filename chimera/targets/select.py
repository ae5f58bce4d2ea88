"""Pick a target by name; ``auto`` is the eBPF testbed where it can run, else the reference (logged)."""

from __future__ import annotations

import logging
from typing import Any

from chimera.errors import ConfigError
from chimera.targets.base import Target
from chimera.targets.reference import ReferenceTarget
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)
TARGETS = ("auto", "reference", "ebpf", "bmv2")


def select_target(name: str, replay: ReplayConfig | None = None) -> Target:
    """The target called ``name``; a testbed target that cannot run here fails fast naming what to install."""
    if name == "reference":
        return ReferenceTarget()
    if name in ("auto", "ebpf"):
        from chimera.targets.ebpf import EbpfTarget, require_available, unavailable_reason
        if name == "auto":
            why = unavailable_reason()
            if why is not None:
                log.warning("target auto -> reference: the eBPF testbed cannot run here (%s)", why)
                return ReferenceTarget()
        require_available()
        return EbpfTarget(replay)
    if name == "bmv2":
        from chimera.targets.bmv2 import Bmv2Target, require_available as bmv2_required
        bmv2_required()
        return Bmv2Target(replay)
    raise ConfigError(f"unknown target {name!r}", f"use one of: {', '.join(TARGETS)}")


def describe_all() -> dict[str, Any]:
    """Which targets can run here and, for those that cannot, why (for manifests and `invoke test`)."""
    from chimera.targets.bmv2 import unavailable_reason as bmv2_why
    from chimera.targets.ebpf import unavailable_reason as ebpf_why
    return {"reference": None, "ebpf": ebpf_why(), "bmv2": bmv2_why()}
