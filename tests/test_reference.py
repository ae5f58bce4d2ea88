"""The integer reference pipeline against the straightforward oracle, on random tables and traffic."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chimera.data.pcap import PacketTable, ParseStatus
from chimera.formats.artifact import Artifact
from chimera.model.tokenizer import FLAG_TERNARY, MAP_KEYS
from chimera.reference.pipeline import SwitchState, crc32_columns, flow_hash, run_reference

from chimera.fuzz.oracle import oracle


def random_artifact(seed: int, *, C: int = 6, Y: int = 3, L: int = 4, F: int = 8, form: str = "incremental",
                    lambda_h: int = 1, use_window: int = 1, gamma: int | None = None) -> Artifact:
    """Random tables of every kind. form: incremental (factorized kernel), batch (the same kernel, re-summed),
    or table (a free kernel table, batch: the rff/softmax form)."""
    rng = np.random.default_rng(seed)
    m, dv, nfine = 3, 2, 8
    len_lo = np.r_[0, np.sort(rng.choice(np.arange(1, 1500), 15, replace=False))]
    fine_lo = np.r_[0, np.sort(rng.choice(np.arange(1, 1500), nfine - 1, replace=False))]
    sizes = (2 * nfine, 32, 32, 2 * 64, 16)
    vals = [rng.integers(-127, 128, (n, dv)) for n in sizes]
    if form == "table":
        phi_q = phi_k = np.zeros((C, m), np.int64)
        kernel = rng.integers(1, 256, (C, C))
    else:
        phi_q, phi_k = rng.integers(0, 256, (C, m)), rng.integers(1, 256, (C, m))
        phi_q[:, 0] = np.maximum(phi_q[:, 0], 1)
        kernel = phi_q @ phi_k.T
    g_rows = []
    for _ in range(int(rng.integers(0, 6))):
        cm = int(rng.choice([0, 0xFF, int(rng.integers(0, 256))]))
        pm = int(rng.choice([0, 0xFF, 1]))
        g_rows.append([int(rng.integers(0, C)) & cm, cm, int(rng.integers(0, 4)) & pm, pm,
                       *rng.integers(-5000, 5000, Y).tolist(), int(rng.integers(0, 3000))])

    def tern_rows(n: int) -> list[list[int]]:
        rows = []
        for _ in range(n):
            v, mk = [0] * 7, [0] * 7
            for f, choices in ((0, [6, 17]), (1, [0x02, 0x10, 0x12, 0x04]), (2, [0, 1]), (3, [1, 2, 3])):
                if rng.uniform() < 0.4:
                    mk[f] = 0xFF
                    v[f] = int(rng.choice(choices))
            if rng.uniform() < 0.3:
                mk[4] = 0xFFF0
                v[4] = int(rng.integers(0, 2**16)) & 0xFFF0
            rows.append(v + mk)
        return rows

    hard = [r + [i, int(rng.integers(0, Y))] for i, r in enumerate(tern_rows(int(rng.integers(0, 4))))]
    n_soft = int(rng.integers(0, 4))
    soft = [r + [int(rng.integers(0, n_soft))] for r in tern_rows(n_soft * 2)] if n_soft else []
    consts = {"NUM_CLASSES": Y, "NUM_CENTROIDS": C, "WINDOW": L, "FLOW_SLOTS": F, "USE_WINDOW": use_window,
              "ALPHA": int(rng.integers(0, 256)), "BETA": int(rng.integers(0, 256)), "LAMBDA_H": lambda_h,
              "GAMMA": int(rng.integers(0, 256)) if gamma is None else gamma,
              "SOFT_RULES": n_soft, "EMA_SHIFT": int(rng.integers(1, 8)), "EMA_FRAC": 16,
              "EMA_SHIFT2": int(np.random.default_rng(seed + 999).choice([0, 0, 2, 9])),  # own rng: draws above stay
              "MAP_VERSION": 3,
              "AGG_INCREMENTAL": int(form == "incremental"), "KERNEL_TABLE": int(form == "table"), "RF_FEATURES": m,
              "D_V": dv, "LEN_FINE": nfine, "SAMPLE_SHIFT": int(rng.integers(0, 3)), "SAMPLE_SLOTS": 16}
    ports = np.sort(rng.choice(np.array([53, 80, 443, 1234, 40000, 5353]), int(rng.integers(0, 5)), replace=False))
    return Artifact(classes=[f"c{i}" for i in range(Y)], constants=consts, len_lo=len_lo, len_fine_lo=fine_lo,
                    flag_ternary=np.asarray(FLAG_TERNARY), map=rng.integers(0, C, MAP_KEYS), port_vocab=ports,
                    val_len=vals[0], val_iat=vals[1], val_flags=vals[2], val_port=vals[3], val_index=vals[4],
                    phi_q=phi_q, phi_k=phi_k, kernel=kernel, w_out=rng.integers(-127, 128, (dv, Y)),
                    global_entries=np.asarray(g_rows, np.int64).reshape(-1, 4 + Y + 1),
                    hard=np.asarray(hard, np.int64).reshape(-1, 16),
                    soft_entries=np.asarray(soft, np.int64).reshape(-1, 15),
                    soft_weights=rng.integers(0, 128, (n_soft, Y)))


def random_packets(seed: int, n: int = 250) -> tuple[PacketTable, list[dict]]:
    rng = np.random.default_rng(seed + 7)
    hosts = rng.integers(0, 2**32, 6, dtype=np.uint64).astype(np.uint32)
    ends = [(int(rng.choice(hosts)), int(rng.choice([53, 80, 443, 1234, 40000]))) for _ in range(8)]
    rows = []
    ts = int(rng.integers(0, 2**50))
    for _ in range(n):
        a, b = ends[int(rng.integers(0, 8))], ends[int(rng.integers(0, 8))]
        gap = int(rng.choice([0, 500, 20_000, 3_000_000, 2**42 + int(rng.integers(0, 10**9))]))
        ts += gap
        rows.append({"src": a[0], "sport": a[1], "dst": b[0], "dport": b[1], "ts": ts,
                     "proto": int(rng.choice([6, 6, 17, 1, 47])), "flags": int(rng.integers(0, 256)),
                     "ip_len": int(rng.integers(20, 1600)), "parsed": bool(rng.uniform() < 0.9)})
    for r in rows:
        if r["proto"] not in (6, 17):
            r["sport"] = r["dport"] = 0
        if r["proto"] != 6:
            r["flags"] = 0
    return packet_table(rows), rows


def packet_table(rows: list[dict]) -> PacketTable:
    """A PacketTable of packets given as the oracle's dicts."""
    N = len(rows)
    col = lambda k, dt: np.array([r[k] for r in rows], dt)  # noqa: E731
    parsed = col("parsed", bool)
    z = np.zeros(N, np.uint16)
    t = PacketTable(ts_ns=col("ts", np.int64), caplen=np.full(N, 100, np.uint32), wirelen=np.full(N, 100, np.uint32),
                    offset=np.zeros(N, np.int64), capture=z, linktype=np.ones(N, np.uint16),
                    status=np.where(parsed, ParseStatus.OK, ParseStatus.FRAGMENT).astype(np.uint8),
                    ethertype=np.full(N, 0x0800, np.uint16), vlan=np.zeros(N, bool), l3_off=np.full(N, 14, np.uint16),
                    ip_version=np.full(N, 4, np.uint8), ip_len=col("ip_len", np.uint16), ttl=np.zeros(N, np.uint8),
                    proto=col("proto", np.uint8), src=np.zeros((N, 16), np.uint8), dst=np.zeros((N, 16), np.uint8),
                    src4=col("src", np.uint32), dst4=col("dst", np.uint32), sport=col("sport", np.uint16),
                    dport=col("dport", np.uint16), tcp_flags=col("flags", np.uint8))
    return t


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), form=st.sampled_from(["incremental", "batch", "table"]),
       lambda_h=st.sampled_from([0, 1]), use_window=st.sampled_from([0, 1, 1]), L=st.sampled_from([1, 2, 4, 8]),
       F=st.sampled_from([1, 4, 64]))
