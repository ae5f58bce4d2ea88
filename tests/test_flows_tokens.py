"""Flows, splits and tokens against straightforward re-implementations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chimera.data.dataset import load_dataset
from chimera.data.flows import frozen_split
from chimera.data.tokens import bit_length, iat_bucket_of, tokenize
from chimera.model.tokenizer import DIRS, SUB_TOKENS, fit_map, pair_port_id, ports_by_peers


def test_flows_match_naive_dict(synth_small: Path) -> None:
    ds = load_dataset(synth_small)
    t, f = ds.table, ds.flows
    seen: dict[tuple, int] = {}
    first_dir: dict[int, tuple] = {}
    last_ts: dict[int, int] = {}
    count: dict[int, int] = {}
    for i in range(len(t)):
        a = (bytes(t.src[i]), int(t.sport[i]))
        b = (bytes(t.dst[i]), int(t.dport[i]))
        key = (int(t.capture[i]), int(t.proto[i])) + tuple(sorted([a, b]))
        fid = seen.setdefault(key, len(seen))
        assert f.flow_id[i] == fid
        first_dir.setdefault(fid, a)
        assert f.direction[i] == (0 if first_dir[fid] == a else 1)
        assert f.pkt_index[i] == count.get(fid, 0)
        assert f.iat_ns[i] == (int(t.ts_ns[i]) - last_ts[fid] if fid in last_ts else -1)
        count[fid] = count.get(fid, 0) + 1
        last_ts[fid] = int(t.ts_ns[i])
    assert f.n_flows == len(seen)


def test_split_invariants(synth_small: Path) -> None:
    ds = load_dataset(synth_small)
    lab = ds.flow_labels()
    keys = ds.group_keys()
    s1, s2 = frozen_split(lab, keys, 5), frozen_split(lab, keys, 5)
    assert np.array_equal(s1, s2)
    s3 = frozen_split(lab, keys, 6)
    assert not np.array_equal(s1, s3)
    frac = np.bincount(s1, minlength=3) / s1.size
    assert abs(frac[0] - 0.75) < 0.05 and abs(frac[1] - 0.10) < 0.05 and abs(frac[2] - 0.15) < 0.05
    for y in np.unique(lab):  # stratified: every class (with >= 3 flows) in every split
        if (lab == y).sum() >= 3:
            assert set(s1[lab == y]) == {0, 1, 2}
    # a flow's packets all carry the flow's split
    ps = ds.packet_split()
    ok = ds.flows.flow_id >= 0
    assert np.array_equal(ps[ok], ds.flow_split()[ds.flows.flow_id[ok]])


def test_the_test_partition_is_frozen_and_a_group_never_straddles_it(synth_small: Path) -> None:
    """Seeds re-split train and validation only: the test partition is the hash rule's, the same for every seed
    (seen failing with the seed-shuffled split, which re-drew the test flows per seed); a group (a capture file
    on a real set) is wholly in test or wholly out."""
    ds = load_dataset(synth_small)
    lab = ds.flow_labels()
    splits = [ds.flow_split(seed) for seed in (1, 2, 3, 11)]
    assert all(np.array_equal(s == 2, splits[0] == 2) for s in splits)
    assert not all(np.array_equal(s, splits[0]) for s in splits)
    files = [f"{'AB'[i % 2]}/{i // 7}.pcap" for i in range(lab.size)]   # several flows per "file"
    s = frozen_split(lab, files, 1)
    for f in set(files):
        got = {int(x) for x, g in zip(s, files) if g == f}
        assert not (2 in got and len(got) > 1), (f, got)
    assert np.array_equal(s == 2, frozen_split(lab, files, 9) == 2)


@given(st.integers(min_value=0, max_value=2**62))
def test_bit_length(x: int) -> None:
    assert int(bit_length(np.array([x]))[0]) == x.bit_length()


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=2**62), st.integers(min_value=-1, max_value=2**40))
def test_iat_bucket_definition(ts: int, iat: int) -> None:
    if iat < 0:
        expected = 0
    else:
        units = ((ts >> 10) - ((ts - iat) >> 10)) % 2**32
        expected = 1 + min(units.bit_length(), 14)
    assert int(iat_bucket_of(np.array([ts]), np.array([iat]))[0]) == expected


@settings(deadline=None)  # correctness, not timing: a busy machine must not fail it
@given(st.integers(0, 63), st.integers(0, 63))
def test_pair_port_id_is_the_higher_ranked_of_the_two(sid: int, did: int) -> None:
    naive = min((i for i in (sid, did) if i), default=0)
    assert int(pair_port_id(np.array([sid]), np.array([did]))[0]) == naive


def test_port_sub_token_keys_on_either_port(synth_small: Path) -> None:
    """The vocabulary ranks ports on either side, and a flow seen from its server's side (the service port as
    sport of the first packet) gets the service port's id, which the responder-port rule lost."""
    ds = load_dataset(synth_small)
    tok = tokenize(ds.table, ds.flows)
    t = ds.table
    mp = fit_map(tok, 8, 0, port_ids=8, sport=t.sport, dport=t.dport)
    assert mp.port_vocab.tolist() == ports_by_peers(t.sport, t.dport, 7).tolist()  # rank order
    service = int(mp.port_vocab[0])
    sport, dport = np.array([service, 50123, service]), np.array([50123, service, service])
    port = SUB_TOKENS.index("port")
    sub = mp.sub_tokens(_take(tok, 3), sport, dport, np.array([1, 1, 1]))
    assert (sub[:, port] // DIRS).tolist() == [1, 1, 1]
    other = np.array([50123, 50124, 50125])
    assert (mp.sub_tokens(_take(tok, 3), other, other + 10, np.array([1, 1, 1]))[:, port] // DIRS).tolist() == [0, 0, 0]


def _take(tok, n: int):  # type: ignore[no-untyped-def]
    import dataclasses
    return type(tok)(**{f.name: getattr(tok, f.name)[:n] for f in dataclasses.fields(tok)})


def test_ports_by_peers_ranks_the_service_port_above_a_busy_ephemeral_one() -> None:
    # port 50000 carries the most packets but only ever talks to 443; 80 talks to three client ports
    sport = np.array([50000] * 10 + [40001, 40002, 40003])
    dport = np.array([443] * 10 + [80, 80, 80])
    assert ports_by_peers(sport, dport, 3).tolist() == [80, 443, 50000]
