"""The pseudo-label loop: the slow loop re-learns the global layer from the switch's own confident verdicts.

What a live update may change is fixed by docs/pipeline.md ("State and versions"): a token leaves a flow's window
with exactly the value it entered with, so the per-token value tables cannot move under traffic. The global layer
can. Its entry for a query centroid c and protocol class pc holds G[y] = sum_g K[c, g] (W_out^T v_g)_y: the
global tokens' values seen through the class head, weighted by their kernel, with Gz = sum_g K[c, g]. It enters
no per-flow state, and the verdict header names its key: the packet's centroid (and the packet its protocol).
So this loop re-learns the value and class-head product where a switch can change it live:

1. **Calibrate.** Over the first ``calibration_s`` of the replay (inside the model's training hours) it reads
   every verdict the collector receives and keeps the ``gate_quantile`` quantile of their scores (the fused
   margin) as the confidence gate, and each entry's mix of confident verdicts as its reference.
2. **Read.** Every T_cp it reads the verdicts received since the last tick: parsed, no hard veto, a global-layer
   hit, score at or above the gate. Each counts for its entry and its label, with a memory of ``memory_ticks``
   ticks (counts decay by 1 - 1/memory_ticks per tick).
3. **Propose.** An entry with at least ``min_verdicts`` confident verdicts now and in the reference gets the
   class bias b_y = log p_now(y) - log p_ref(y) (Laplace-smoothed mixes, centred over the classes, clipped to
   ``max_logits``): the shift of its confident verdicts' mix since calibration. Moving every global token's
   projected value by b_y logits changes G[y] by b_y * s_nn * Gz (s_nn: the compiled readout scale, A/Z per
   logit), so that is the new entry: the compiled G plus that, each value kept within the compiled table's
   largest magnitude, so every accumulator bound proven at compile time still holds.
4. **Install** when some entry's bias moves by more than ``tau_logits``, at most ``max_entries`` entries per
   install (the largest moves first): the cap on churn. The entries ride the ordinary versioned install with the
   Map tables (and the prior rule's weights, where that loop runs too).

Self-training reinforces what the classifier already says where it is confident, and spreads it to the packets of
the same centroid where it is not (the cluster assumption). Whether that recovers concept drift or compounds its
errors is measured (the stability kind's Pseudo-Label and Chimera+Pseudo rows), not assumed.

Where the verdicts come from: on the reference, the segments it classified; on a switch under the trace clock,
the collector's capture (h2) of the frames the switch marked, read as it grows, in the frames' shim order. The
loop needs the trace clock (segments drained before each tick): on the switch's own clock it is refused.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from chimera.controlplane.loop import ControlStep, SlowLoop, SwitchControl
from chimera.controlplane.offline import ReferenceSegments
from chimera.controlplane.recluster import Proposal, churn
from chimera.data.pcap.files import PCAP_GLOBAL_HLEN, PCAP_MAGICS
from chimera.data.pcap.table import PacketTable
from chimera.data.pcap.walk import walk_pcap
from chimera.data.tokens import PROTO_CLASSES, proto_class
from chimera.errors import ConfigError
from chimera.formats.artifact import Artifact, GlobalTable
from chimera.formats.registers import Registers
from chimera.formats.rows import Cells
from chimera.testbed.outcome import InstallReport
from chimera.formats.verdict import FIELD_NAMES, NO_SEQ, VerdictFlag, strip

#: the verdicts the loop learns from: classified with the global layer, no hard rule forcing the label
_LEARN_FLAGS = (VerdictFlag.HARD_VETO | VerdictFlag.UNPARSED, VerdictFlag.GLOBAL_HIT)


class PseudoLabelConfig(BaseModel):
    """The pseudo-label loop's settings (times in simulated seconds, as the slow loop's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    calibration_s: float = Field(3600.0, gt=0, description="the first this many seconds of the replay calibrate "
                                 "the gate and each entry's reference mix (keep it inside the training hours)")
    gate_quantile: float = Field(0.5, ge=0, lt=1, description="the confidence gate: this quantile of the "
                                 "calibration verdicts' scores")
    memory_ticks: float = Field(4.0, ge=1, description="the counts' memory in T_cp ticks (decay 1 - 1/memory)")
    min_verdicts: float = Field(32.0, gt=0, description="an entry moves only with this many confident verdicts, "
                                "now (in memory) and in its reference")
    max_logits: float = Field(2.0, gt=0, le=16, description="the largest class bias an entry gets (logits)")
    tau_logits: float = Field(0.1, ge=0, description="install when some entry's bias moves by more than this")
    max_entries: int = Field(16, ge=1, description="the cap on churn: global entries changed per install")
    smoothing: float = Field(1.0, gt=0, description="Laplace smoothing of the mixes (verdicts per class)")


