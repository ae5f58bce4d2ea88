"""Conformance, written once for every target and clock (Mininet's per-class ``switchClass`` style).

Every verdict a target gives must equal the reference pipeline's for the same frames on the same clock, and so
must the state registers. A testbed target replays through the switch and checks itself
(chimera.targets.testbed.conformance: the reference fed exactly what the switch classified, on the shim's trace
time or on the switch's own ingress timestamps); the reference target is held to the independent oracle
(chimera/fuzz/oracle.py). Targets that cannot run here skip with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chimera.data.pcap import PacketTable, read_pcap
from chimera.formats.artifact import Artifact
from chimera.formats.snap import REPLAY_SNAP
from chimera.formats.verdict import SCORE_MAX, VerdictFlag
from chimera.reference.pipeline import dataplane_parsed, run_reference
from chimera.targets.base import Capability, Target, TargetResult
from chimera.targets.registry import TARGETS, target_class
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.replay import ReplayConfig

from builders import COALESCED_PCAP, STRESS_PCAP, assert_conformant, quickstart_artifact
from chimera.fuzz.oracle import oracle, rows_of
from chimera.metrics.classification import macro_f1

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

#: (target, clock) for every registered target that classifies (the compile-only tofino does not) and every clock
#: its record names (the reference: the capture's own timestamps, the trace's clock, only). Each replays at its record's ``conformance_pps``, a rate it holds with
#: no loss here (conformance does not depend on it: the clock is the shim's or the verdict's own ingress
#: timestamp; the calibration has its own test), and at most its ``conformance_frames`` of a capture.
CASES = [(n, c) for n in TARGETS if target_class(n).can(Capability.TRACE_CLOCK) for c in target_class(n).clocks]


def mutant_build(target: str) -> BuildOptions:
    """``invoke mutate`` runs these tests against a mutant program: CHIMERA_MUTANT_SOURCE for
    CHIMERA_MUTANT_TARGET (chimera.fuzz.mutate); otherwise the shipped one."""
    src = os.environ.get("CHIMERA_MUTANT_SOURCE")
    return BuildOptions(source=Path(src)) if src and os.environ.get("CHIMERA_MUTANT_TARGET") == target else \
        BuildOptions()


@pytest.fixture(scope="module", params=CASES, ids=[f"{t}-{c}" for t, c in CASES])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Target, ReplayConfig]]:
    name, clock = request.param
    cls = target_class(name)
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"{name} cannot run here: {why}")
    t = cls(build=mutant_build(name), build_dir=tmp_path_factory.mktemp("build"))
    replay = ReplayConfig(clock=clock, mode="pps", pps=cls.conformance_pps or 1)
    with t:
        yield t, replay


def limit(t: Target, table: PacketTable) -> PacketTable:
    """The first frames a slow target replays, and the first frames its parser rejects wherever they are (a
    capture's first 1500 frames may all be plain IPv4)."""
    n = t.conformance_frames
    if not n or len(table) <= n:
        return table
    odd = np.flatnonzero(~dataplane_parsed(table))[: n // 5]
    return table.take(np.union1d(np.arange(n - odd.size), odd))


def check(t: Target, res: TargetResult, art: Artifact, table: PacketTable) -> None:
    """Every frame has a verdict and it is the reference's; the registers agree."""
    n = len(table)
    assert len(res.verdicts) == n
    if res.outcome is None:  # the reference: held to the independent oracle
        want, regs = oracle(art, rows_of(table))
        got = list(zip(res.verdicts.label.tolist(), res.verdicts.flags.tolist(), res.verdicts.score.tolist(),
                       res.verdicts.rule_id.tolist(), res.verdicts.centroid.tolist()))
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        assert not bad, f"{len(bad)} verdicts differ from the oracle, first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"
        assert res.evictions == regs["evictions"]
        return
    assert_conformant(res, n)
    out = res.outcome
    assert out.accounting.dropped_by_capture == 0 and out.foreign_frames == 0
    assert out.clock == ("trace" if res.verdicts.flags[0] & VerdictFlag.TRACE_CLOCK else "switch")


def test_conformance_quickstart(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    t, replay = case
    built = quickstart_artifact()
    table = limit(t, built.data.replay_table)
    res = t.run(built.art, table, tmp_path, "quickstart", replay=replay)
    check(t, res, built.art, table)
    assert (res.verdicts.flags & VerdictFlag.NEW_FLOW).sum() > 0
    if replay.clock == "trace":  # on the trace's clock a switch gives exactly the reference target's verdicts
        ref, _ = run_reference(built.art, table)
        assert np.array_equal(res.verdicts.label, ref.label) and np.array_equal(res.verdicts.score, ref.score)


def test_conformance_real_sample(case: tuple[Target, ReplayConfig], tmp_path: Path, sample_dir: Path) -> None:
    t, replay = case
    built = quickstart_artifact(tmp_path / "data", dataset={"path": str(sample_dir), "synthetic": None})
    table = limit(t, built.data.ds.table)  # every frame, non-IP ones included
    res = t.run(built.art, table, tmp_path, "sample", replay=replay)
    check(t, res, built.art, table)
    expected = ~dataplane_parsed(table)  # non-IP frames and the sample's IPv6 packets
    assert expected.sum() > 0
    assert np.array_equal(res.verdicts.flags & VerdictFlag.UNPARSED > 0, expected)


def test_conformance_at_the_limits(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """The fuzzer's `max` profile (64 centroids, window 16, m = d_v = 16: every row full, 65536 slots): chimera.p4
    once did not compile there, and the eBPF program once did not build."""
    from chimera.fuzz.profiles import artifact
    t, replay = case
    art = artifact("max")
    table = limit(t, read_pcap(STRESS_PCAP))
    res = t.run(art, table, tmp_path, "limits", replay=replay)
    check(t, res, art, table)


def test_conformance_first_and_last_flow_slot(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """A flow in the first flow slot and one in the last, each three windows long in both directions: the per-slot
    register arrays at their ends. A chimera.p4 mutant whose ring index subtracted the head (``slot * 16 - head``)
    survived the fuzzer and these tests until this one: for every other slot it lands in the row below, unused;
    only slot 0's reads and writes leave the array."""
    from dataclasses import replace

    from chimera.fuzz.frames import FrameSpec
    from chimera.fuzz.sequence import Batch, Event, Sequence
    from chimera.fuzz.strategies import UNIT_NS, edge_slots, into_slot, slot_of
    t, replay = case
    art = quickstart_artifact().art
    slots, window = art.c("FLOW_SLOTS"), art.c("WINDOW")
    base = FrameSpec(src=0x0A000001, dst=0x0A000002, proto=6, sport=40000, dport=443, tcp_flags=0x18, payload=100)
    flows = [into_slot(base, s, slots, 0) for s in edge_slots(slots)]
    assert [slot_of(f, slots) for f in flows] == [0, slots - 1]
    # lengths and gaps vary, so every token differs and the scores stay short of the clamp (a token leaving
    # wrongly then changes verdicts: identical tokens clamped every score to SCORE_MAX, and hid it)
    events = [Event(replace(f if i % 3 else f.reversed(), payload=(i * 211) % 1400), (1 << (i % 7)) * UNIT_NS,
                    "edge slot") for i in range(3 * window) for f in flows]
    table = Batch(art, [Sequence(tuple(events))]).write(tmp_path / "edge.pcap")
    res = t.run(art, table, tmp_path, "edge", replay=replay)
    check(t, res, art, table)
    assert int(np.sum(res.verdicts.flags & VerdictFlag.NEW_FLOW > 0)) == 2  # two flows, neither evicted
    if replay.clock == "trace":  # the gaps are the trace's (on the switch's clock they are the replay's pace)
        assert int(np.sum(res.verdicts.score == SCORE_MAX)) < len(table) // 2


def test_conformance_fragment_bits(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """Every fragment-bit pattern of the flags/offset word, each in a flow of its own: a packet is unparsed exactly
    where MF or the 13-bit offset is set (DF alone is a whole packet). An eBPF mutant that masked 0x3FFE (the
    offset's lowest bit dropped) survived the night's fuzz, which draws an offset of 1 only by chance."""
    from dataclasses import replace

    from chimera.fuzz.frames import MF, FrameSpec
    from chimera.fuzz.sequence import Batch, Event, Sequence
    from chimera.fuzz.strategies import UNIT_NS
    t, replay = case
    art = quickstart_artifact().art
    base = FrameSpec(src=0x0A000001, dst=0x0A000002, proto=6, sport=40000, dport=443, tcp_flags=0x18, payload=100)
    words = (0, 1, 2, MF, MF | 1, 0x1000, 0x1FFF, 0x4000, 0x4001, 0x4000 | MF)
    events = [Event(replace(base, sport=40000 + i, frag=w), UNIT_NS, f"frag {w:#06x}")
              for _ in range(3) for i, w in enumerate(words)]
    table = Batch(art, [Sequence(tuple(events))]).write(tmp_path / "frag.pcap")
    res = t.run(art, table, tmp_path, "frag", replay=replay)
    check(t, res, art, table)
    fragment = np.array([(e.frame.frag & 0x3FFF) != 0 for e in events])
    assert np.array_equal(res.verdicts.flags & VerdictFlag.UNPARSED > 0, fragment)


def test_conformance_packet_count_saturates(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """One flow of 65,600 packets (the fuzz's directed corpus): the per-flow packet count stops at 65,535 and the
    flow goes on in its slot (an eBPF mutant whose count passed 65,535 wrapped the 16-bit register to 0 and
    restarted the flow; only a flow this long shows it)."""
    from chimera.fuzz.run import LONG_FLOW, long_flow
    from chimera.fuzz.sequence import Batch
    t, replay = case
    if t.conformance_frames and t.conformance_frames < LONG_FLOW:
        pytest.skip(f"{t.name} replays at most {t.conformance_frames:,} frames in a test (its rate is low); the "
                    f"night's fuzz sends this flow to it as its directed corpus")
    art = quickstart_artifact().art
    table = Batch(art, [long_flow()]).write(tmp_path / "long.pcap")
    res = t.run(art, table, tmp_path, "long", replay=replay)
    check(t, res, art, table)
    assert int(np.sum(res.verdicts.flags & VerdictFlag.NEW_FLOW > 0)) == 1 and len(table) == LONG_FLOW > 65_536


def test_conformance_stress_collisions_and_malformed(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    t, replay = case
    art = quickstart_artifact(flow_slots=64).art  # 64 slots for ~400 flows: constant evictions
    table = read_pcap(STRESS_PCAP)
    res = t.run(art, table, tmp_path, "stress", replay=replay)
    check(t, res, art, table)
    flags = res.verdicts.flags
    assert int(np.sum(flags & VerdictFlag.EVICTED > 0)) > 50
    assert res.evictions == int(np.sum(flags & VerdictFlag.EVICTED > 0))
    unparsed = flags & VerdictFlag.UNPARSED > 0
    assert 0.1 < unparsed.mean() < 0.3  # ARP, IPv6, fragments, VLAN, truncated, bad IP: flagged, not dropped
    assert np.all(res.verdicts.label[unparsed] == 0xFF)


def test_conformance_coalesced_frames_up_to_64k(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """Frames a capturing host coalesced (GRO/TSO), up to the largest IPv4 packet (a 65,549-byte frame): every one
    is sent, those over the replay snap cut to it, and each is classified as the reference classifies the whole
    frame, so the F1 on any labelling is the reference's."""
    t, replay = case
    art = quickstart_artifact().art
    table = read_pcap(COALESCED_PCAP)
    big = table.caplen > REPLAY_SNAP
    assert int(big.sum()) > 20 and int(table.caplen.max()) == 65_549
    res = t.run(art, table, tmp_path, "coalesced", replay=replay)
    check(t, res, art, table)
    if res.outcome is not None:
        acc = res.outcome.accounting
        assert (acc.not_sent, acc.verdicts) == (0, len(table))
        if isinstance(t, TestbedTarget):  # sent through the sender's MTU: the frames over the snap are cut, and counted
            assert acc.cut_frames == int(big.sum())
    if replay.clock == "trace":  # the testbed's verdicts on the cut frames are the reference's on the whole ones
        ref, _ = run_reference(art, table)
        for f in ("label", "score", "rule_id", "centroid"):
            assert np.array_equal(getattr(res.verdicts, f), getattr(ref, f)), f
        y = (table.sport % 3).astype(np.int64)  # any labelling: the F1s are equal because every verdict is
        assert macro_f1(y, res.verdicts.label.astype(np.int64)) == macro_f1(y, ref.label.astype(np.int64))


def test_conformance_fast_path_prior(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """The class prior on (gamma > 0) and the two-shift EMA step (eta = 2^-2 + 2^-4): verdicts move, and still
    equal the reference's."""
    t, replay = case
    off = quickstart_artifact()
    on = quickstart_artifact(fusion={"gamma": 4.0, "tune_beta": False}, compile={"ema_eta": 0.3})
    assert on.art.c("GAMMA") > 0 and off.art.c("GAMMA") == 0 and on.art.c("EMA_SHIFT2") == 4
    table = limit(t, off.data.replay_table)
    res = t.run(on.art, table, tmp_path, "prior-on", replay=replay)
    check(t, res, on.art, table)
    ref_off, _ = run_reference(off.art, table)
    assert int(np.sum(res.verdicts.label != ref_off.label)) > 10


def least_installs(replay: ReplayConfig) -> int:
    """How many installs a live run must have made. Under the trace clock the ticks are the trace's: several,
    always. Under the switch clock they are the wall clock's, and a loaded machine fits fewer of them into the
    replay (a toy switch on a machine running two sweeps beside the suite made one install in 0.8 s): one install
    is the least that puts two versions in the switch's record, which is what the check compares."""
    return 2 if replay.clock == "trace" else 1


def test_conformance_across_live_installs(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """The slow loop installing while the traffic flows: installs (several under the trace clock:
    least_installs), and every verdict and register equals the reference replayed on the switch's own record of
    its versions. Under the trace clock the installs land at the same packets at any pace, and the verdicts equal
    the reference target's own controlled run."""
    from chimera.controlplane.config import ControlPlaneConfig
    from chimera.controlplane.loop import SlowLoop
    from chimera.controlplane.offline import run_controlled
    t, replay = case
    built = quickstart_artifact()
    table = limit(t, built.data.replay_table)
    span = float(table.ts_ns.max() - table.ts_ns.min()) / 1e9
    # a tick every twentieth of the trace (trace clock), or the shortest the target keeps up with (switch clock)
    period = span / 20 if replay.clock == "trace" else t.min_tick_s

    def loop() -> SlowLoop:
        return SlowLoop(built.art, ControlPlaneConfig(t_cp_s=period, tau_map=0.0, min_samples=16, rebin="all"))

    live = loop()
    res = t.run(built.art, table, tmp_path, "live", replay=replay, control=live)
    check(t, res, built.art, table) if res.outcome is not None else None
    inst = [s for s in live.steps if s.decision == "install"]
    assert len(inst) >= least_installs(replay)
    assert len(np.unique(res.verdicts.map_version)) >= 2
    if replay.clock == "trace":
        ref, _ = run_controlled(built.art, table, loop())
        assert np.array_equal(res.verdicts.label, ref.label) and np.array_equal(res.verdicts.map_version,
                                                                                 ref.map_version)


def test_conformance_across_live_prior_installs(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """The prior-shift correction installing live (a class bias in the reserved soft rule's weights, nothing else
    changed): installs (least_installs), every verdict and register equals the reference on the switch's record of
    its versions, and under the trace clock the reference target's own controlled run."""
    from chimera.controlplane.config import ControlPlaneConfig
    from chimera.controlplane.loop import SlowLoop
    from chimera.controlplane.offline import run_controlled
    from chimera.controlplane.prior import TokenPosterior, keys_of_tokens
    t, replay = case
    built = quickstart_artifact(compile={"prior_logits": 2.0})
    d, art = built.data, built.art
    post = TokenPosterior.fit(keys_of_tokens(d.tokens, d.train_rows, art.len_lo), d.y(d.train_rows),
                              len(d.classes), art.len_lo)
    table = limit(t, d.replay_table)
    span = float(table.ts_ns.max() - table.ts_ns.min()) / 1e9
    period = span / 20 if replay.clock == "trace" else t.min_tick_s

    def loop() -> SlowLoop:
        return SlowLoop(art, ControlPlaneConfig(t_cp_s=period, tau_map=0.0, tau_prior=0.0, min_samples=16,
                                                rebin="off", recluster=False, prior="em"), prior_model=post)

    live = loop()
    res = t.run(art, table, tmp_path, "live-prior", replay=replay, control=live)
    check(t, res, art, table) if res.outcome is not None else None
    inst = [s for s in live.steps if s.decision == "install"]
    assert len(inst) >= least_installs(replay) and all(s.churn_prior == 1 and s.churn_map == 0 for s in inst)
    if replay.clock == "trace":
        ref, _ = run_controlled(art, table, loop())
        assert np.array_equal(res.verdicts.label, ref.label) and np.array_equal(res.verdicts.map_version,
                                                                                 ref.map_version)


#: the targets with a software classifier host (the † path), from their declared capabilities
SOFTWARE_HOSTS = [n for n in TARGETS if target_class(n).can(Capability.SOFTWARE_HOST)]


def software_model(name: str, tmp_path: Path) -> tuple[type[Target], Any, Path]:
    """The target class of ``name`` (skipped where it cannot run here), the quickstart data and a † model file
    (exact softmax) for its software classifier host."""
    cls = target_class(name)
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"{name} cannot run here: {why}")
    from chimera.targets.software.classifier import export_model

    from builders import quickstart_trained
    data, rules, v, trained = quickstart_trained(attention="softmax")
    mj = export_model(trained.model, rules.rules, rules.weights, v.fusion, trained.beta, tmp_path / "sw.json")
    return cls, data, mj


@pytest.mark.parametrize("clock", ["switch", "trace"])
@pytest.mark.parametrize("name", SOFTWARE_HOSTS)
def test_software_classifier_host(name: str, clock: str, tmp_path: Path) -> None:
    """A † configuration (exact softmax: no switch tables) on every target with a software classifier host:
    the switch carries h1 -> sc -> h2 (eBPF: tc redirects; BMv2: p4/redirect.p4), every packet is marked by sc,
    and sc's verdicts equal an offline re-run of the same classifier on the same frames and clock. Under the
    trace clock that clock is the trace's own (the shim), so the verdicts equal the classifier run offline on
    the capture's timestamps: a † row does not move between runs. Afterwards the switch runs chimera.p4 again,
    conformant."""
    cls, data, mj = software_model(name, tmp_path)
    import json

    from chimera.data.pcapwrite import normalized_frames
    from chimera.targets.software.classifier import SoftwareClassifier
    n = min(600, cls.conformance_frames or 600)
    replay = ReplayConfig(clock=clock, mode="pps", pps=cls.conformance_pps or 1)
    with cls(build=mutant_build(name), build_dir=tmp_path / "build") as t:
        table = data.ds.table.take(data.replay_rows[:n])
        res = t.run_software(mj, table, tmp_path, "softmax", replay=replay)
        out = res.outcome
        assert out.accounting.lost == 0 and out.conformance.reference_mismatches == 0
        assert out.conformance.checked == n
        assert out.latency.switch_p50_us > 0
        if clock == "trace":
            clf = SoftwareClassifier(json.loads(mj.read_text()))
            offline = [clf.classify(f, int(ts)) for f, ts in zip(normalized_frames(table, np.arange(n)), table.ts_ns)]
            assert np.array_equal(res.verdicts.label, np.array([o[1] for o in offline]))
            assert np.array_equal(res.verdicts.centroid, np.array([o[4] for o in offline]))
        built = quickstart_artifact()  # the switch's own pipeline comes back clean
        table = limit(t, built.data.replay_table).take(np.arange(200))
        check(t, t.run(built.art, table, tmp_path, "after-software", replay=replay), built.art, table)


@pytest.mark.parametrize("name", SOFTWARE_HOSTS)
def test_a_late_software_classifier_loses_nothing(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded machine runs the classifier host late (CI lost 329 of 600 frames so): here the daemon is stopped
    as the replay starts and continued 3 s later, three times the replay's fixed drain. The replay waits for its
    last answer, its socket holds the backlog meanwhile, and nothing is lost."""
    cls, data, mj = software_model(name, tmp_path)
    import signal
    import subprocess
    import threading

    from chimera.targets.software import host
    stopped: list[int] = []

    class LateSession(host.ReplaySession):
        def send(self, *args: Any, **kwargs: Any) -> str:
            found = subprocess.run(["pgrep", "-f", str(mj)], capture_output=True, text=True).stdout.split()
            stopped.extend(int(p) for p in found)
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            threading.Timer(3.0, lambda: [os.kill(pid, signal.SIGCONT) for pid in stopped]).start()
            return super().send(*args, **kwargs)

    monkeypatch.setattr(host, "ReplaySession", LateSession)
    n = 300
    replay = ReplayConfig(clock="switch", mode="pps", pps=cls.conformance_pps or 1)
    with cls(build=mutant_build(name), build_dir=tmp_path / "build") as t:
        res = t.run_software(mj, data.ds.table.take(data.replay_rows[:n]), tmp_path, "late", replay=replay)
    out = res.outcome
    assert stopped, "the classifier daemon was not found to stop"
    assert out.accounting.lost == 0 and out.conformance.checked == n and out.conformance.reference_mismatches == 0


def test_runts_are_counted_apart_with_their_reason(case: tuple[Target, ReplayConfig], tmp_path: Path) -> None:
    """A capture with runts (frames shorter than an Ethernet header, as a capturing host may record them): they
    cannot leave a packet socket, so a testbed counts them as not sent, naming why (issue 58: the reason once said
    "larger than the sender's MTU"); every other frame is classified as the reference classifies it, no frame is
    lost, and the reference flags the runts unparsed."""
    from chimera.data.pcapwrite import write_pcap
    from chimera.data.pcap import read_raw
    t, replay = case
    art = quickstart_artifact().art
    raw = read_raw(STRESS_PCAP)
    frames = [bytes(raw.data[o:o + c]) for o, c in zip(raw.offset[:300], raw.caplen[:300])]
    runts = {17: b"\x00\x01\x02\x03", 120: bytes(13), 299: b"\xff" * 6}
    for i, f in runts.items():
        frames[i] = f
    p = tmp_path / "runts.pcap"
    write_pcap(p, frames, raw.ts_ns[:300])
    table = read_pcap(p)
    assert len(table) == 300
    res = t.run(art, table, tmp_path, "runts", replay=replay)
    assert np.all(res.verdicts.flags[list(runts)] & VerdictFlag.UNPARSED > 0) or isinstance(t, TestbedTarget)
    if res.outcome is None or not isinstance(t, TestbedTarget):   # nothing sent through a packet socket
        return
    acc, conf = res.outcome.accounting, res.outcome.conformance
    assert (acc.not_sent, acc.lost, acc.verdicts) == (len(runts), 0, 300 - len(runts))
    assert "shorter than an Ethernet header" in acc.not_sent_reason and "MTU" not in acc.not_sent_reason
    assert conf.checked == 300 - len(runts) and conf.reference_mismatches == 0


def test_register_differences_after_a_loss_are_expected_not_errors(caplog: pytest.LogCaptureFixture) -> None:
    """Where frames were lost, the switch's registers may have seen frames the reference never does: the
    differences are counted, and logged as expected (a warning naming the loss), never as a conformance ERROR
    (issue 58: the zeroloss bench's overloaded step logged an ERROR while its summary said 0 differ)."""
    import logging
    from chimera.targets.testbed import conformance
    built = quickstart_artifact()
    table = built.data.replay_table.take(np.arange(200))
    ref, state = run_reference(built.art, table)
    received = np.ones(len(table), bool)
    regs = {"ema": (np.atleast_1d(np.asarray(state.ema)) + 1).tolist()}   # every EMA register off by one
    for lost, level in ((0, logging.ERROR), (5, logging.WARNING)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="chimera.targets.testbed"):
            conf = conformance(built.art, table, ref, received, np.asarray(table.ts_ns, np.int64), regs, lost=lost)
        assert conf.register_mismatches and conf.reference_mismatches == 0
        said = [r for r in caplog.records if "'ema' registers differ" in r.getMessage()]
        assert [r.levelno for r in said] == [level]
