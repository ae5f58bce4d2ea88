"""ToySwitch: s1 as a Mininet node whose dataplane is the toy's userspace process (``switchd.py``)."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.testbed.nodes import TargetSwitch
from chimera.testbed.outcome import InstallReport

log = logging.getLogger(__name__)
PROGRAM = Path(__file__).with_name("program.py")
#: the repository the process imports chimera from (its module is this package's)
ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 30.0
ANSWER_TIMEOUT_S = 10.0


class ToySwitch(TargetSwitch):
    """Frames from port 1 leave port 2 classified and marked by the toy program. One process per switch and
    program (starting one costs an import of the pipeline); models are loaded into it by command."""

    target = "toy"

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, **params)
        self.daemon: subprocess.Popen[bytes] | None = None
        self.daemon_program: Path | None = None
        self.sent = 0   # artifacts written for the process
        self.work = (self.run_dir or self.build_dir) / f"{name}-toy"

    def _start(self) -> None:
        program = self.build.source or PROGRAM
        if self.daemon is not None and self.daemon.poll() is None and self.daemon_program == program:
            return
        self._stop_daemon()
        self.work.mkdir(parents=True, exist_ok=True)
        ready = self.work / "ready"
        ready.unlink(missing_ok=True)
        with open(self.work / "switchd.log", "ab") as log_f:
            self.daemon = self.popen([sys.executable, "-m", "chimera.targets.toy.switchd", "--program", str(program),
                                      "--work", str(self.work), "--in", f"{self.name}-eth1",
                                      "--out", f"{self.name}-eth2"], stdout=log_f, stderr=subprocess.STDOUT,
                                     cwd=str(ROOT))
        self.daemon_program = program
        t0 = time.monotonic()
        while not ready.exists():
            if self.daemon.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                self._stop_daemon()
                raise TargetError(f"the toy switch's process did not start (see {self.work / 'switchd.log'})",
                                  "check that its program loads: python -m chimera.targets.toy.switchd --help")
            time.sleep(0.02)

    def _command(self, op: str, art: Artifact | None = None) -> Any:
        """Run one command in the process (between two frames) and return its answer."""
        if self.daemon is None or self.daemon.poll() is not None:
            raise TargetError(f"{self.name}'s toy switch process is not running", f"see {self.work / 'switchd.log'}")
        cmd: dict[str, Any] = {"op": op}
        if art is not None:
            self.sent += 1
            path = self.work / f"artifact-{self.sent}.json"   # one file per command: never one the process reads
            art.save(path)
            cmd["path"] = str(path)
        answer = self.work / "answer"
        answer.unlink(missing_ok=True)
        (self.work / "command").write_text(json.dumps(cmd))
        self.daemon.send_signal(signal.SIGUSR1)
        t0 = time.monotonic()
        while not answer.exists():
            if self.daemon.poll() is not None or time.monotonic() - t0 > ANSWER_TIMEOUT_S:
                raise TargetError(f"the toy switch did not answer {op!r}", f"see {self.work / 'switchd.log'}")
            time.sleep(0.002)
        got = json.loads(answer.read_text())
        if "error" in got:
            raise TargetError(f"the toy switch refused {op!r}: {got['error']}", f"see {self.work / 'switchd.log'}")
        return got["ok"]

    def load(self, art: Artifact) -> float:
        t0 = time.monotonic()
        self._start()
        self._command("load", art)
        self.artifact = art
        return time.monotonic() - t0

    def install_map(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """A live update under traffic: the process takes the new version's tables between two frames, whole. A
        fault injected (``fail_after``) stops before the flip, as a rejected write would: the old version stays."""
        if self.artifact is None:
            raise TargetError(f"{self.name} has no pipeline loaded", "load a model before installing updates")
        if fail_after is not None:
            raise TargetError(f"live install on {self.name} failed after {fail_after} writes (injected)",
                              "the old version stays active")
        t0 = time.monotonic()
        written = int(self._command("install", art))
        self.artifact = art
        return InstallReport(time.monotonic() - t0, written)

    def registers(self) -> dict[str, Any]:
        """The state registers the process holds now."""
        return dict(self._command("registers")) if self.artifact is not None else {}

    def alive(self) -> str | None:
        why = super().alive()
        if why is None and (self.daemon is None or self.daemon.poll() is not None):
            why = f"{self.name}'s toy switch process is not running"
        return why

    def unload(self) -> None:
        """The model leaves; the process stays for the next one (and drops frames meanwhile)."""
        if self.artifact is not None and self.daemon is not None and self.daemon.poll() is None:
            self._command("unload")
        self.artifact = None

    def _stop_daemon(self) -> None:
        if self.daemon is not None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
            self.daemon = None

    def stop(self, deleteIntfs: bool = True) -> None:
        self.artifact = None
        self._stop_daemon()
        super().stop(deleteIntfs)