@dataclass(frozen=True)
class Marked:
    """Verdicts the collector received: per frame, the header's fields the loop reads and the protocol class."""

    label: np.ndarray
    flags: np.ndarray
    score: np.ndarray
    centroid: np.ndarray
    proto_class: np.ndarray

    @staticmethod
    def empty() -> "Marked":
        z = np.zeros(0, np.int64)
        return Marked(z, z, z, z, z)

    def __len__(self) -> int:
        return int(self.label.shape[0])


class VerdictSource(Protocol):
    """The verdicts received since the last call."""

    def since_last(self) -> Marked: ...


class ReferenceVerdicts:
    """The reference's own verdicts, segment by segment (chimera.controlplane.offline.ReferenceSegments)."""

    def __init__(self, seg: ReferenceSegments) -> None:
        self.seg, self.parts, self.row = seg, 0, 0

    def since_last(self) -> Marked:
        parts = self.seg.parts[self.parts:]
        self.parts = len(self.seg.parts)
        if not parts:
            return Marked.empty()
        n = sum(len(v) for v in parts)
        pc = proto_class(self.seg.table.proto[self.row:self.row + n]).astype(np.int64)
        self.row += n
        cat = (lambda f: np.concatenate([np.asarray(getattr(v, f), np.int64) for v in parts]))
        return Marked(cat("label"), cat("flags"), cat("score"), cat("centroid"), pc)


_FIELD = {n: FIELD_NAMES.index(n) for n in ("label", "flags", "score", "centroid", "seq")}


class CaptureVerdicts:
    """A switch's verdicts as the collector captured them (a libpcap file that grows while the replay runs):
    each call reads the records completed since the last one. The shim's index names the replayed frame, whose
    protocol the table gives. ``expected()``: frames sent so far; the read waits (briefly) for them."""

    SETTLE_S = 0.2
    WAIT_S = 2.0

    def __init__(self, path: Path, table: PacketTable, expected: Any) -> None:
        self.path, self.table, self.expected = path, table, expected
        self.offset, self.seen, self.big_endian = 0, 0, False

    def _read(self) -> list[tuple[int, ...]]:
        """Verdict fields of the records completed since the last read (chimera.data.pcap's record walk)."""
        if not self.path.is_file():
            return []
        with self.path.open("rb") as f:
            if self.offset == 0:
                head = f.read(PCAP_GLOBAL_HLEN)
                if len(head) < PCAP_GLOBAL_HLEN:
                    return []
                self.big_endian = PCAP_MAGICS[struct.unpack("<I", head[:4])[0]][0] == ">"
                self.offset = PCAP_GLOBAL_HLEN
            f.seek(self.offset)
            buf = np.frombuffer(f.read(), np.uint8)
        offs, caps, _, _, _, end, _ = walk_pcap(buf, self.big_endian, 0)
        self.offset += int(end)
        out = []
        for o, c in zip(offs.tolist(), caps.tolist()):
            try:
                out.append(strip(buf[o:o + c].tobytes())[0])
            except ValueError:
                continue
        return out

    def since_last(self) -> Marked:
        rows: list[tuple[int, ...]] = []
        t0 = last = time.monotonic()
        want = int(self.expected())
        while True:
            got = self._read()
            rows += got
            now = time.monotonic()
            if got:
                last = now
            if self.seen + len(rows) >= want or now - last > self.SETTLE_S or now - t0 > self.WAIT_S:
                break
            time.sleep(0.02)
        self.seen += len(rows)
        if not rows:
            return Marked.empty()
        a = np.asarray(rows, np.int64)
        seq = a[:, _FIELD["seq"]]
        ok = (seq != NO_SEQ) & (seq < len(self.table))
        a, seq = a[ok], seq[ok]
        pc = proto_class(self.table.proto[seq]).astype(np.int64)
        return Marked(a[:, _FIELD["label"]], a[:, _FIELD["flags"]], a[:, _FIELD["score"]], a[:, _FIELD["centroid"]],
                      pc)


def verdict_source(backend: Any) -> VerdictSource:
    """Where the loop reads verdicts on ``backend`` (a Segments): the reference's own, or a switch's capture."""
    if isinstance(backend, ReferenceSegments):
        return ReferenceVerdicts(backend)
    files, prep = getattr(getattr(backend, "session", None), "files", None), getattr(backend, "prep", None)
    if files is not None and prep is not None:   # chimera.targets.testbed's segments under the trace clock
        return CaptureVerdicts(Path(files.received), prep.replayed, lambda: getattr(backend, "i", 0))
    raise ConfigError("the pseudo-label loop reads the switch's verdicts between two segments of the trace, and "
                      f"{type(backend).__name__} offers none", "replay with clock: trace")


