"""Replay frames from h1 and capture at h1 (send times) and h2 (verdict-marked frames).

Every outcome the tools report is read, not assumed: tcpreplay's "Failed
packets" (frames the sender could not put on the wire, e.g. larger than its
MTU), tcpdump's exit status and its "dropped by kernel" counts, and whether the
switch stayed alive before, during and after the replay. The collector turns
them into the accounting of every replayed frame.

Clocks (docs/pipeline.md, "Clocks"): under ``clock: trace`` every frame carries
the trace-time shim and the switch classifies on it, so the pace is free and a
replay runs at a fixed rate the target holds with 0 loss; under ``clock:
switch`` the switch classifies on its own clock, so the replay keeps the
original timing (a multiplier of it), with idle gaps shortened by
feature-preserving gap compression (chimera.testbed.timeline). Either way the
plan says how long it will take before anything starts, and a plan over the
time budget is refused.
"""

from __future__ import annotations

import logging
import os
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from chimera.errors import ConfigError, TargetError
from chimera.formats.units import human_s
from chimera.formats.verdict import ETH_P_VERDICT

log = logging.getLogger(__name__)
CAPTURE_READY_TIMEOUT_S = 10.0
DRAIN_S = 1.0
Clock = Literal["trace", "switch"]
CLOCKS: tuple[Clock, ...] = ("trace", "switch")
#: the pace assumed for an estimate when the sender runs flat out (tcpreplay --topspeed)
TOPSPEED_ESTIMATE_PPS = 100_000


class ReplayConfig(BaseModel):
    """How the testbed replays (targets other than reference); the experiments' ``replay:`` section.

    ``clock``: what the switch classifies on. ``trace`` (the classification kinds' default): every frame
    carries the trace-time shim, verdicts do not depend on pace, and ``mode: auto`` replays at the target's
    measured zero-loss rate (or ``pps`` when given). ``switch``: the switch's own clock (latency, throughput,
    realism runs); ``mode: auto`` is original timing (``speed`` x) with feature-preserving gap compression.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    clock: Clock | None = Field(None, description="trace | switch; unset: the experiment kind's default")
    mode: Literal["auto", "speed", "pps", "topspeed"] = "auto"
    speed: float = Field(1.0, gt=0, description="multiplier of the original timing (switch clock, speed/auto)")
    pps: int | None = Field(None, ge=1, description="fixed rate: mode pps; under the trace clock it replaces the "
                            "measured zero-loss rate")
    max_packets: int = Field(0, ge=0, description="0 = all test packets")
    gap_compression: bool = Field(True, description="switch clock: shorten idle gaps longer than the inter-arrival "
                                  "saturation (no verdict changes; chimera.testbed.timeline proves it per run)")
    max_replay_s: float = Field(1800.0, gt=0, description="refuse a replay plan expected to take longer than this")
    frames: Literal["normalized", "as-captured"] = Field(
        "normalized", description="normalized: untagged Ethernet (VLAN tags removed, other link types given an "
        "Ethernet header), what a dataset replay classifies; as-captured: Ethernet frames sent byte for byte "
        "(the fuzzer's tagged and malformed frames)")

    def with_clock(self, clock: Clock) -> "ReplayConfig":
        return self.model_copy(update={"clock": clock})

    @property
    def resolved_clock(self) -> Clock:
        if self.clock is None:
            raise ConfigError("replay.clock is unset here", "the runner resolves it from the experiment kind")
        return self.clock


@dataclass(frozen=True)
class Pace:
    """How tcpreplay sends one segment."""

    mode: Literal["speed", "pps", "topspeed"]
    speed: float = 1.0
    pps: int = 0

    def args(self) -> list[str]:
        return {"speed": ["--multiplier", f"{self.speed:g}"], "pps": ["--pps", str(self.pps)],
                "topspeed": ["--topspeed"]}[self.mode]

    def expected_s(self, frames: int, span_ns: int) -> float:
        """Expected seconds to send ``frames`` frames whose timestamps span ``span_ns``."""
        if self.mode == "speed":
            return span_ns / 1e9 / self.speed
        rate = self.pps if self.mode == "pps" else TOPSPEED_ESTIMATE_PPS
        return frames / max(rate, 1)

    def describe(self) -> str:
        return {"speed": f"original timing x{self.speed:g}", "pps": f"{self.pps} pps",
                "topspeed": "top speed"}[self.mode]


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay will do, known before the topology is built: the clock, the pace, the expected time."""

    clock: Clock
    pace: Pace
    frames: int
    span_ns: int                 # the replayed timeline's span (after gap compression)
    original_span_ns: int        # before it
    pace_source: str             # where the rate came from (measured, --pps, the YAML...)
    # dict[str, Any]: JSON out: the replay plan's compression record in the manifest
    compression: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_s(self) -> float:
        return self.pace.expected_s(self.frames, self.span_ns)

    def describe(self) -> str:
        span = f"a {human_s(self.original_span_ns / 1e9)} trace"
        if self.span_ns != self.original_span_ns:
            span += f" (gap-compressed to {human_s(self.span_ns / 1e9)})"
        return (f"clock {self.clock}: {self.frames:,} frames of {span} at {self.pace.describe()} "
                f"({self.pace_source}): about {human_s(self.expected_s)}")

    def check_budget(self, budget_s: float) -> None:
        """Refuse a plan over the budget before anything starts, naming the fixes."""
        if self.expected_s <= budget_s:
            return
        fixes = []
        if self.clock == "switch":
            fixes.append("use clock: trace (verdicts then do not depend on pace: replay --clock trace)")
            if not self.compression.get("enabled"):
                fixes.append("turn on replay.gap_compression")
            fixes.append("raise replay.speed (this changes the inter-arrival features)")
        else:
            fixes.append("raise the rate (--pps), if the target holds it without loss")
        fixes.append(f"or raise the budget (--max-replay {int(self.expected_s * 1.2) + 1})")
        raise ConfigError(f"the replay would take {human_s(self.expected_s)}, over its budget of "
                          f"{human_s(budget_s)}: {self.describe()}", "; ".join(fixes))

    def as_dict(self) -> dict[str, Any]:  # JSON out: the replay plan in the manifest
        return {"clock": self.clock, "pace": self.pace.describe(), "pace_source": self.pace_source,
                "frames": self.frames, "span_s": self.span_ns / 1e9, "original_span_s": self.original_span_ns / 1e9,
                "expected_s": self.expected_s, "compression": self.compression}


