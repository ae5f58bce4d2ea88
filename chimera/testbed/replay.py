"""Replay a pcap from h1 and capture at h1 (send times) and h2 (verdict-marked frames)."""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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
    sent: Path       # capture at h1 (outgoing): send timestamps
    received: Path   # capture at h2 (incoming, verdict-marked)
    tcpreplay_log: str


def _start_capture(node: Any, intf: str, direction: str, out: Path, bpf_filter: str) -> subprocess.Popen:
    # --immediate-mode: deliver each packet at once (TPACKET_V3 blocks otherwise hold the tail back)
    cmd = ["tcpdump", "-i", intf, "-Q", direction, "-w", str(out), "-s", "0", "-B", "32768", "-U", "-n", "--immediate-mode",
           "--time-stamp-precision=nano", "-Z", "root", bpf_filter]
    p = node.popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
    buf = b""
    while time.monotonic() - t0 < CAPTURE_READY_TIMEOUT_S:
        line = p.stderr.readline()
        buf += line
        if b"listening on" in line:
            return p
        if p.poll() is not None:
            break
    p.kill()
    raise TargetError(f"tcpdump on {node.name}:{intf} did not start: {buf.decode(errors='replace')[-500:]}",
                      "check that tcpdump runs as root in a network namespace")


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def replay(h1: Any, h2: Any, pcap: Path, cfg: ReplayConfig, out_dir: Path, tag: str) -> ReplayFiles:
    """Send ``pcap`` from h1 with the configured pacing; returns the two captures."""
    sent, received = out_dir / f"{tag}.sent.pcap", out_dir / f"{tag}.recv.pcap"
    cap_rx = _start_capture(h2, "h2-eth0", "in", received, f"ether proto 0x{ETH_P_VERDICT:04x}")
    cap_tx = None
    try:
        cap_tx = _start_capture(h1, "h1-eth0", "out", sent, "")
        pace = {"speed": ["--multiplier", str(cfg.speed)], "pps": ["--pps", str(cfg.pps)],
                "topspeed": ["--topspeed"]}[cfg.mode]
        extra = ["--limit", str(cfg.max_packets)] if cfg.max_packets else []
        # one CPU: the switch sees packets in send order and its per-flow state is never raced
        cmd = ["taskset", "-c", "0", "tcpreplay", "-i", "h1-eth0", *pace, *extra, str(pcap)]
        r = h1.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = r.communicate()
        text = out.decode(errors="replace")
        if r.returncode != 0:
            raise TargetError(f"tcpreplay failed ({r.returncode}): {text[-800:]}",
                              "check the replay pcap and the replay settings")
        log.info("[replay] %s", " ".join(line.strip() for line in text.splitlines() if "Actual" in line or "Rated" in line))
        time.sleep(DRAIN_S)
    finally:
        if cap_tx is not None:
            _stop(cap_tx)
        _stop(cap_rx)
    return ReplayFiles(sent, received, text)
