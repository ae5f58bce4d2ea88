"""Sequences of frames with their timing and live installs, and batches of them for one replay.

A ``Sequence`` is what the generator draws and the shrinker cuts: frames with the gap before each (the clock
may step back), and Map installs before given frames (some failing on purpose). Time is the trace's: a
sequence starts at trace time 0 of its own; a ``Batch`` lays sequences end to end, each at a multiple of
2^42 ns (where the 32-bit flow clock of 2^10 ns units wraps), so every sequence sees the wrap exactly where it
would alone. A batch is one pcap, one replay per target and one reference run; its frames carry the shim index,
so a difference is traced back to its sequence and frame.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chimera.controlplane.recluster import MapVersion
from chimera.controlplane.schedule import ScriptedInstall, ScriptedInstalls
from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import write_pcap
from chimera.formats.artifact import Artifact
from chimera.fuzz.frames import FrameSpec, build

#: the flow clock wraps every 2^32 units of 2^IAT_SHIFT (10) ns
WRAP_NS = 1 << 42
#: the batch's trace time starts here (2^24-aligned: the shim's origin, chimera.formats.shim)
BASE_NS = WRAP_NS


@dataclass(frozen=True)
class Event:
    """One frame, ``gap_ns`` after the previous frame of its sequence (negative: the clock steps back)."""

    frame: FrameSpec
    gap_ns: int = 0
    why: str = ""


@dataclass(frozen=True)
class InstallSpec:
    """A Map install before frame ``before``; ``fail_after``: it fails after that many writes (fault injection)."""

    before: int
    seed: int
    fail_after: int | None = None


@dataclass(frozen=True)
class Sequence:
    events: tuple[Event, ...]
    installs: tuple[InstallSpec, ...] = ()

    def __len__(self) -> int:
        return len(self.events)

    def local_ns(self) -> np.ndarray:
        """Each frame's trace time since the sequence's start (the first frame is at 0, none before it)."""
        gaps = np.array([0, *(e.gap_ns for e in self.events[1:])], np.int64) if self.events else np.zeros(0, np.int64)
        return np.maximum(np.cumsum(gaps), 0)

    def span_wraps(self) -> int:
        """How many 2^42 ns periods the sequence occupies."""
        t = self.local_ns()
        return int(t.max() // WRAP_NS) + 1 if t.size else 1

    def without(self, drop: set[int]) -> "Sequence":
        """The sequence less the frames at ``drop`` (installs keep their place among the frames that stay)."""
        keep = [i for i in range(len(self.events)) if i not in drop]
        pos = {old: new for new, old in enumerate(keep)}
        installs = tuple(dataclasses.replace(s, before=next((pos[i] for i in keep if i >= s.before), len(keep)))
                         for s in self.installs)
        return Sequence(tuple(self.events[i] for i in keep), installs)

    def without_installs(self, drop: set[int]) -> "Sequence":
        return Sequence(self.events, tuple(s for i, s in enumerate(self.installs) if i not in drop))

    def describe(self, limit: int = 40) -> list[str]:
        """One line per frame and install (what a failure report shows)."""
        t = self.local_ns()
        inst: dict[int, list[InstallSpec]] = {}
        for s in self.installs:
            inst.setdefault(s.before, []).append(s)
        out = []
        for i, e in enumerate(self.events[:limit]):
            for s in inst.get(i, []):
                out.append(f"  install map seed {s.seed}" + (f" (fails after {s.fail_after} writes)"
                                                              if s.fail_after is not None else ""))
            out.append(f"{i:4d} t={int(t[i])} ns  {e.frame.describe()}  [{e.why}]")
        if len(self.events) > limit:
            out.append(f"... {len(self.events) - limit} more frames")
        return out


def map_variant(base: Artifact, seed: int, version: int) -> Artifact:
    """Another version of ``base``'s Map tables (as a control plane would install): the centroid map redrawn,
    the length bins' boundaries moved (still increasing from 0); everything else as ``base``."""
    rng = np.random.default_rng(seed)
    C = base.c("NUM_CENTROIDS")
    cur = MapVersion.of(base)

    def moved(lo: np.ndarray) -> np.ndarray:
        if lo.size <= 1:
            return lo.copy()
        gaps = np.diff(np.r_[lo, 65536]).astype(np.int64)
        gaps = np.maximum(1, (gaps * rng.uniform(0.5, 1.5, gaps.size)).astype(np.int64))
        out = np.r_[0, np.cumsum(gaps)[:-1]]
        return np.minimum(out, 65535 - (lo.size - 1 - np.arange(lo.size))).astype(np.int64)

    new = MapVersion(version & 0xFFFF, moved(cur.len_lo), moved(cur.len_fine_lo),
                     rng.integers(0, C, cur.map.size).astype(np.int64))
    return new.apply(base)


@dataclass
class Batch:
    """Sequences laid end to end on one trace timeline, with the artifacts their installs make."""

    base: Artifact
    sequences: list[Sequence]
    frames: list[bytes] = field(init=False)
    ts_ns: np.ndarray = field(init=False)
    starts: list[int] = field(init=False)        # first frame of each sequence
    script: ScriptedInstalls = field(init=False)

    def __post_init__(self) -> None:
        frames: list[bytes] = []
        ts: list[np.ndarray] = []
        script: list[ScriptedInstall] = []
        self.starts = []
        offset, version = BASE_NS, self.base.c("MAP_VERSION")
        for seq in self.sequences:
            self.starts.append(len(frames))
            for s in seq.installs:
                version = (version + 1) & 0xFFFF
                script.append(ScriptedInstall(len(frames) + s.before, map_variant(self.base, s.seed, version),
                                              s.fail_after))
            frames += [build(e.frame) for e in seq.events]
            ts.append(offset + seq.local_ns())
            offset += seq.span_wraps() * WRAP_NS
        self.frames = frames
        self.ts_ns = np.concatenate(ts) if ts else np.zeros(0, np.int64)
        self.script = ScriptedInstalls(self.base, script)

    def sequence_of(self, frame: int) -> tuple[int, int]:
        """(sequence index, frame index within it) of a batch frame."""
        k = int(np.searchsorted(self.starts, frame, side="right")) - 1
        return k, frame - self.starts[k]

    def write(self, path: Path) -> PacketTable:
        """The batch as a pcap (frames as built, trace timestamps), parsed back (what every target classifies)."""
        write_pcap(path, self.frames, self.ts_ns)
        return read_pcap(path)
