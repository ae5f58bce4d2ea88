"""Bmv2Switch: simple_switch_grpc as s1, with the same interface as EbpfSwitch.

The gRPC server listens on a unix socket (namespace-independent), so the
control plane in the root namespace reaches a switch that lives in its own
network namespace. Per-port pcaps and the switch log go under the run's
directory; logging is off unless asked for (it costs throughput).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chimera.formats.registers import Registers
from chimera.testbed.outcome import InstallReport
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.compiler import compile_p4
from chimera.targets.bmv2.p4rt import install, port_entries, sync_version, translated
from chimera.targets.bmv2.schema import P4INFO
from chimera.targets.bmv2.thrift import THRIFT_PORT, read_state
from chimera.testbed.nodes import TargetSwitch

log = logging.getLogger(__name__)
SWITCH_START_TIMEOUT_S = 20.0
DEVICE_ID = 1


class SwitchStartError(TargetError):
    """simple_switch_grpc did not come up."""


class Bmv2Switch(TargetSwitch):
    target = "bmv2"

    def __init__(self, name: str, log_level: str = "off", pcaps: bool = False, **params: Any) -> None:
        super().__init__(name, **params)
        self.log_level, self.pcaps = log_level, pcaps
        self.proc: subprocess.Popen | None = None
        # the socket path must stay short (108 bytes): it lives under /run; logs and pcaps go to the run dir
        self.sock_dir = Path(os.environ.get("CHIMERA_BMV2_DIR", "/run/chimera-testbed")) / f"{name}-{os.getpid()}"
        self.log_dir = self.run_dir or self.sock_dir
        self.grpc_addr = f"unix:{self.sock_dir / 'grpc.sock'}"
        self.version = 1  # each install writes the other version; the first one writes version 0
        self._installed: dict[int, list[Any]] = {}  # entries per version, to clear before reuse
        self._ports_done = False
        self._fixed: Path | None = None  # a fixed program's JSON (fixed_program), else None: P4Runtime pushes

    def argv(self) -> list[str]:
        """simple_switch_grpc's command line: ports 1 and 2 (h1, h2), no program (chimera.p4 is pushed over
        P4Runtime); in a fixed program's mode (``fixed_program``) that program's JSON and port 3 (sc) too."""
        ports = [f"1@{self.name}-eth1", f"2@{self.name}-eth2"]
        if self._fixed is not None:
            ports.append(f"3@{self.name}-eth3")
        a = ["simple_switch_grpc", "--device-id", str(DEVICE_ID), *(x for pt in ports for x in ("-i", pt)),
             "--log-level", self.log_level, "--log-file", str(self.log_dir / "switch"),
             "--thrift-port", str(THRIFT_PORT), str(self._fixed) if self._fixed is not None else "--no-p4"]
        if self.pcaps:
            a += ["--pcap", str(self.log_dir)]
        return a + ["--", "--grpc-server-addr", self.grpc_addr]

    def is_ready(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and (self.sock_dir / "grpc.sock").exists()

    def start(self, controllers: list[Any]) -> None:
        super().start(controllers)
        self._launch()

    @contextmanager
    def fixed_program(self, js: Path) -> Iterator[None]:
        """Run a fixed program (its BMv2 JSON: the † path's p4/redirect.p4) with sc's port 3 attached, then
        come back to the P4Runtime-programmed switch with nothing loaded: the next ``load`` pushes chimera.p4
        afresh. Port 3 is attached only here, so nothing from sc ever reaches chimera.p4's flow state."""
        self._restart(js)
        try:
            yield
        finally:
            self._restart(None)

    def _restart(self, fixed: Path | None) -> None:
        self._halt()
        self._fixed, self.artifact = fixed, None
        self._installed, self._ports_done, self.version = {}, False, 1
        self._launch()

    def _launch(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.sock_dir.mkdir(parents=True, exist_ok=True)
        logf = open(self.log_dir / "stdout.log", "ab")  # a restart (fixed_program) appends
        self.proc = self.popen(self.argv(), stdout=logf, stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        while time.monotonic() - t0 < SWITCH_START_TIMEOUT_S:
            if self.is_ready():
                log.info("%s: simple_switch_grpc up (pid %d, %s)", self.name, self.proc.pid, self.grpc_addr)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise SwitchStartError(f"simple_switch_grpc for {self.name} did not start ({self.grpc_addr})",
                               f"see {self.log_dir / 'stdout.log'}")

    def load(self, art: Artifact) -> float:
        js = compile_p4(art, self.build_dir, self.build)
        # Each model starts on a clean switch, as on eBPF (fresh maps) and in the reference (fresh state):
        # pushing the pipeline resets every table entry and register (flow slots, ring, EMA) on BMv2.
        # Versioned installs with one flip (p4rt.install) are for swapping tables under live traffic.
        self._installed, self._ports_done, self.version = {}, False, 1
        self.version = 1 - self.version
        try:
            dt = asyncio.run(self._program(js, art, self.version, force=True))
        except (TargetError, KeyboardInterrupt):
            raise
        except Exception as e:  # noqa: BLE001 - finsy's P4ClientError and gRPC errors, translated once
            raise translated(f"pipeline push and install on {self.name}", e) from None
        self.artifact = art
        return dt

    def install_map(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """A live update under traffic: P4Runtime writes bring the inactive version to ``art``, then one flip."""
        if self.artifact is None:
            raise TargetError(f"{self.name} has no pipeline loaded", "load a model before installing updates")
        ver = 1 - self.version
        js = compile_p4(art, self.build_dir, self.build)  # the same build (only Map tables differ): cached
        try:
            dt, n = asyncio.run(self._sync(js, art, ver, fail_after))
        except KeyboardInterrupt:
            raise
        except TargetError:
            self._installed.pop(ver, None)  # half-written: the next install reads back what the version holds
            raise
        except Exception as e:  # noqa: BLE001 - finsy's P4ClientError and gRPC errors, translated once
            self._installed.pop(ver, None)  # unknown now: the next install rewrites the whole version
            raise translated(f"live install on {self.name} (the old version {self.version} stays active)", e) from None
        self.version, self.artifact = ver, art
        return InstallReport(dt, n)

    async def _sync(self, js: Path, art: Artifact, ver: int, fail_after: int | None = None) -> tuple[float, int]:
        from finsy import Switch, SwitchOptions
        opts = SwitchOptions(p4info=P4INFO, p4blob=js, p4force=False, device_id=DEVICE_ID)
        async with Switch(self.name, self.grpc_addr, opts) as sw:
            dt, self._installed[ver], n = await sync_version(sw, art, ver, self._installed.get(ver), fail_after=fail_after)
            return dt, n

    async def _program(self, js: Path, art: Artifact, ver: int, force: bool) -> float:
        from finsy import Switch, SwitchOptions
        # force: push the pipeline even if the switch already runs the same P4Info (to reset its state)
        opts = SwitchOptions(p4info=P4INFO, p4blob=js, p4force=force, device_id=DEVICE_ID)
        async with Switch(self.name, self.grpc_addr, opts) as sw:
            if not self._ports_done:
                await sw.insert(port_entries([(1, 2), (2, 1)]))
                self._ports_done = True
            dt, self._installed[ver] = await install(sw, art, ver, self._installed.get(ver))
            return dt

    def registers(self) -> Registers:
        """Counters and the state registers conformance compares, read over Thrift inside the switch's namespace
        (BMv2's P4Runtime server answers UNIMPLEMENTED for register reads). {} when they cannot be read: the
        caller then reports evictions and register conformance as unknown, never as 0."""
        try:
            return read_state(self.artifact, THRIFT_PORT, runner=self.cmd, coverage=self.build.coverage)
        except TargetError as e:
            log.warning("%s: registers not readable (%s); evictions and register conformance unknown", self.name,
                        e.problem)
            return {}

    def run_state_dirs(self) -> list[Path]:
        return [self.sock_dir]

    def alive(self) -> str | None:
        why = super().alive()
        if why is None and (self.proc is None or self.proc.poll() is not None):
            code = None if self.proc is None else self.proc.returncode
            why = f"simple_switch_grpc of {self.name} is not running (exit code {code}; see {self.log_dir / 'stdout.log'})"
        return why

    def unload(self) -> None:
        """Tables are replaced by the next versioned install; nothing to detach."""

    def _halt(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        (self.sock_dir / "grpc.sock").unlink(missing_ok=True)

    def stop(self, deleteIntfs: bool = True) -> None:
        self._halt()
        super().stop(deleteIntfs)