@dataclass
class ReplayFiles:
    sent: Path                  # capture at h1 (outgoing): send timestamps
    received: Path              # capture at h2 (incoming, verdict-marked)
    tcpreplay_log: str
    failed_to_send: int = 0     # tcpreplay's "Failed packets"
    dropped_at_receiver: int = 0  # tcpdump at h2: packets dropped by the kernel
    dropped_at_sender: int = 0    # tcpdump at h1


DROPPED = re.compile(rb"(\d+) packets? dropped by kernel")
FAILED = re.compile(r"Failed packets:\s*(\d+)")
PROGRESS = re.compile(r"Actual: (\d+) packets")


def _start_capture(node: Any, intf: str, direction: str, out: Path, bpf_filter: str) -> subprocess.Popen:
    # --immediate-mode: deliver each packet at once (TPACKET_V3 blocks otherwise hold the tail back)
    cmd = ["tcpdump", "-i", intf, "-Q", direction, "-w", str(out), "-s", "0", "-B", "32768", "-U", "-n", "--immediate-mode",
           "--time-stamp-precision=nano", "-Z", "root", bpf_filter]
    p = node.popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + CAPTURE_READY_TIMEOUT_S
    buf = b""
    fd = p.stderr.fileno()
    while time.monotonic() < deadline:  # select: a silent tcpdump cannot block us past the deadline
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            chunk = os.read(fd, 4096)
            buf += chunk
            if b"listening on" in buf:
                return p
            if not chunk and p.poll() is not None:
                break
        elif p.poll() is not None:
            break
    p.kill()
    p.wait()
    raise TargetError(f"tcpdump on {node.name}:{intf} did not start within {CAPTURE_READY_TIMEOUT_S:.0f} s: "
                      f"{buf.decode(errors='replace')[-500:] or '(no output)'}",
                      "check that tcpdump runs as root in a network namespace")


