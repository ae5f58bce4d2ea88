"""The base of targets that run on the Mininet testbed: replay from h1, verdicts at h2, conformance.

One testbed serves all variants of a run: each variant's artifact is loaded
into s1 (the subclass's ``switch_cls``) on a clean switch, the frames are
replayed from h1 and collected at h2.

Clocks (docs/pipeline.md, "Clocks"):

- ``trace``: every frame carries the trace-time shim (its capture time since the
  trace's origin, and its index); the switch classifies on that clock, so the
  replay runs at a rate the target holds with 0 loss (measured once per build and
  host, chimera.testbed.pacing), and a run that loses frames anyway is replayed
  again at half the rate from a clean switch. With the slow loop, the replay is cut
  at every T_cp of trace time (chimera.controlplane.loop.run_schedule): the
  switch runs exactly the schedule the reference runs.
- ``switch``: the switch's own clock; the replay keeps the original timing (a
  multiplier of it), idle gaps shortened by feature-preserving gap compression.

Each run checks conformance: the reference, fed exactly the frames the switch
classified on the clock the switch used (the shim's trace time, or the switch's
own ingress timestamps), must give the same verdict for every packet and the
same state registers.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chimera import paths
from chimera.controlplane.live import LiveControl
from chimera.controlplane.loop import SlowLoop
from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import captured_frames, normalized_frames, write_pcap
from chimera.errors import ConfigError, TargetError
from chimera.formats import shim
from chimera.formats.artifact import Artifact
from chimera.formats.registers import STATE_REGISTERS, Registers, StateName
from chimera.formats.verdict import VerdictFlag
from chimera.reference.pipeline import Verdicts, run_reference, run_reference_versions
from chimera.targets.base import BaselineResult, Capability, Target, TargetResult
from chimera.testbed.collect import Collected, account, collect, latency_summary, per_packet_latency, rates
from chimera.testbed.nodes import BuildOptions, TargetSwitch
from chimera.formats.snap import REPLAY_SNAP, SENDER_MTU, snap
from chimera.testbed.outcome import Conformance, InstallReport, ReplayOutcome, SwitchCounters
from chimera.testbed.pacing import LADDER, PaceCache, PaceRecord, calibrate
from chimera.testbed.replay import Pace, ReplayConfig, ReplayPlan, ReplaySession
from chimera.testbed.timeline import Compression, compress_gaps
from chimera.testbed.topology import Testbed

log = logging.getLogger(__name__)
DEFAULT_BUILD_DIR = paths.BUILD
#: replays of one plan under the trace clock when frames are lost (the rate halves each time)
MAX_ATTEMPTS = 4
#: state registers compared with the reference after a run (name in registers() -> SwitchState attribute);
#: ``coverage`` only where the switch was built with -DCHIMERA_COVERAGE (the fuzzer's builds)
REGISTERS: dict[StateName, str] = {name: name for name in STATE_REGISTERS}
#: draining a segment: wait at most this long for the switch's counters to stop moving
DRAIN_TIMEOUT_S = 5.0
#: the constants that size a dataplane's work per packet (a pace is measured per program and these)
PACE_CONSTANTS = ("WINDOW", "RF_FEATURES", "D_V", "NUM_CLASSES", "NUM_CENTROIDS", "HARD_ENTRIES", "SOFT_ENTRIES",
                  "SOFT_RULES", "GLOBAL_ENTRIES", "FLOW_SLOTS")


def conformance(art: Artifact | dict[int, Artifact], replayed: PacketTable, got: Verdicts, received: np.ndarray,
                clock_ns: np.ndarray, regs: Registers, trace_clock: bool = False, lost: int = 0) -> Conformance:
    """The reference on exactly what the switch classified, on the clock it classified on (``clock_ns`` per
    replayed frame: the shim's trace time, or the switch's own ingress timestamps).

    The verdict flag TRACE_CLOCK says what the frame carried, not what the pipeline computed: it is compared
    apart (every verdict of a trace-clock replay has it, no other does) and masked from the flags compared.

    ``art`` may be every map version a run installed: the reference then switches versions at exactly the
    packets where the switch did (the map version in each verdict header is the switch's own record).

    ``lost``: frames of the replay that reached no capture. The switch's state registers may have seen them, the
    reference never does: register differences are then expected, and logged as such (a warning naming the
    loss), not as a conformance failure. They are still counted.
    """
    rows = np.flatnonzero(received)
    if isinstance(art, dict):
        try:
            ref, ref_state = run_reference_versions(art, replayed.take(rows), got.map_version[rows],
                                                    ts_ns=clock_ns[rows])
        except KeyError as e:
            raise TargetError(f"conformance: {e.args[0]}", "a verdict names a map version the control plane never "
                              "installed: a switch bug (or a foreign switch on the link)") from None
    else:
        ref, ref_state = run_reference(art, replayed.take(rows), ts_ns=clock_ns[rows])
    mism = 0
    clock_flag = (got.flags[rows] & VerdictFlag.TRACE_CLOCK) > 0
    wrong_clock = int(np.sum(clock_flag != trace_clock))
    if wrong_clock:
        log.error("conformance: %d verdicts %s the TRACE_CLOCK flag", wrong_clock,
                  "lack" if trace_clock else "carry")
    for f in Verdicts.HEADER_FIELDS:
        mine = getattr(got, f)[rows]
        if f == "flags":
            mine = mine & ~np.uint8(VerdictFlag.TRACE_CLOCK)
        mism_f = int(np.sum(getattr(ref, f) != mine))
        if mism_f:
            log.error("conformance: %d packets differ from the reference in '%s'", mism_f, f)
        mism = max(mism, mism_f)
    mism = max(mism, wrong_clock)
    reg_mism: int | None = None
    for name, attr in REGISTERS.items():
        if name not in regs:
            continue
        diff = int(np.sum(np.atleast_1d(np.asarray(regs[name])) != np.atleast_1d(getattr(ref_state, attr))))
        if diff and lost:
            log.warning("conformance: %d '%s' registers differ from the reference, as expected where %d frames were "
                        "lost: the switch's state may have seen frames the reference did not", diff, name, lost)
        elif diff:
            log.error("conformance: %d '%s' registers differ from the reference", diff, name)
        reg_mism = (reg_mism or 0) + diff
    return Conformance(mism, reg_mism, int(rows.size))


@dataclass
class Prepared:
    """One table prepared for replay under one clock: the frames, their pcap, the clock they carry."""

    frames: list[bytes]            # as captured, cut to the replay snap (what the collector recovers)
    sent: list[bytes]              # as sent (shimmed under the trace clock)
    pcap: Path                     # what tcpreplay sends (``sent``)
    replayed: PacketTable          # the frames parsed back (what the reference classifies)
    clock_ns: np.ndarray | None    # trace clock: each frame's trace time (the shim's); switch clock: None
    overhead: int                  # bytes added to each frame on the wire (the shim)
    compression: Compression | None
    span_ns: int
    cut: np.ndarray | None = None  # per frame: the replay snap shortened it (chimera.formats.snap)


class TestbedTarget(Target):
    """Runs variants on the Mininet testbed with ``switch_cls`` as s1 (one testbed per target instance)."""

    name = "testbed"
    switch_cls: ClassVar[type[TargetSwitch]]
    capabilities = Capability.TESTBED | Capability.LIVE_INSTALL | Capability.REGISTER_READ | Capability.TRACE_CLOCK
    #: rates the zero-loss calibration tries, and the rate a plan assumes before one is measured
    ladder: ClassVar[tuple[int, ...]] = LADDER
    assumed_pps: ClassVar[int] = 1000

    clocks = ("trace", "switch")

    def __init__(self, build: BuildOptions | None = None, build_dir: Path | None = None) -> None:
        super().__init__(build, build_dir)
        self.build_dir: Path = build_dir or DEFAULT_BUILD_DIR
        self.testbed: Testbed | None = None
        self._stack = ExitStack()
        self._prepared: dict[tuple[int, str, int, bool], tuple[PacketTable, Prepared]] = {}
        #: the CPU the sender (tcpreplay) runs on: 0, or one per shard when a machine runs several testbeds
        self.sender_cpu = 0
        self._timing = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        from chimera.testbed.tools import testbed_unavailable_reason
        return testbed_unavailable_reason()

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {"target": self.name, "kernel": os.uname().release}

    # ------------------------------------------------------------------ lifetime

    def up(self, run_dir: Path) -> Testbed:
        """Bring the testbed up now (its switch logs under ``run_dir``); later runs reuse it."""
        return self._ensure_testbed(run_dir)

    def _ensure_testbed(self, run_dir: Path) -> Testbed:
        if self.testbed is None:
            self.testbed = self._stack.enter_context(Testbed(self.switch_cls, self.build_dir, run_dir, self.build))
        return self.testbed

    def close(self) -> None:
        self.testbed = None
        self._stack.close()

    def baselines(self) -> dict[str, str]:
        return {name: b.what for name, b in self.switch_cls.baselines.items()}

    def time_programs(self, on: bool = True) -> bool:
        self._timing = on
        return self.can(Capability.BASELINES)  # the switches with baselines are the ones that count run time

    # ------------------------------------------------------------------ planning

    def program_sources(self) -> list[Path]:
        """The dataplane program's source files (what its zero-loss rate depends on, with the model's sizes)."""
        return []

    def pace_cache(self, art: Artifact) -> PaceCache:
        """Where this program's measured rate lives: keyed by its sources and the constants that size the work
        per packet (window, m, d_v, classes, centroids, rules), so the variants of a run share one measurement."""
        h = hashlib.sha256(self.name.encode())
        for p in self.program_sources():
            h.update(p.read_bytes())
        h.update(self.build.key())
        for k in PACE_CONSTANTS:
            h.update(f"{k}={art.constants.get(k)}".encode())
        return PaceCache(self.build_dir / "pace", f"{self.name}-{h.hexdigest()[:12]}")

    def replay_rate(self, art: Artifact) -> int | None:
        """The measured zero-loss rate of this program and build, else the rate assumed before one is measured."""
        rec = self.pace_cache(art).load()
        return rec.pps if rec is not None else self.assumed_pps

    def _prepare(self, table: PacketTable, run_dir: Path, clock: str, flow_slots: int, compress: bool,
                 as_captured: bool = False) -> Prepared:
        key = (id(table), clock, flow_slots if compress else 0, as_captured)
        held = self._prepared.get(key)
        if held is not None and held[0] is table:  # the table is held too: its id cannot be reused meanwhile
            return held[1]
        rows = np.arange(len(table))
        frames = captured_frames(table, rows) if as_captured else normalized_frames(table, rows)
        cut = None
        if not as_captured:  # as captured means byte for byte: a frame over the MTU is then not sent, and counted
            frames, cut = snap(frames)
            if cut.any():
                log.info("%d of %d frames are longer than %d bytes (coalesced by the capturing host): they are sent "
                         "cut to that length, headers and IP total length kept (docs/pipeline.md, 'Frame length')",
                         int(cut.sum()), len(frames), REPLAY_SNAP)
        d = run_dir / "replay"
        d.mkdir(parents=True, exist_ok=True)
        tag = f"{clock}{'-gc' if compress else ''}-{len(self._prepared)}"
        plain = d / f"replay-{tag}.pcap"
        comp = None
        ts = np.asarray(table.ts_ns, np.int64)
        if clock == "switch" and compress:
            comp = compress_gaps(table, flow_slots)
            ts = comp.ts_ns
        write_pcap(plain, frames, ts)
        replayed = read_pcap(plain)
        if clock == "trace":
            origin = shim.trace_origin(table.ts_ns)
            clock_ns = np.asarray(table.ts_ns, np.int64) - origin
            shimmed = shim.insert_all(frames, clock_ns)
            sent = d / f"replay-{tag}.shim.pcap"
            write_pcap(sent, shimmed, table.ts_ns)
            prep = Prepared(frames, shimmed, sent, replayed, clock_ns, shim.SHIM_LEN, None, _span(table.ts_ns), cut)
        else:
            prep = Prepared(frames, frames, plain, replayed, None, 0, comp, _span(ts), cut)
        self._prepared[key] = (table, prep)
        return prep

    def _pace(self, replay: ReplayConfig, clock: str, art: Artifact) -> tuple[Pace, str]:
        """The pace of a replay, and where it comes from (a measured rate may not exist yet: then the
        assumed one, and the caller measures before sending)."""
        if replay.mode == "speed" or (replay.mode == "auto" and clock == "switch"):
            return Pace("speed", speed=replay.speed), "original timing" if replay.speed == 1 else "replay.speed"
        if replay.mode == "topspeed":
            return Pace("topspeed"), "top speed"
        if replay.pps is not None:
            return Pace("pps", pps=replay.pps), "replay.pps / --pps"
        rec = self.pace_cache(art).load()
        if rec is not None:
            return Pace("pps", pps=rec.pps), f"measured zero-loss rate {rec.zero_loss_pps} pps x safety, cached"
        return Pace("pps", pps=self.assumed_pps), "to be measured (assumed until then)"

    def plan(self, art: Artifact, table: PacketTable, run_dir: Path, replay: ReplayConfig,
             live_control: bool) -> tuple[ReplayPlan, Prepared]:
        clock = replay.resolved_clock
        compress = (clock == "switch" and replay.gap_compression and not live_control
                    and replay.mode in ("auto", "speed"))
        prep = self._prepare(table, run_dir, clock, art.c("FLOW_SLOTS"), compress, replay.frames == "as-captured")
        pace, source = self._pace(replay, clock, art)
        n = min(len(table), replay.max_packets) if replay.max_packets else len(table)
        plan = ReplayPlan(clock, pace, n, prep.span_ns, _span(table.ts_ns), source,
                          prep.compression.as_dict() if prep.compression else {"enabled": False})
        return plan, prep

    # ------------------------------------------------------------------ running

    def unsupported(self, art: Artifact) -> str | None:
        """Why this target cannot run the artifact (subclasses say), or None."""
        return None

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        why = self.unsupported(art)
        if why:
            raise TargetError(f"artifact not supported by the {self.name} dataplane: {why}", "use --target reference")
        live = control is not None and control.enabled
        if live and replay.resolved_clock == "switch" and not isinstance(control, SlowLoop):
            raise ConfigError("scripted installs are placed between two given packets: that needs the trace clock",
                              "replay with clock: trace")
        plan, prep = self.plan(art, table, run_dir, replay, live)
        log.info("[%s] %s: %s", self.name, slug, plan.describe())
        plan.check_budget(replay.max_replay_s)  # before the topology exists
        tb = self._ensure_testbed(run_dir)
        s1 = tb.s1
        rec: PaceRecord | None = None
        if plan.clock == "trace" and plan.pace_source.startswith("to be measured"):
            rec = self._calibrate(art, prep, run_dir)
            plan = ReplayPlan(plan.clock, Pace("pps", pps=rec.pps), plan.frames, plan.span_ns, plan.original_span_ns,
                              f"measured zero-loss rate {rec.zero_loss_pps} pps x safety", plan.compression)
            log.info("[%s] %s: %s", self.name, slug, plan.describe())
            plan.check_budget(replay.max_replay_s)
        elif plan.clock == "trace" and plan.pace_source.startswith("measured"):
            rec = self.pace_cache(art).load()
        attempt = 0
        s1.timing = self._timing
        while True:
            attempt += 1
            install_s = s1.load(art)  # a clean switch: every attempt starts from the same state
            got, files, regs = self._replay_once(art, prep, plan, run_dir, f"{slug}-{attempt}" if attempt > 1 else slug,
                                                 control if live else None)
            acc, _ = account(prep.frames, got, files.failed_to_send, files.dropped_at_receiver, SENDER_MTU,
                             prep.overhead, limit=plan.frames,
                             cut=int(prep.cut[:plan.frames].sum()) if prep.cut is not None else 0)
            lossy = acc.lost + acc.dropped_by_capture
            if plan.clock == "trace" and lossy and attempt < MAX_ATTEMPTS and plan.pace.mode == "pps":
                s1.unload()
                cache = self.pace_cache(art)
                rec = cache.halve(rec or PaceRecord(self.name, "", plan.pace.pps, False, plan.pace.pps, "", []), lossy)
                plan = ReplayPlan(plan.clock, Pace("pps", pps=rec.pps), plan.frames, plan.span_ns,
                                  plan.original_span_ns, f"halved after {lossy} lost", plan.compression)
                if control is not None:
                    control.reset()
                continue
            break
        ptime = s1.program_time()
        s1.unload()
        versions = control.artifacts if control is not None else art
        clock_ns = prep.clock_ns if prep.clock_ns is not None else got.ts_in
        conf = conformance(versions, prep.replayed, got.verdicts, got.received, clock_ns, regs,
                           trace_clock=plan.clock == "trace", lost=acc.lost + acc.dropped_by_capture)
        counters = SwitchCounters.of(regs.get("counters"))
        outcome = ReplayOutcome(plan.clock, plan.pace.describe(), acc, rates(got), latency_summary(got),
                                got.foreign, got.unmarked, attempt, conf, install_s * 1e3, counters)
        log.info("[%s] %s: %d/%d frames with a verdict, %d not sent, %d dropped by the capture, %d lost; "
                 "%d differ from the reference (clock %s)", self.name, slug, conf.checked, len(table), acc.not_sent,
                 acc.dropped_by_capture, acc.lost, conf.reference_mismatches, plan.clock)
        return TargetResult(got.verdicts, counters, outcome, per_packet_latency(got), got.received, regs,
                            program_time=ptime)

    def run_baseline(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
                     program: str) -> BaselineResult:
        """``table`` replayed on the switch clock at ``replay``'s pace through one of the switch's baseline
        programs, from a clean switch, exactly as ``run`` replays it through the pipeline (the same pcap, the
        same sender CPU): what the pipeline's own work costs is then the difference."""
        self.require(Capability.BASELINES, "baseline programs")
        if program not in self.switch_cls.baselines:
            raise ConfigError(f"the {self.name} switch has no baseline program {program!r}",
                              f"choose from {', '.join(self.switch_cls.baselines) or 'none'}")
        plan, prep = self.plan(art, table, run_dir, replay.model_copy(update={"clock": "switch"}), False)
        plan.check_budget(replay.max_replay_s)
        tb = self._ensure_testbed(run_dir)
        s1 = tb.s1
        s1.timing = self._timing
        s1.load_baseline(program, art)
        try:
            marked = self.switch_cls.baselines[program].marks  # h2 captures marked frames only, where they are
            with ReplaySession(tb.h1, tb.h2, run_dir / "replay", slug, switch_alive=s1.alive,
                               rx_filter=None if marked else "", cpu=self.sender_cpu) as session:
                session.send(prep.pcap, plan.pace, len(prep.frames), desc=slug, limit=plan.frames)
            ptime = s1.program_time()
        finally:
            s1.unload()
        got = collect(prep.frames, session.files.sent, session.files.received, marked=marked)
        acc, _ = account(prep.frames, got, session.files.failed_to_send, session.files.dropped_at_receiver,
                         SENDER_MTU, prep.overhead, limit=plan.frames,
                         cut=int(prep.cut[:plan.frames].sum()) if prep.cut is not None else 0)
        log.info("[%s] %s (%s): %d/%d frames arrived, %d lost", self.name, slug, program, acc.verdicts, plan.frames,
                 acc.lost)
        return BaselineResult(program, acc, per_packet_latency(got), ptime)

    def _replay_once(self, art: Artifact, prep: Prepared, plan: ReplayPlan, run_dir: Path, tag: str,
                     control: TraceControl | None) -> tuple[Collected, Any, Registers]:
        tb = self.testbed
        assert tb is not None
        s1 = tb.s1
        with ReplaySession(tb.h1, tb.h2, run_dir / "replay", tag, switch_alive=s1.alive,
                           cpu=self.sender_cpu) as session:
            if control is not None and plan.clock == "trace":
                assert prep.clock_ns is not None
                seg = _SwitchSegments(session, s1, prep, plan, run_dir / "replay", tag)
                control.drive(prep.clock_ns, art, seg)
            else:
                loop = control if isinstance(control, SlowLoop) else None
                during = (lambda: LiveControl(s1, loop)) if loop is not None else None
                session.send(prep.pcap, plan.pace, len(prep.frames), desc=tag, during=during, limit=plan.frames)
        regs = s1.registers()
        return collect(prep.frames, session.files.sent, session.files.received), session.files, regs

    def _calibrate(self, art: Artifact, prep: Prepared, run_dir: Path) -> PaceRecord:
        """Measure the zero-loss rate of this build here, on the run's own (shimmed) frames; cache it."""
        tb = self.testbed
        assert tb is not None
        s1 = tb.s1
        s1.load(art)
        work = run_dir / "replay" / "pace"
        work.mkdir(parents=True, exist_ok=True)
        n = len(prep.frames)

        def probe(pps: int, frames: int) -> int:
            idx = np.arange(frames) % n
            sub = [prep.frames[i] for i in idx]
            pcap = work / f"probe-{pps}.pcap"
            ts = np.arange(frames, dtype=np.int64) * 1000
            write_pcap(pcap, shim.insert_all(sub, ts), ts)
            with ReplaySession(tb.h1, tb.h2, work, f"probe-{pps}", switch_alive=s1.alive,
                               cpu=self.sender_cpu) as sess:
                sess.send(pcap, Pace("pps", pps=pps), frames, desc=f"pace {pps} pps")
            got = collect(sub, sess.files.sent, sess.files.received)
            acc, _ = account(sub, got, sess.files.failed_to_send, sess.files.dropped_at_receiver, SENDER_MTU,
                             shim.SHIM_LEN)
            return acc.lost + acc.dropped_by_capture

        cache = self.pace_cache(art)
        log.info("[%s] measuring the zero-loss replay rate of this program here (cached in %s)", self.name, cache.path)
        try:
            rec = calibrate(self.name, probe, self.ladder)
        finally:
            s1.unload()
        cache.save(rec)
        return rec


