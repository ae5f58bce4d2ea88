"""Switch node classes: one per target, same interface (p4-utils style).

``TargetSwitch`` fixes the contract used by the topology and the runner:
``start(controllers)``, ``stop(deleteIntfs)``, ``load(artifact)`` (install a
compiled model, returning the install time) and ``registers()``. Subclasses
override only what differs: ``EbpfSwitch`` loads the tc program into its
namespace; ``Bmv2Switch`` (chimera.targets.bmv2) launches simple_switch_grpc.
"""

from __future__ import annotations

import abc
import logging
from pathlib import Path
from typing import Any

from mininet.node import Switch

from chimera.compile.artifact import Artifact

log = logging.getLogger(__name__)

#: MTUs: the sender's stays at 9000; every port after the switch has room for the verdict header.
SENDER_MTU = 9000
SWITCHED_MTU = 9100
OFFLOADS = ("rx", "tx", "tso", "gso", "gro", "lro", "sg")


def offloads_off(node: Any, intf: str) -> None:
    """Checksum/segmentation offloads off: the dataplane must see real frames, one per packet."""
    node.cmd(f"ethtool -K {intf} " + " ".join(f"{o} off" for o in OFFLOADS) + " 2>/dev/null")


def quiet_host(node: Any) -> None:
    """No IPv6 (router solicitations, DAD) so the only traffic on the wire is the replay."""
    node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
    for intf in node.intfNames():
        if intf != "lo":
            node.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=1")


class TargetSwitch(Switch, abc.ABC):
    """A switch running the Chimera pipeline on some target, in its own network namespace."""

    target = "abstract"

    def __init__(self, name: str, build_dir: Path | None = None, **params: Any) -> None:
        params["inNamespace"] = True  # Mininet passes its own default (False, for OVS); ours is a namespace
        super().__init__(name, **params)
        self.build_dir = build_dir or Path("build")
        self.artifact: Artifact | None = None

    def port_pairs(self) -> list[tuple[str, str]]:
        """(in, out) port names: port 1 <-> port 2 (h1 side <-> h2 side)."""
        a, b = f"{self.name}-eth1", f"{self.name}-eth2"
        return [(a, b), (b, a)]

    def start(self, controllers: list[Any]) -> None:
        self.cmd("ip link set lo up")  # Mininet configures hosts' loopback, not switches'
        quiet_host(self)
        for intf in self.intfNames():
            if intf != "lo":
                offloads_off(self, intf)
                self.cmd(f"ip link set {intf} mtu {SWITCHED_MTU} up")

    @abc.abstractmethod
    def load(self, art: Artifact) -> float:
        """Install a compiled model (atomically); returns the install time in seconds."""

    def registers(self) -> dict[str, Any]:
        return {}

    def stop(self, deleteIntfs: bool = True) -> None:
        super().stop(deleteIntfs)


class EbpfSwitch(TargetSwitch):
    """The eBPF/tc dataplane: the program is loaded from the root namespace and attached here."""

    target = "ebpf"

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, **params)
        self.pipeline: Any = None

    def load(self, art: Artifact) -> float:
        from chimera.targets.ebpf.build import build_object
        from chimera.targets.ebpf.pipeline import EbpfPipeline
        self.unload()
        obj = build_object(art, self.build_dir)
        self.pipeline = EbpfPipeline(obj)
        dt = self.pipeline.install(art)
        self.pipeline.attach(self.pid, self.port_pairs())
        self.artifact = art
        log.info("%s: eBPF pipeline attached to %s (tables installed in %.1f ms)", self.name,
                 ", ".join(i for i, _ in self.port_pairs()), dt * 1e3)
        return dt

    def load_redirect(self, pairs: list[tuple[str, str]]) -> None:
        """No pipeline: a plain redirect along ``pairs`` (the software-classifier path)."""
        from chimera.targets.ebpf.build import build_redirect_object
        from chimera.targets.ebpf.pipeline import EbpfPipeline
        self.unload()
        self.pipeline = EbpfPipeline(build_redirect_object(self.build_dir))
        self.pipeline.attach(self.pid, pairs, prog="redirect")
        self.artifact = None

    def registers(self) -> dict[str, Any]:
        if self.pipeline is None or self.artifact is None:
            return {}
        return {"counters": self.pipeline.counters(), "ema": self.pipeline.ema().tolist()}

    def unload(self) -> None:
        if self.pipeline is not None:
            self.pipeline.close()
            self.pipeline = None

    def stop(self, deleteIntfs: bool = True) -> None:
        self.unload()
        super().stop(deleteIntfs)
