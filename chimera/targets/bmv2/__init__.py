"""The BMv2 target: simple_switch_grpc running p4/chimera.p4 as s1, programmed over P4Runtime.

Owns the switch node (``node.Bmv2Switch``), the p4c wrapper (``compiler``), the
control-plane contract (``schema``, committed P4Info), the P4Runtime entities and
versioned install (``p4rt``), Thrift register reads (``thrift``) and the
network-free file-mode conformance harness (``files``).

p4c and BMv2 are not installable on this project's own machines (no package in
any registry they reach); they are on the reviewers' Vagrant VM (Vagrantfile).
Where they are absent, ``--target bmv2`` fails fast naming what to install, and
the BMv2 tests skip with that reason. Nothing here pretends to have run.
"""

from __future__ import annotations

import shutil
from typing import Any

from chimera.errors import ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.compiler import INSTALL_HINT
from chimera.targets.bmv2.node import Bmv2Switch
from chimera.targets.bmv2.p4rt import check_supported, p4_limits
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.tools import testbed_unavailable_reason

TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")


def unavailable_reason() -> str | None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (p4c/BMv2 are in no registry this machine reaches)"
    return testbed_unavailable_reason()


def require_available() -> None:
    why = unavailable_reason()
    if why is not None:
        raise ToolMissingError(f"the bmv2 target cannot run: {why}", INSTALL_HINT)


class Bmv2Target(TestbedTarget):
    """s1 is simple_switch_grpc; replay is paced below BMv2's capacity (loss is measured and reported)."""

    name = "bmv2"
    switch_cls = Bmv2Switch

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clock": "BMv2 ingress_global_timestamp (µs, x1000 to ns)"}

    def unsupported(self, art: Artifact) -> str | None:
        return check_supported(art)

    def limits(self) -> dict[str, int]:
        return p4_limits()