def entry_lookup(gt: GlobalTable, n_centroids: int) -> np.ndarray:
    """[C, PROTO_CLASSES] -> the first global entry matching (c, pc), -1 where none does."""
    out = np.full((n_centroids, PROTO_CLASSES), -1, np.int64)
    for c in range(n_centroids):
        for pc in range(PROTO_CLASSES):
            hit = np.nonzero(((c & gt.c_mask) == (gt.c_value & gt.c_mask))
                             & ((pc & gt.pc_mask) == (gt.pc_value & gt.pc_mask)))[0]
            out[c, pc] = hit[0] if hit.size else -1
    return out


@dataclass
class PseudoTick:
    """What one tick of the pseudo-label loop read and asked for (columns of control.csv)."""

    pseudo_verdicts: int = 0      # verdicts received since the last tick
    pseudo_confident: int = 0     # of them, those it learns from (gate, flags, a global entry)
    pseudo_gate: float = math.nan  # the score gate (nan while calibrating)
    pseudo_entries: int = 0       # entries with enough confident verdicts to move
    pseudo_shift: float = math.nan  # the largest move of an entry's bias it asks for (logits)
    churn_global: int = 0         # global entries the proposal changes


@dataclass
class PseudoLabel:
    """The learning half: counts of confident verdicts per global entry and class, and the biases they ask for."""

    base: Artifact
    cfg: PseudoLabelConfig
    lookup: np.ndarray = field(init=False)
    g0: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        gt = self.base.global_table
        if not len(gt):
            raise ConfigError("the pseudo-label loop re-learns the global layer, and this model has none",
                              "train with model.keys hybrid or global and model.n_global > 0")
        self.lookup = entry_lookup(gt, self.base.c("NUM_CENTROIDS"))
        self.g0, self.gz = gt.g.astype(np.int64).copy(), gt.gz.astype(np.float64)
        self.g_abs = int(np.abs(self.g0).max())
        self.per_logit = float(self.base.provenance.get("scales", {}).get("nn", 0.0))
        if self.per_logit <= 0:
            raise ConfigError("the artifact records no readout scale (provenance.scales.nn)", "recompile the model")
        self.reset()

    def reset(self) -> None:
        n, Y = len(self.g0), len(self.base.classes)
        self.counts = np.zeros((n, Y))
        self.ref = np.zeros((n, Y))
        self.cal_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.gate: float | None = None
        self.bias = np.zeros((n, Y))     # installed
        self.pending: np.ndarray | None = None

    def _learnable(self, m: Marked) -> tuple[np.ndarray, np.ndarray]:
        """(entry, mask) of the verdicts the loop may learn from."""
        bad, need = _LEARN_FLAGS
        c = np.clip(m.centroid, 0, self.lookup.shape[0] - 1)
        e = self.lookup[c, np.clip(m.proto_class, 0, PROTO_CLASSES - 1)]
        ok = ((m.flags & int(bad)) == 0) & ((m.flags & int(need)) != 0) & (e >= 0) & (m.label < self.counts.shape[1])
        return e, ok

    def observe(self, m: Marked, t_since_start_s: float, tick: PseudoTick) -> None:
        tick.pseudo_verdicts = len(m)
        e, ok = self._learnable(m)
        if self.gate is None:
            self.cal_rows.append((e[ok], m.label[ok], m.score[ok]))
            if t_since_start_s >= self.cfg.calibration_s:
                scores = np.concatenate([cs for _, _, cs in self.cal_rows]) if self.cal_rows else np.zeros(0)
                self.gate = float(np.quantile(scores, self.cfg.gate_quantile)) if scores.size else math.inf
                for ce, cl, cs in self.cal_rows:
                    keep = cs >= self.gate
                    np.add.at(self.ref, (ce[keep], cl[keep]), 1.0)
                self.cal_rows = []
            return
        tick.pseudo_gate = self.gate
        keep = ok & (m.score >= self.gate)
        tick.pseudo_confident = int(keep.sum())
        self.counts *= 1.0 - 1.0 / self.cfg.memory_ticks
        np.add.at(self.counts, (e[keep], m.label[keep]), 1.0)

    def target(self) -> tuple[np.ndarray, np.ndarray]:
        """(bias [entries, Y] the counts ask for, which entries have the evidence to move)."""
        a, Y = self.cfg.smoothing, self.counts.shape[1]
        n, r = self.counts.sum(1, keepdims=True), self.ref.sum(1, keepdims=True)
        ready = (n[:, 0] >= self.cfg.min_verdicts) & (r[:, 0] >= self.cfg.min_verdicts)
        b = np.log((self.counts + a) / (n + a * Y)) - np.log((self.ref + a) / (r + a * Y))
        b -= b.mean(1, keepdims=True)
        b = np.clip(b, -self.cfg.max_logits, self.cfg.max_logits)
        b[~ready] = 0.0
        return b, ready

    def propose(self, tick: PseudoTick) -> np.ndarray | None:
        """The entries' next biases (the churn cap applied), or None: nothing moves by more than tau."""
        if self.gate is None:
            return None
        b, ready = self.target()
        tick.pseudo_entries = int(ready.sum())
        move = np.abs(b - self.bias).max(1)
        tick.pseudo_shift = float(move.max()) if move.size else math.nan
        cand = np.nonzero(move > self.cfg.tau_logits)[0]
        if not cand.size:
            return None
        take = cand[np.argsort(-move[cand], kind="stable")][: self.cfg.max_entries]
        nxt = self.bias.copy()
        nxt[take] = b[take]
        tick.churn_global = int(take.size)
        return nxt

    def g_of(self, bias: np.ndarray) -> np.ndarray:
        """The global entries' G for ``bias``: the compiled G moved by bias * s_nn * Gz, within the compiled range."""
        d = np.rint(bias * self.per_logit * self.gz[:, None]).astype(np.int64)
        return np.clip(self.g0 + d, -self.g_abs, self.g_abs)

    def with_bias(self, art: Artifact, bias: np.ndarray) -> Artifact:
        gt = art.global_table
        return dataclasses.replace(art, global_entries=dataclasses.replace(gt, g=self.g_of(bias)).stored())


