"""What a replay through a switch did, typed: the accounting of every frame, latency, rates, the switch's
counters and the conformance check. ``ReplayOutcome.columns`` is the one place these become table columns
(the variants table, the latency and throughput tables, the nightly read them by these names)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from chimera.formats.rows import Cells


@dataclass(frozen=True)
class Accounting:
    """Where every replayed frame ended: exactly one of these, and they sum to ``replayed``."""

    replayed: int
    verdicts: int                # arrived at h2 with a verdict
    not_sent: int                # tcpreplay could not send them (reason below)
    not_sent_reason: str
    dropped_by_capture: int      # the switch forwarded them; the kernel dropped them before tcpdump at h2
    lost: int                    # unexplained: sent, not captured, no tool reports a drop
    cut_frames: int = 0          # sent cut to the replay snap (chimera.formats.snap): headers and IP length kept

    @property
    def unaccounted(self) -> int:
        return self.replayed - self.verdicts - self.not_sent - self.dropped_by_capture - self.lost


@dataclass(frozen=True)
class ProgramTime:
    """What the switch's own program cost, as its kernel or runtime counts it (eBPF: BPF_ENABLE_STATS's
    run_time_ns and run_cnt over one replay): a second measure of latency beside the packets' timestamps."""

    run_time_ns: int
    runs: int

    @property
    def ns_per_run(self) -> float | None:
        return self.run_time_ns / self.runs if self.runs else None


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles in µs; None where nothing was measured."""

    switch_p50_us: float | None = None
    switch_p99_us: float | None = None
    host_p50_us: float | None = None
    host_p99_us: float | None = None


@dataclass(frozen=True)
class PerPacketLatency:
    """Per replayed packet, µs, NaN where unknown."""

    switch_us: np.ndarray
    host_us: np.ndarray


@dataclass(frozen=True)
class Rates:
    """pps over each capture's span: offered by h1, seen by the switch, delivered to h2."""

    sent_pps: float | None = None
    switch_pps: float | None = None
    recv_pps: float | None = None
    #: h1's and h2's capture times (ns, one machine's clock) of the first and last frame: testbeds that ran at
    #: once are one replay from the earliest first to the latest last (chimera.targets.sharded)
    sent_span_ns: tuple[int, int] | None = None
    recv_span_ns: tuple[int, int] | None = None
    sent: int = 0
    received: int = 0


@dataclass(frozen=True)
class SwitchCounters:
    """The dataplane's counters (docs/pipeline.md); the targets' extra ones where they keep them."""

    evictions: int
    new_flows: int
    parsed: int
    unparsed: int
    samples: int | None = None
    headroom_fail: int | None = None
    redirected: int | None = None

    @staticmethod
    def of(d: dict[str, Any] | None) -> "SwitchCounters | None":  # JSON in: the counters a switch's node reported
        if not d:
            return None
        names = {f.name for f in dataclasses.fields(SwitchCounters)}
        return SwitchCounters(**{k: int(v) for k, v in d.items() if k in names})


@dataclass(frozen=True)
class Conformance:
    """The reference on exactly the frames the switch classified, on the same clock."""

    reference_mismatches: int           # packets whose verdict differs (0 is the only acceptable value)
    register_mismatches: int | None     # state registers that differ; None: none could be read (unknown)
    checked: int                        # packets compared


@dataclass(frozen=True)
class InstallReport:
    """What one live install cost on the target."""

    seconds: float          # Δt_install: first write to the acknowledged flip
    entries_written: int    # writes the target issued (rows or P4Runtime updates)
    simulated: bool = False  # the schedule's configured Δt_install (control.reference_install_ms), not a measurement


@dataclass(frozen=True)
class ForwardingOutcome:
    """Plain forwarding on the same path (no classification): the throughput figure's yardstick."""

    replayed: int
    sent: int
    verdicts: int                       # frames delivered to h2
    not_sent: int
    dropped_by_capture: int
    lost: int
    sent_pps: float | None
    recv_pps: float | None


@dataclass(frozen=True)
class ReplayOutcome:
    clock: str                          # trace | switch: what the switch classified on
    pace: str                           # how the frames were sent
    accounting: Accounting
    rates: Rates
    latency: LatencySummary
    foreign_frames: int = 0
    unmarked_frames: int = 0
    attempts: int = 1                   # trace clock: replays of the same plan after a loss (pace halved)
    conformance: Conformance | None = None
    install_ms: float | None = None
    counters: SwitchCounters | None = None

    def columns(self) -> Cells:
        """The outcome as table columns (one row per run of a variant/path)."""
        a, c, lat, r = self.accounting, self.conformance, self.latency, self.rates
        return {"clock": self.clock, "pace": self.pace, "replay_attempts": self.attempts,
                "replayed": a.replayed, "verdicts": a.verdicts, "not_sent": a.not_sent,
                "not_sent_reason": a.not_sent_reason, "dropped_by_capture": a.dropped_by_capture, "lost": a.lost,
                "cut_frames": a.cut_frames,
                "foreign_frames": self.foreign_frames, "unmarked_frames": self.unmarked_frames,
                "reference_mismatches": c.reference_mismatches if c else None,
                "register_mismatches": c.register_mismatches if c else None,
                "conformance_checked": c.checked if c else None, "install_ms": self.install_ms,
                "latency_switch_p50_us": lat.switch_p50_us, "latency_switch_p99_us": lat.switch_p99_us,
                "latency_host_p50_us": lat.host_p50_us, "latency_host_p99_us": lat.host_p99_us,
                "sent_pps": r.sent_pps, "switch_pps": r.switch_pps, "recv_pps": r.recv_pps}

    @staticmethod
    def column_types() -> dict[str, str]:
        """The dtype of every column ``columns`` writes (table schemas take them from here)."""
        ints = ("replay_attempts", "replayed", "verdicts", "not_sent", "dropped_by_capture", "lost", "cut_frames",
                "foreign_frames",
                "unmarked_frames", "reference_mismatches", "register_mismatches", "conformance_checked")
        strs = ("clock", "pace", "not_sent_reason")
        cols = ReplayOutcome("", "", Accounting(0, 0, 0, "", 0, 0), Rates(), LatencySummary()).columns()
        return {k: "int" if k in ints else "str" if k in strs else "float" for k in cols}


@dataclass(frozen=True)
class Delivery:
    """What one replay delivered, whichever path carried it (a classifying switch's ReplayOutcome, or plain
    forwarding's ForwardingOutcome): the typed view the throughput and latency kinds read (None: not measured)."""

    replayed: int | None = None
    verdicts: int | None = None
    not_sent: int | None = None
    dropped_by_capture: int | None = None
    lost: int | None = None
    sent_pps: float | None = None
    switch_pps: float | None = None
    recv_pps: float | None = None
    reference_mismatches: int | None = None

    @staticmethod
    def of(o: "ReplayOutcome | ForwardingOutcome | None") -> "Delivery":
        if o is None:
            return Delivery()
        if isinstance(o, ForwardingOutcome):
            return Delivery(o.replayed, o.verdicts, o.not_sent, o.dropped_by_capture, o.lost, o.sent_pps,
                            recv_pps=o.recv_pps)
        a = o.accounting
        return Delivery(a.replayed, a.verdicts, a.not_sent, a.dropped_by_capture, a.lost, o.rates.sent_pps,
                        o.rates.switch_pps, o.rates.recv_pps,
                        o.conformance.reference_mismatches if o.conformance else None)
