"""Sharded runs (chimera.targets.sharded): flows hashed to K testbeds that run at once, as local processes or as
Ray tasks, and their verdicts equal the sharded reference's bit for bit. Testbed cases skip where the target
cannot run here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chimera.errors import ConfigError
from chimera.formats.verdict import VerdictFlag
from chimera.reference.pipeline import Verdicts, flow_hash, run_reference
from chimera.targets.base import Capability, TargetResult
from chimera.targets.reference import ReferenceTarget
from chimera.targets.registry import target_class, with_capability
from chimera.targets.sharded import merge_verdicts, shard_of, sharded
from chimera.testbed.replay import ReplayConfig

from builders import STRESS_PCAP, BuiltArtifact, assert_conformant, quickstart_artifact

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

FIELDS = ("label", "flags", "score", "rule_id", "centroid", "map_version")
TESTBEDS = [c.name for c in with_capability(Capability.TESTBED)]


@pytest.fixture(scope="module")
def prior_on():  # type: ignore[no-untyped-def]
    """The class prior on (gamma > 0): switch-wide state moves verdicts, so sharding shows in them."""
    return quickstart_artifact(fusion={"gamma": 4.0, "tune_beta": False}, compile={"ema_eta": 0.3})


def sharded_reference(art, table, k: int) -> Verdicts:  # type: ignore[no-untyped-def]
    """Written here from the definition: each shard's packets through a reference switch of its own."""
    which = shard_of(table, k)
    rows = [np.flatnonzero(which == s) for s in range(k)]
    return merge_verdicts([run_reference(art, table.take(r))[0] for r in rows], rows, len(table))


def test_a_flow_is_on_one_shard_and_slots_split_by_residue() -> None:
    from chimera.data.pcap import read_pcap
    from chimera.reference.pipeline import dataplane_parsed
    table = read_pcap(STRESS_PCAP)
    ok = dataplane_parsed(table)
    crc, _ = flow_hash(table.src4, table.dst4, table.sport, table.dport, table.proto)
    for k in (2, 3, 4):
        s = shard_of(table, k)
        assert set(np.unique(s)) == set(range(k))
        for c in np.unique(crc[ok]):  # both directions of a flow, every packet of it: one shard
            assert np.unique(s[ok & (crc == c)]).size == 1
        assert np.all(s[~ok] == 0)
    s = shard_of(table, 4)  # K a power of two: a shard holds the slots congruent to it, whatever the slot count
    assert np.array_equal(s[ok], (crc[ok] & np.uint32(64 - 1)).astype(np.int64) % 4)


def test_the_sharded_reference_is_a_reference_switch_per_shard(prior_on: BuiltArtifact, tmp_path: Path) -> None:
    art, table = prior_on.art, prior_on.data.replay_table
    t = sharded(ReferenceTarget(), 2)
    res = t.run(art, table, tmp_path, "ref", replay=ReplayConfig(clock="trace"))
    want = sharded_reference(art, table, 2)
    for f in FIELDS:
        assert np.array_equal(getattr(res.verdicts, f), getattr(want, f)), f
    assert res.shards == 2 and res.columns()["shards"] == 2
    assert res.unsharded is not None
    whole, _ = run_reference(art, table)
    assert np.array_equal(res.unsharded.label, whole.label)
    # the class EMA is switch-wide: split over two switches, some verdicts move
    assert int(np.sum(res.verdicts.label != whole.label)) > 0


def test_sharded_runs_refuse_live_installs(tmp_path: Path) -> None:
    from types import SimpleNamespace
    built = quickstart_artifact()
    t = sharded(ReferenceTarget(), 2)
    assert not t.can(Capability.LIVE_INSTALL)
    with pytest.raises(ConfigError, match="cannot be sharded"):
        t.run(built.art, built.data.replay_table, tmp_path, "x", replay=ReplayConfig(clock="trace"),
              control=SimpleNamespace(enabled=True))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="at least 1"):
        sharded(ReferenceTarget(), 0)


def _check(res: TargetResult, art, table, k: int) -> None:  # type: ignore[no-untyped-def]
    assert_conformant(res, len(table))
    want = sharded_reference(art, table, k)
    for f in FIELDS[:-1]:  # the flag TRACE_CLOCK says what the frame carried (docs/pipeline.md, "Clocks")
        mask = ~np.uint8(VerdictFlag.TRACE_CLOCK) if f == "flags" else ~np.uint64(0)
        assert np.array_equal(getattr(res.verdicts, f) & mask, getattr(want, f) & mask), f
    assert res.outcome is not None and res.outcome.accounting.replayed == len(table)
    assert res.shards == k


@pytest.mark.root
@pytest.mark.parametrize("name", TESTBEDS)
def test_two_testbeds_at_once_give_the_sharded_reference(name: str, prior_on, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cls = target_class(name)
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"{name} cannot run here: {why}")
    art, table = prior_on.art, prior_on.data.replay_table
    if cls.conformance_frames:
        table = table.take(np.arange(min(len(table), cls.conformance_frames)))
    t = sharded(cls(build_dir=tmp_path / "build"), 2)
    with t:
        res = t.run(art, table, tmp_path, "sharded", replay=ReplayConfig(clock="trace", mode="pps",
                                                                          pps=cls.conformance_pps or 1))
    _check(res, art, table, 2)
    assert {p.name for p in tmp_path.glob("shard-*")} == {"shard-1-of-2", "shard-2-of-2"}  # a run dir each


def test_an_efficiency_from_a_lower_bound_rate_is_shown_as_a_bound() -> None:
    """A rate whose every ladder step held is only a lower bound (the senders', not the switches'): the efficiency
    agg(K) / (K x agg(1)) is then at most (agg(1) a bound), at least (agg(K) a bound) or unknown (both)."""
    from chimera.bench.blocks import efficiency_bound
    assert efficiency_bound(0.68, k_lower=True, one_lower=True).startswith("unknown")
    assert efficiency_bound(0.21, k_lower=False, one_lower=True) == "at most 0.21"
    assert efficiency_bound(0.21, k_lower=True, one_lower=False) == "at least 0.21"
    assert efficiency_bound(0.21, k_lower=False, one_lower=False) == "0.21"