def global_churn(old: Artifact, new: Artifact) -> int:
    """Global-layer entries that differ between two artifacts."""
    a, b = old.global_table.g, new.global_table.g
    return int(np.any(a != b, axis=1).sum()) if a.shape == b.shape else len(new.global_table)


@dataclass
class PseudoLoop(SlowLoop):
    """The slow loop with the pseudo-label learner: every tick, the Map (and prior) part as configured, then the
    global layer from the verdicts received since the last tick; one versioned install carries both."""

    pseudo: PseudoLabelConfig = field(default_factory=PseudoLabelConfig)
    ticks: list[PseudoTick] = field(default_factory=list)

    def reset(self) -> None:
        super().reset()
        self.learner = PseudoLabel(self.base, self.pseudo)
        self.ticks = []
        self._source: VerdictSource | None = None
        self._backend: Any = None
        self._switch: SwitchControl | None = None

    def _verdicts(self, switch: SwitchControl | None) -> Marked:
        backend = getattr(switch, "backend", None)
        if backend is None:
            raise ConfigError("the pseudo-label loop runs on the trace clock (it reads the verdicts of each segment)",
                              "replay with clock: trace")
        if self._source is None or backend is not self._backend:
            self._source, self._backend = verdict_source(backend), backend
        return self._source.since_last()

    def artifact_for(self, p: Proposal) -> Artifact:
        art = super().artifact_for(p)
        bias = self.learner.pending if self.learner.pending is not None else self.learner.bias
        return self.learner.with_bias(art, bias) if np.any(bias) else art

    def run_step(self, switch: SwitchControl, t_trace_s: float) -> ControlStep:
        """SlowLoop's tick (read, decide, install), with the switch kept for ``propose`` to read its verdicts."""
        self._switch = switch
        return super().run_step(switch, t_trace_s)

    def propose(self, regs: Registers, t_trace_s: float) -> tuple[ControlStep, Proposal | None]:
        """The Map (and prior) proposal, then the global layer's: one proposal carries both."""
        st, p = super().propose(regs, t_trace_s)
        tick = PseudoTick()
        self.ticks.append(tick)
        t0 = time.perf_counter()
        self.learner.observe(self._verdicts(self._switch), t_trace_s * self.compression, tick)
        self.learner.pending = self.learner.propose(tick)
        st.propose_ms = (0.0 if math.isnan(st.propose_ms) else st.propose_ms) + (time.perf_counter() - t0) * 1e3
        if self.learner.pending is None:
            return st, p
        if p is None:
            mapv = self.current.successor()
            p = Proposal(mapv, st.delta, st.samples, churn(self.current, mapv), self.fitter.centers, 0.0)
        st.churn = int(p.churn["total"]) + tick.churn_global
        return st, p

    def installed(self, st: ControlStep, p: Proposal, art: Artifact, rep: InstallReport,
                  occ: np.ndarray | None = None) -> None:
        super().installed(st, p, art, rep, occ)
        if self.learner.pending is not None:
            self.learner.bias = self.learner.pending
        self.learner.pending = None

    def failed(self, st: ControlStep, err: BaseException) -> None:
        self.learner.pending = None   # the old version, and its biases, stay active
        super().failed(st, err)

    def log_rows(self) -> list[Cells]:
        return [{**dataclasses.asdict(s), **dataclasses.asdict(t)} for s, t in zip(self.steps, self.ticks)]


__all__ = ["CaptureVerdicts", "Marked", "PseudoLabel", "PseudoLabelConfig", "PseudoLoop",
           "PseudoTick", "ReferenceVerdicts", "entry_lookup", "global_churn", "verdict_source"]
