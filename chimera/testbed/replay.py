"""Replay a pcap from h1 and capture at h1 (send times) and h2 (verdict-marked frames).

Every outcome the tools report is read, not assumed: tcpreplay's "Failed
packets" (frames the sender could not put on the wire, e.g. larger than its
MTU), tcpdump's exit status and its "dropped by kernel" counts, and whether the
switch stayed alive before, during and after the replay. The collector turns
them into the accounting of every replayed frame.
"""

from __future__ import annotations

import logging
import os
import re
import select
import signal
import threading
import subprocess
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.errors import TargetError
from chimera.formats.verdict import ETH_P_VERDICT

log = logging.getLogger(__name__)
CAPTURE_READY_TIMEOUT_S = 10.0
DRAIN_S = 1.0


class ReplayConfig(BaseModel):
    """How the testbed replays the test split (targets other than reference).

    Inter-arrival time is a model feature: only ``speed: 1.0`` (original timing)
    reproduces the features the model was trained on. Faster replay (a higher
    multiplier, fixed pps, top speed) is for throughput and latency runs, and
    shifts the inter-arrival buckets, which the report then shows as lower F1.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["speed", "pps", "topspeed"] = "speed"
    speed: float = Field(1.0, gt=0, description="multiplier of the original timing (mode=speed)")
    pps: int = Field(2000, ge=1, description="fixed rate (mode=pps)")
    max_packets: int = Field(0, ge=0, description="0 = all test packets")


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


def replay(h1: Any, h2: Any, pcap: Path, cfg: ReplayConfig, out_dir: Path, tag: str,
           switch_alive: Callable[[], str | None] = lambda: None,
           during: Callable[[], AbstractContextManager[Any]] | None = None,
           rx_filter: str | None = None) -> ReplayFiles:
    """Send ``pcap`` from h1 with the configured pacing; returns the two captures and the tools' counts.

    ``switch_alive`` returns why the switch is dead, or None; it is checked before,
    polled during and checked after the replay, and a dead switch fails the run.
    ``during`` is entered as soon as the sender starts and left when it ends (e.g. the
    control plane's loop, which runs while the traffic flows). ``rx_filter``: h2's capture filter
    (default: verdict-marked frames only; "" takes every frame, for plain forwarding).
    """
    def check(when: str) -> None:
        why = switch_alive()
        if why is not None:
            raise TargetError(f"the switch is dead {when} the replay: {why}",
                              "see the switch log in the run directory; the run is marked failed")

    sent, received = out_dir / f"{tag}.sent.pcap", out_dir / f"{tag}.recv.pcap"
    check("before")
    cap_rx = _start_capture(h2, "h2-eth0", "in", received,
                            f"ether proto 0x{ETH_P_VERDICT:04x}" if rx_filter is None else rx_filter)
    cap_tx = None
    text = ""
    drops = {"h1": 0, "h2": 0}
    try:
        cap_tx = _start_capture(h1, "h1-eth0", "out", sent, "")
        pace = {"speed": ["--multiplier", str(cfg.speed)], "pps": ["--pps", str(cfg.pps)],
                "topspeed": ["--topspeed"]}[cfg.mode]
        extra = ["--limit", str(cfg.max_packets)] if cfg.max_packets else []
        # one CPU: the switch sees packets in send order and its per-flow state is never raced
        cmd = ["taskset", "-c", "0", "tcpreplay", "-i", "h1-eth0", *pace, *extra, str(pcap)]
        r = h1.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with SwitchWatch(switch_alive, r) as watch, (during() if during else nullcontext()):
            out, _ = r.communicate()
        text = out.decode(errors="replace")
        if watch.died is not None:
            raise TargetError(f"the switch died during the replay: {watch.died}",
                              "see the switch log in the run directory; the run is marked failed")
        if r.returncode != 0:
            raise TargetError(f"tcpreplay failed ({r.returncode}): {text[-800:]}",
                              "check the replay pcap and the replay settings")
        log.info("[replay] %s", " ".join(line.strip() for line in text.splitlines() if "Actual" in line or "Rated" in line))
        time.sleep(DRAIN_S)
        check("after")
    finally:
        if cap_tx is not None:
            drops["h1"] = _stop(cap_tx, "h1 (send times)")
        drops["h2"] = _stop(cap_rx, "h2 (verdicts)")
    m = FAILED.search(text)
    return ReplayFiles(sent, received, text, int(m.group(1)) if m else 0, drops["h2"], drops["h1"])
