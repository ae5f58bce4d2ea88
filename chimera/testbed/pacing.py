"""The replay rate a switch holds with 0 loss: measured once per dataplane build and host, then cached.

Under the trace clock a verdict does not depend on the replay's pace, so a run
replays at a fixed rate the target is known to hold. That rate is measured here
with a ladder of fixed rates on the run's own frames (the highest rate with 0
frames lost, unexplained or dropped, times a safety factor), and cached next to
the dataplane build it was measured for, keyed by the host (CPU model, cores,
kernel): another machine measures again. A later run that loses frames anyway
(a busy host) halves the rate, replays from a clean switch, and records the
lower rate in the cache, so the next run starts from what worked.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)
#: rates tried, lowest first (pps); the first step that loses a frame ends the ladder (targets set their own)
LADDER = (500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)
#: a ladder step sends at most this many frames (a short burst at the top rates)
PROBE_MAX = 20_000
#: the replay rate is this share of the highest zero-loss rate measured
SAFETY = 0.6
#: each ladder step sends about this many seconds of frames (at least PROBE_MIN frames)
PROBE_S = 1.5
PROBE_MIN = 300


def host_key() -> str:
    """The machine a rate belongs to: CPU model, cores, kernel."""
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    raw = f"{cpu}|{os.cpu_count()}|{platform.release()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


@dataclass
class PaceRecord:
    """A measured rate: the highest zero-loss rate, what a run uses, and the ladder it came from."""

    target: str
    host: str
    zero_loss_pps: int          # the highest rate of the ladder with 0 frames lost
    lower_bound: bool           # no step lost: the true limit is higher (the sender's or the ladder's top)
    pps: int                    # what runs use: SAFETY x zero_loss_pps, halved after each lossy run
    measured: str
    steps: list[dict[str, int]]
    halvings: int = 0


class PaceCache:
    """``<dir>/<program key>-<host>.json``: one program's measured rate on one machine."""

    def __init__(self, directory: Path, key: str) -> None:
        self.path = directory / f"{key}-{host_key()}.json"
        self.target = key

    def load(self) -> PaceRecord | None:
        try:
            return PaceRecord(**json.loads(self.path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, rec: PaceRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(rec), indent=1))
        os.replace(tmp, self.path)

    def halve(self, rec: PaceRecord, lost: int) -> PaceRecord:
        """A run at ``rec.pps`` lost ``lost`` frames: the next try (and the next run) uses half the rate."""
        rec.pps = max(rec.pps // 2, 1)
        rec.halvings += 1
        self.save(rec)
        log.warning("[pace] %s lost %d frames; replaying again at %d pps (cached in %s)", self.target, lost, rec.pps,
                    self.path)
        return rec


def calibrate(target: str, probe: Callable[[int, int], int], ladder: tuple[int, ...] = LADDER) -> PaceRecord:
    """Walk ``ladder``: ``probe(pps, frames)`` replays ``frames`` frames at ``pps`` and returns how many were lost
    (unexplained or dropped by the capture). The record's rate is SAFETY x the highest rate that lost none."""
    steps: list[dict[str, int]] = []
    best = 0
    for pps in ladder:
        frames = min(PROBE_MAX, max(PROBE_MIN, int(pps * PROBE_S)))
        lost = probe(pps, frames)
        steps.append({"pps": pps, "frames": frames, "lost": lost})
        log.info("[pace] %s: %d frames at %d pps: %d lost", target, frames, pps, lost)
        if lost:
            break
        best = pps
    if best == 0:
        best = max(ladder[0] // 4, 1)  # even the lowest step lost frames: go well below it
        log.warning("[pace] %s lost frames even at %d pps; runs will use %d pps", target, ladder[0], best)
    lower = not steps[-1]["lost"]
    return PaceRecord(target, host_key(), best, lower, max(int(best * SAFETY), 1),
                      time.strftime("%Y-%m-%dT%H:%M:%S"), steps)
