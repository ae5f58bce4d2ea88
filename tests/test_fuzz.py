"""Differential fuzzing (issue 25): the fuzzer finds planted differences, shrinks them and saves them as one
file; the reference reaches every decision point; the frames are what they claim to be. On the testbeds:
test_fuzz_targets.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chimera.data.pcap import ParseStatus, read_pcap
from chimera.formats.artifact import Artifact
from chimera.fuzz.check import compare, observe_oracle, observe_reference
from chimera.fuzz.frames import FrameSpec, build
from chimera.fuzz.oracle import Oracle
from chimera.fuzz.profiles import PROFILES, artifact
from chimera.fuzz.run import FuzzConfig, fuzz, reproduce
from chimera.fuzz.sequence import WRAP_NS, Batch, Event, Sequence
from chimera.fuzz.strategies import Context, sample_sequences

#: no testbed here (the reference, the oracle and the fuzzer's own machinery): this file's group runs beside the
#: testbed group; the fuzzer on the testbeds is in test_fuzz_targets.py



def _observe_all(art: Artifact, seqs: list[Sequence], where: Path) -> tuple:  # type: ignore[type-arg]
    b = Batch(art, seqs)
    table = b.write(where / "b.pcap")
    return b, table, observe_reference(art, table, b.ts_ns, b.script)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_oracle_agrees_with_reference_on_drawn_sequences(profile: str, tmp_path: Path) -> None:
    art = artifact(profile)
    seqs = sample_sequences(Context.of(art), 25, seed=11)
    b, table, ref = _observe_all(art, seqs, tmp_path)
    assert len(b.frames) > 100 and b.script.script  # installs among them
    assert compare(ref, observe_oracle(art, table, b.ts_ns, b.script)) == []


def test_frames_are_what_they_claim(tmp_path: Path) -> None:
    """The Python parser (what the reference reads) sees each bent frame as the spec says."""
    specs = {"ok": FrameSpec(), "ihl": FrameSpec(ihl=3), "vlan": FrameSpec(kind="vlan"),
             "frag": FrameSpec(frag=0x2000), "cut": FrameSpec(truncate=30), "options": FrameSpec(ihl=15),
             "non_ip": FrameSpec(kind="non_ip", ethertype=0x0806)}
    from chimera.data.pcapwrite import write_pcap
    write_pcap(tmp_path / "f.pcap", [build(s) for s in specs.values()], np.arange(len(specs)))
    t = read_pcap(tmp_path / "f.pcap")
    st = dict(zip(specs, t.status.tolist()))
    assert st["ok"] == ParseStatus.OK and st["options"] == ParseStatus.OK and st["ihl"] == ParseStatus.BAD_IP
    assert st["frag"] == ParseStatus.FRAGMENT and st["cut"] == ParseStatus.TRUNCATED
    assert bool(t.vlan[list(specs).index("vlan")]) and st["non_ip"] == ParseStatus.NON_IP
    wrap = Batch(artifact("collide"), [Sequence((Event(FrameSpec()), Event(FrameSpec(), 5))),
                                       Sequence((Event(FrameSpec()),))])
    assert wrap.ts_ns.tolist() == [WRAP_NS, WRAP_NS + 5, 2 * WRAP_NS]  # each sequence at its own wrap period


def test_an_aliased_signature_is_one_flow_everywhere(tmp_path: Path) -> None:
    """Two 5-tuples with one CRC-32 are one flow to the switch; their direction is taken relative to the flow's
    first packet. The open flow is a host to itself on one port (its canonical order is a tie): the corner where
    `sport > dport` and `sport >= dport` in the canonical order differ (mutant bdf478e3b9 survived without it)."""
    import zlib
    from chimera.fuzz.strategies import alias_of, canonical
    f = FrameSpec(src=0x0A000001, dst=0x0A000001, sport=80, dport=80, payload=10)
    g = alias_of(f, 0xFFFFFFFF, 53, 443)
    assert g is not None and canonical(g) != canonical(f) and zlib.crc32(canonical(g)) == zlib.crc32(canonical(f))
    art = artifact("collide")
    seq = Sequence((Event(f), Event(g, 2048), Event(g.reversed(), 2048), Event(f, 4096)))
    b, table, ref = _observe_all(art, [seq], tmp_path)
    assert ref.registers["counters"]["new_flows"] == 1
    assert compare(ref, observe_oracle(art, table, b.ts_ns, b.script)) == []


@pytest.mark.parametrize("slots", [16, 65536])
def test_a_flow_is_crafted_into_the_first_and_the_last_slot(slots: int) -> None:
    """The `edge` rule's flows (the per-slot register index at the ends of its array): in the slot asked for,
    distinct from the flow they came from, also for a host to itself (where the ports' order decides)."""
    from chimera.fuzz.strategies import canonical, edge_slots, into_slot, slot_of
    assert edge_slots(slots) == (0, slots - 1)
    for f in (FrameSpec(src=0x0A000001, dst=0x0A000002, sport=80, dport=443),
              FrameSpec(src=0x0A000001, dst=0x0A000001, sport=80, dport=80)):
        for want in edge_slots(slots):
            g = into_slot(f, want, slots, 1234)
            assert slot_of(g, slots) == want and canonical(g) != canonical(f)


def test_the_edge_rule_fills_the_first_and_the_last_slot_past_the_window() -> None:
    """Sequences drawn (a fixed seed: the same draws on any machine) hold `edge` steps, each a flow in slot 0 or
    the last slot with more packets than the window holds."""
    from chimera.fuzz.strategies import slot_of
    ctx = Context.of(artifact("collide"))
    seqs = sample_sequences(ctx, 60, seed=3)
    edge = [[e.frame for e in s.events if e.why.startswith("edge:")] for s in seqs]
    edge = [fs for fs in edge if fs]
    assert edge, "no sequence drew the edge rule"
    for fs in edge:
        assert {slot_of(f, ctx.flow_slots) for f in fs} <= {0, ctx.flow_slots - 1}
        assert len(fs) > ctx.window


def test_fuzz_reference_takes_every_reachable_point(tmp_path: Path) -> None:
    # a fixed number of rounds, never the clock: the same sequences on any machine, however busy. Every profile
    # once and three of them twice: four rounds (one each, `max` never) missed `no_veto` once a new rule (edge)
    # moved every later draw; a second `prior` round takes it again
    res = fuzz(FuzzConfig(targets=(), budget_s=600, seed=5, batch=25, rounds=8, database=False), tmp_path)
    assert res.failures == [] and res.sequences > 50
    s = res.coverage_summary()["reference"]
    assert s.missed == [] and s.percent == 100.0, s
    assert (res.run_dir / "coverage.csv").is_file() and "0 differences" in (res.run_dir / "summary.md").read_text()


def test_planted_difference_is_found_shrunk_saved_and_reproduced(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong oracle (UDP to port 53 scores one more) is a difference: Hypothesis shrinks it to one frame, the
    failure is saved with its pcap, artifact and command, and --reproduce sees it until the plant is gone."""
    real = Oracle.step

    def planted(self, p):  # type: ignore[no-untyped-def]
        v = real(self, p)
        return (v[0], v[1], v[2] + 1, v[3], v[4]) if p["parsed"] and p["proto"] == 17 and p["dport"] == 53 else v

    monkeypatch.setattr(Oracle, "step", planted)
    res = fuzz(FuzzConfig(targets=(), budget_s=40, seed=3, corpus=False, stop_at_first=True,
                          profiles=("collide",)), tmp_path)
    assert len(res.failures) == 1
    f = res.failures[0]
    assert f.diff.kind == "verdict" and f.diff.field == "score" and len(f.sequence) == 1, f.describe()
    e = f.sequence.events[0].frame
    assert e.proto == 17 and e.dport == 53
    rec = json.loads((res.run_dir / "failure-1.json").read_text())
    assert rec["command"].startswith("invoke fuzz --reproduce") and (res.run_dir / rec["files"]["pcap"]).is_file()
    assert not reproduce(res.run_dir / "failure-1.json")     # still differs
    monkeypatch.setattr(Oracle, "step", real)
    assert reproduce(res.run_dir / "failure-1.json")         # fixed


def test_the_mutation_score_per_file_is_a_typed_record() -> None:
    """score_table: per file, killed and timed-out mutants over the judged ones (equivalent and invalid apart),
    its Wilson interval, the population; a file with nothing judged has no score (NaN), not 0."""
    import math

    import pandas as pd

    from chimera.fuzz.mutate import score_table
    from chimera.report.sections import Score
    df = pd.DataFrame({"file": ["a", "a", "a", "a", "b"],
                       "status": ["killed", "timeout", "survived", "equivalent", "invalid"]})
    s = score_table(df, {"a": 40, "b": 7})
    assert isinstance(s["a"], Score) and (s["a"].killed, s["a"].timeout, s["a"].survived) == (1, 1, 1)
    assert s["a"].score == 2 / 3 and s["a"].population == 40 and s["a"].ci95[0] < 2 / 3 < s["a"].ci95[1]
    assert s["b"].invalid == 1 and s["b"].score is not None and math.isnan(s["b"].score)