def test_reference_matches_oracle(seed: int, form: str, lambda_h: int, use_window: int, L: int, F: int) -> None:
    art = random_artifact(seed, form=form, lambda_h=lambda_h, use_window=use_window, L=L, F=F)
    table, rows = random_packets(seed)
    v, st_ = run_reference(art, table)
    exp, regs = oracle(art, rows)
    got = list(zip(v.label.tolist(), v.flags.tolist(), v.score.tolist(), v.rule_id.tolist(), v.centroid.tolist()))
    for i, (g, e) in enumerate(zip(got, exp)):
        assert g == e, f"packet {i}: reference {g} != oracle {e}"
    assert st_.ema.tolist() == regs["ema"]
    assert st_.class_ema.tolist() == regs["class_ema"]
    assert int(st_.counters[0]) == regs["evictions"]
    assert st_.sample.tolist() == regs["sample"] and int(st_.sample_count[0]) == regs["samples"]
    assert np.all(v.map_version == 3)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), L=st.sampled_from([1, 2, 4, 8]), F=st.sampled_from([1, 4, 64]))
def test_incremental_equals_batch(seed: int, L: int, F: int) -> None:
    """The dataplanes' running accumulators give exactly the integers of re-summing the window."""
    inc = random_artifact(seed, form="incremental", L=L, F=F)
    bat = random_artifact(seed, form="batch", L=L, F=F)
    table, _ = random_packets(seed)
    a, sa = run_reference(inc, table)
    b, sb = run_reference(bat, table)
    assert np.array_equal(a.fused, b.fused) and np.array_equal(a.label, b.label)
    assert np.array_equal(sa.class_ema, sb.class_ema)