class _SwitchSegments:
    """The Segments backend of a switch under the trace clock: each range of frames replayed, then drained
    (the switch's counters stop moving) before the control plane reads its registers."""

    def __init__(self, session: ReplaySession, s1: TargetSwitch, prep: Prepared, plan: ReplayPlan, out: Path,
                 tag: str) -> None:
        self.session, self.s1, self.prep, self.plan = session, s1, prep, plan
        self.out, self.tag = out, tag
        self.i = 0
        self.k = 0

    def run_until(self, j: int) -> None:
        j = min(j, self.plan.frames)
        if j <= self.i:
            return
        pcap = self.out / f"{self.tag}.seg{self.k:04d}.pcap"
        write_pcap(pcap, self.prep.sent[self.i:j], np.asarray(self.prep.replayed.ts_ns[self.i:j]))
        self.session.send(pcap, self.plan.pace, j - self.i, desc=f"{self.tag} segment {self.k}", quiet=True)
        pcap.unlink(missing_ok=True)
        self.k += 1
        self.i = j
        self._drain(self.session.sent - self.session.files.failed_to_send)

    def _drain(self, expected: int) -> None:
        """Wait until the switch has seen every frame sent so far (its counters stop short of it only when
        frames were lost before the switch, which the accounting reports)."""
        t0, last, seen = time.monotonic(), -1, 0
        while time.monotonic() - t0 < DRAIN_TIMEOUT_S:
            c = self.s1.registers().get("counters", {})
            seen = int(c.get("parsed", 0)) + int(c.get("unparsed", 0))
            if seen >= expected or (seen == last and time.monotonic() - t0 > 0.5):
                return
            last = seen
            time.sleep(0.02)
        log.warning("segment drain: the switch saw %d of %d frames after %.0f s", seen, expected, DRAIN_TIMEOUT_S)

    def registers(self) -> Registers:
        return self.s1.registers()

    def flip(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        return self.s1.install_map(art, fail_after)


def _span(ts: np.ndarray) -> int:
    ts = np.asarray(ts)
    return int(ts.max() - ts.min()) if ts.size else 0


def testbed_class(name: str, available: bool = True) -> type[TestbedTarget]:
    """The testbed target called ``name`` (``auto``: the highest-ranked testbed that can run here); with
    ``available``, one that cannot run here fails, naming what to install. Here, not in the registry: a run
    that needs no switch imports the registry, and should not import the testbed with it (its code fingerprint
    follows its imports)."""
    from chimera.targets.registry import AUTO, by_rank, target_class, with_capability
    if name == AUTO:
        ranked = [c for c in by_rank(Capability.TESTBED) if c.unavailable_reason() is None] or \
            by_rank(Capability.TESTBED)
        if not ranked:
            raise ConfigError("no testbed target is registered", "register one in chimera/targets/registry.py")
        name = ranked[0].name
    cls = target_class(name)
    if not issubclass(cls, TestbedTarget):
        raise ConfigError(f"target {name!r} has no switch", "use one of: " + ", ".join(
            c.name for c in with_capability(Capability.TESTBED)))
    if available:
        cls.require_available()
    return cls