def _stop(p: subprocess.Popen, what: str) -> int:
    """Stop a capture; returns the packets its kernel buffer dropped. A failed capture is an error."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    m = DROPPED.search(err or b"")
    if p.returncode not in (0, -signal.SIGINT):
        raise TargetError(f"the capture at {what} failed (tcpdump exit {p.returncode}): "
                          f"{(err or b'').decode(errors='replace')[-500:]}",
                          "check free disk space for the run directory and that tcpdump can write there")
    return int(m.group(1)) if m else 0


class SwitchWatch:
    """Polls ``alive()`` while a replay runs; a switch that dies stops the replay at once."""

    POLL_S = 0.5

    def __init__(self, alive: Callable[[], str | None], victim: subprocess.Popen) -> None:
        self.alive, self.victim = alive, victim
        self.died: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.POLL_S):
            why = self.alive()
            if why is not None:
                self.died = why
                if self.victim.poll() is None:
                    self.victim.kill()
                return

    def __enter__(self) -> "SwitchWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


class ReplaySession(AbstractContextManager["ReplaySession"]):
    """Captures at h1 and h2 held open across one or more sends (segments) of the same run.

    ``switch_alive`` returns why the switch is dead, or None; it is checked before,
    polled during every send and checked after, and a dead switch fails the run.
    ``rx_filter``: h2's capture filter (default: verdict-marked frames only; "" takes every frame, for plain
    forwarding). ``cpu``: the one CPU the sender runs on (testbeds sharded over a machine use one each).
    """

    def __init__(self, h1: Any, h2: Any, out_dir: Path, tag: str,
                 switch_alive: Callable[[], str | None] = lambda: None, rx_filter: str | None = None,
                 cpu: int = 0) -> None:
        self.h1, self.h2, self.alive, self.cpu = h1, h2, switch_alive, cpu
        self.files = ReplayFiles(out_dir / f"{tag}.sent.pcap", out_dir / f"{tag}.recv.pcap", "")
        self.rx_filter = f"ether proto 0x{ETH_P_VERDICT:04x}" if rx_filter is None else rx_filter
        self.sent = 0
        self._caps: list[tuple[subprocess.Popen, str]] = []
        self._logs: list[str] = []

    def _check(self, when: str) -> None:
        why = self.alive()
        if why is not None:
            raise TargetError(f"the switch is dead {when} the replay: {why}",
                              "see the switch log in the run directory; the run is marked failed")

    def __enter__(self) -> "ReplaySession":
        self._check("before")
        self.files.sent.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._caps.append((_start_capture(self.h2, "h2-eth0", "in", self.files.received, self.rx_filter),
                               "h2 (verdicts)"))
            self._caps.append((_start_capture(self.h1, "h1-eth0", "out", self.files.sent, ""), "h1 (send times)"))
        except BaseException:
            self._stop_captures()
            raise
        return self

    def send(self, pcap: Path, pace: Pace, frames: int, desc: str = "replay",
             during: Callable[[], AbstractContextManager[Any]] | None = None, limit: int = 0,
             quiet: bool = False) -> str:
        """Send ``pcap`` (``frames`` frames) at ``pace`` with a progress bar; returns tcpreplay's report.

        ``during`` is entered as soon as the sender starts and left when it ends (e.g. the control plane's
        loop, which runs while the traffic flows). ``quiet``: one segment of many (no bar, the report at
        debug level)."""
        extra = ["--limit", str(limit)] if limit else []
        # one CPU: the switch sees packets in send order and its per-flow state is never raced;
        # stdbuf: tcpreplay's per-second progress lines arrive as they are written
        cmd = ["taskset", "-c", str(self.cpu), "stdbuf", "-oL", "tcpreplay", "-i", "h1-eth0", "--stats=1", *pace.args(),
               *extra, str(pcap)]
        r = self.h1.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines: list[str] = []
        total = min(frames, limit) if limit else frames
        with SwitchWatch(self.alive, r) as watch, (during() if during else nullcontext()), \
                tqdm(total=total, desc=desc, unit="pkt", leave=False, mininterval=1.0, disable=quiet) as bar:
            assert r.stdout is not None
            for raw in r.stdout:
                line = raw.decode(errors="replace").rstrip()
                lines.append(line)
                m = PROGRESS.search(line)
                if m:
                    bar.update(min(int(m.group(1)), total) - bar.n)
            r.wait()
        text = "\n".join(lines)
        if watch.died is not None:
            raise TargetError(f"the switch died during the replay: {watch.died}",
                              "see the switch log in the run directory; the run is marked failed")
        if r.returncode != 0:
            raise TargetError(f"tcpreplay failed ({r.returncode}): {text[-800:]}",
                              "check the replay pcap and the replay settings")
        done = [ln for ln in lines if ln.startswith(("Actual", "Rated"))][-2:]
        log.log(logging.DEBUG if quiet else logging.INFO, "[replay] %s", " ".join(x.strip() for x in done))
        m = FAILED.search(text)
        self.files.failed_to_send += int(m.group(1)) if m else 0
        self.sent += total
        self._logs.append(text)
        return text

    def _stop_captures(self) -> None:
        for p, what in self._caps:
            n = _stop(p, what)
            if what.startswith("h2"):
                self.files.dropped_at_receiver = n
            else:
                self.files.dropped_at_sender = n
        self._caps = []

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: Any) -> None:
        if et is None:
            time.sleep(DRAIN_S)
        try:
            if et is None:
                self._check("after")
        finally:
            self._stop_captures()
            self.files.tcpreplay_log = "\n".join(self._logs)


def replay(h1: Any, h2: Any, pcap: Path, pace: Pace, out_dir: Path, tag: str, frames: int,
           switch_alive: Callable[[], str | None] = lambda: None,
           during: Callable[[], AbstractContextManager[Any]] | None = None,
           rx_filter: str | None = None, limit: int = 0) -> ReplayFiles:
    """One send of ``pcap`` in its own session (captures started and stopped around it)."""
    with ReplaySession(h1, h2, out_dir, tag, switch_alive, rx_filter) as s:
        s.send(pcap, pace, frames, desc=tag, during=during, limit=limit)
    return s.files