def test_the_fast_path_prior_changes_verdicts() -> None:
    """GAMMA > 0 feeds the class EMA into fusion: some verdicts move; the oracle agrees on them."""
    table, rows = random_packets(11, 400)
    off = random_artifact(11, gamma=0, lambda_h=0)
    on = random_artifact(11, gamma=255, lambda_h=0)
    on.constants["ALPHA"] = off.constants["ALPHA"] = 1
    v_off, _ = run_reference(off, table)
    v_on, s_on = run_reference(on, table)
    assert (v_off.label != v_on.label).any()
    assert oracle(on, rows)[0] == list(zip(v_on.label.tolist(), v_on.flags.tolist(), v_on.score.tolist(),
                                          v_on.rule_id.tolist(), v_on.centroid.tolist()))
    assert s_on.class_ema.sum() > 0


def test_collisions_and_evictions_are_counted() -> None:
    art = random_artifact(5, F=1)  # one slot: every new flow evicts the previous one
    table, rows = random_packets(5, 200)
    v, st_ = run_reference(art, table)
    assert int(st_.counters[0]) == int(np.sum(v.flags & 0x04 > 0)) > 0
    assert int(st_.counters[0]) == oracle(art, rows)[1]["evictions"]


def test_state_continues_across_runs() -> None:
    art = random_artifact(9)
    table, _ = random_packets(9, 200)
    whole, _ = run_reference(art, table)
    state = SwitchState.for_artifact(art)
    a, _ = run_reference(art, table.take(np.arange(100)), state=state)
    b, _ = run_reference(art, table.take(np.arange(100, 200)), state=state)
    assert np.array_equal(np.r_[a.label, b.label], whole.label)
    assert np.array_equal(np.r_[a.score, b.score], whole.score)


@given(st.lists(st.binary(min_size=13, max_size=13), min_size=1, max_size=20))
def test_crc32_matches_zlib(blobs: list[bytes]) -> None:
    cols = [np.array([b[i] for b in blobs], np.uint8) for i in range(13)]
    assert crc32_columns(cols).tolist() == [zlib.crc32(b) for b in blobs]


def test_flow_hash_is_direction_independent() -> None:
    s, d = np.array([1, 9], np.uint32), np.array([9, 1], np.uint32)
    crc, swap = flow_hash(s, d, np.array([5, 7], np.uint16), np.array([7, 5], np.uint16), np.array([6, 6], np.uint8))
    assert crc[0] == crc[1] and swap.tolist() == [0, 1]


@pytest.mark.parametrize("form", ["incremental", "batch", "table"])
def test_unparsed_packets_touch_no_state(form: str) -> None:
    art = random_artifact(3, form=form)
    table, _ = random_packets(3, 100)
    table.status[:] = ParseStatus.FRAGMENT
    v, st_ = run_reference(art, table)
    assert np.all(v.flags == 0x02) and np.all(v.label == 0xFF)
    assert not st_.pkts.any() and not st_.ema.any() and not st_.class_ema.any() and not st_.sample_count[0]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), F=st.sampled_from([1, 8, 64]))
def test_coverage_counts_what_it_names(seed: int, F: int) -> None:
    """The decision-point counters are state the fuzzer compares across targets and reports as coverage, so the
    reference's must count exactly what each point names: here from the frames and the verdict flags alone. (A
    mutant that decremented the protocol-class counter survived every other test: the oracle has no counters.)"""
    from chimera.formats import coverage as cov
    from chimera.formats.verdict import VerdictFlag
    art = random_artifact(seed, F=F)
    table, rows = random_packets(seed)
    v, s = run_reference(art, table)
    c = cov.as_dict(s.coverage.tolist())
    parsed = np.array([r["parsed"] for r in rows])
    proto = np.array([r["proto"] for r in rows])
    flag = lambda f: int(np.sum(v.flags & f > 0))  # noqa: E731
    assert (c["parsed"], c["unparsed"]) == (int(parsed.sum()), flag(VerdictFlag.UNPARSED)) == \
        (int(parsed.sum()), int((~parsed).sum()))
    for point, ps in (("proto_tcp", [6]), ("proto_udp", [17]), ("proto_icmp", [1])):
        assert c[point] == int(np.sum(parsed & np.isin(proto, ps))), point
    assert c["proto_other"] == int(np.sum(parsed & ~np.isin(proto, [1, 6, 17])))
    assert (c["new_flow"], c["evict"], c["global_hit"]) == \
        (flag(VerdictFlag.NEW_FLOW), flag(VerdictFlag.EVICTED), flag(VerdictFlag.GLOBAL_HIT))
    for a, b in (("new_flow", "same_flow"), ("port_hit", "port_miss"), ("global_hit", "global_miss"),
                 ("hard_hit", "hard_miss"), ("soft_fired", "soft_none")):
        assert c[a] + c[b] == c["parsed"], (a, b)
    assert min(c.values()) >= 0
