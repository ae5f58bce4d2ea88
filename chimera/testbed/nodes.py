"""The switch node contract (p4-utils style): one subclass per target, in that target's package.

``TargetSwitch`` fixes what the topology and the targets rely on:
``start(controllers)``, ``stop(deleteIntfs)``, ``load(artifact)`` (install a
compiled model, returning the install time), ``unload()`` and ``registers()``.
Subclasses override only what differs: ``EbpfSwitch`` (chimera.targets.ebpf.node)
loads the tc program into its namespace; ``Bmv2Switch`` (chimera.targets.bmv2.node)
launches simple_switch_grpc. The testbed knows nothing of targets: it receives
the switch class to use.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mininet.node import Switch

from chimera.formats.artifact import Artifact
from chimera.formats.registers import Registers
from chimera.formats.verdict import VERDICT_LEN
from chimera.testbed.outcome import InstallReport, ProgramTime
from chimera.formats.snap import SENDER_MTU

log = logging.getLogger(__name__)

#: MTUs: the sender's (chimera.formats.snap) fits the longest frame sent plus the trace-time shim; every port
#: after the switch has room for the verdict header too (a shimmed frame leaves the switch SHIM_LEN shorter than
#: it came, plus VERDICT_LEN)
SWITCHED_MTU = SENDER_MTU + VERDICT_LEN + 64
OFFLOADS = ("rx", "tx", "tso", "gso", "gro", "lro", "sg")


def offloads_off(node: Any, intf: str) -> None:
    """Checksum/segmentation offloads off: the dataplane must see real frames, one per packet."""
    said = node.cmd(f"ethtool -K {intf} " + " ".join(f"{o} off" for o in OFFLOADS) + " 2>&1").strip()
    if said:  # a veth cannot change some offloads (lro is fixed off): ethtool says so, and the rest still apply
        log.debug("[%s] ethtool -K %s: %s", node.name, intf, " ".join(said.split()))


def quiet_host(node: Any) -> None:
    """No IPv6 (router solicitations, DAD) so the only traffic on the wire is the replay."""
    node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
    for intf in node.intfNames():
        if intf != "lo":
            node.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=1")


@dataclass(frozen=True)
class BuildOptions:
    """How a target builds its dataplane program: as shipped, or instrumented (the fuzzer's coverage counters,
    ``invoke mutate``'s mutant sources). Part of every build cache key and of the pace cache's."""

    coverage: bool = False        # -DCHIMERA_COVERAGE: the decision-point counters count (chimera.formats.coverage)
    source: Path | None = None    # another program source in place of the shipped one (a mutant)

    def defines(self) -> list[str]:
        return ["-DCHIMERA_COVERAGE"] if self.coverage else []

    def key(self) -> bytes:
        return (b"coverage;" if self.coverage else b"") + (self.source.read_bytes() if self.source else b"")


@dataclass(frozen=True)
class Baseline:
    """A program that does part of the pipeline's work on the same path, to time what the rest costs: what it
    does, and whether it marks each frame with the verdict header (the receiver captures only marked frames where
    it does, and every frame where it does not)."""

    what: str
    marks: bool


class TargetSwitch(Switch, abc.ABC):
    """A switch running the Chimera pipeline on some target, in its own network namespace."""

    target = "abstract"
    #: programs that do part of the pipeline's work on the same path, by name (load_baseline loads one)
    baselines: ClassVar[dict[str, Baseline]] = {}

    def __init__(self, name: str, build_dir: Path | None = None, run_dir: Path | None = None,
                 build: BuildOptions | None = None, **params: Any) -> None:
        params["inNamespace"] = True  # Mininet passes its own default (False, for OVS); ours is a namespace
        super().__init__(name, **params)
        self.build_dir = build_dir or Path("build")
        self.build = build or BuildOptions()
        self.run_dir = run_dir  # where the switch keeps its logs/pcaps (None: nowhere)
        self.artifact: Artifact | None = None
        #: count the program's own run time (program_time) where the target can
        self.timing = False

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

    def load_baseline(self, program: str, art: Artifact) -> None:
        """Load one of ``baselines`` on the ports the pipeline uses (``art``: the sizes it is built for)."""
        raise NotImplementedError(f"{type(self).__name__} has no baseline programs")

    def program_time(self) -> ProgramTime | None:
        """The loaded program's own run time over what it has carried so far (None: not counted here)."""
        return None

    def install_map(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """A live Map update under traffic: write the inactive version, then flip (targets with live installs).
        ``fail_after``: fault injection (the fuzzer): stop after that many writes, before the flip, and raise
        TargetError as a rejected write would."""
        raise NotImplementedError(f"{type(self).__name__} has no live install")

    def unload(self) -> None:
        """Remove the loaded model (and anything attached for it); the topology calls this at teardown."""

    def run_state_dirs(self) -> list[Path]:
        """Directories outside the run directory this switch creates (e.g. under /run); removed at teardown."""
        return []

    def alive(self) -> str | None:
        """Why the switch cannot forward right now, or None: the node's shell must be running (subclasses add
        their dataplane). Checked before, during and after every replay."""
        shell = getattr(self, "shell", None)
        if shell is None or shell.poll() is not None:
            return f"{self.name}'s node shell exited"
        return None

    def registers(self) -> Registers:
        return {}

    def stop(self, deleteIntfs: bool = True) -> None:
        super().stop(deleteIntfs)
