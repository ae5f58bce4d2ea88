"""The slow loop: proposals, decisions, failed installs, the reference's install schedule, live-update
conformance semantics, and the P4Runtime install path against a recording P4Runtime server."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import numpy as np
import pandas as pd
import pytest

from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import InstallReport, SlowLoop
from chimera.controlplane.offline import run_controlled
from chimera.controlplane.recluster import MapVersion, Reclusterer, churn
from chimera.errors import ConfigError, TargetError
from chimera.experiments.load import load_experiment
from chimera.metrics.timeseries import binned_f1, trace_stability
from chimera.reference.pipeline import (run_reference, run_reference_segments, run_reference_versions,
                                        sample_word)

from builders import quickstart_artifact


@pytest.fixture(scope="module")
def built():  # type: ignore[no-untyped-def]
    return quickstart_artifact()


def _words(table: Any, scale: float = 1.0, seed: int = 0) -> np.ndarray:
    """Sample words of a table's packets (lengths scaled: a drifted distribution)."""
    from chimera.data.tokens import proto_class
    from chimera.model.tokenizer import flag_class
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(table), size=min(4096, len(table)), replace=False)
    lens = np.minimum((table.ip_len[rows] * scale).astype(np.int64), 65535)
    return sample_word(lens, rng.integers(1, 8, rows.size), rng.integers(0, 2, rows.size),
                       flag_class(table.tcp_flags[rows]).astype(np.int64), proto_class(table.proto[rows]).astype(np.int64))


class FakeSwitch:
    """SwitchControl over given registers; records installs, can fail them."""

    def __init__(self, words: np.ndarray, fail: bool = False) -> None:
        self.words, self.fail, self.installed = words, fail, []

    def registers(self) -> dict[str, Any]:
        return {"sample": self.words, "sample_count": len(self.words), "ema": np.ones(4)}

    def install_map(self, art: Any) -> InstallReport:
        if self.fail:
            raise TargetError("entry rejected by the switch", "none")
        self.installed.append(art)
        return InstallReport(0.001, 10)


def test_undrifted_traffic_proposes_little_and_drift_proposes_more(built) -> None:  # type: ignore[no-untyped-def]
    art, table = built.art, built.data.ds.table.take(built.data.train_rows)
    fit = Reclusterer(art, ControlPlaneConfig(rebin="coarse"))
    same = fit.propose(MapVersion.of(art), _words(table))
    drifted = fit.propose(MapVersion.of(art), _words(table, scale=2.0))
    assert same is not None and drifted is not None
    assert drifted.delta > same.delta
    assert drifted.mapv.version == art.c("MAP_VERSION") + 1
    assert churn(MapVersion.of(art), drifted.mapv)["total"] == drifted.churn["total"] > 0
    assert fit.propose(MapVersion.of(art), _words(table)[:10]) is None  # too few samples: no proposal


def test_warm_start_keeps_centroid_ids(built) -> None:  # type: ignore[no-untyped-def]
    """Re-clustering the training distribution moves few keys: ids stay where their keys are."""
    art, table = built.art, built.data.ds.table.take(built.data.train_rows)
    p = Reclusterer(art, ControlPlaneConfig(rebin="off")).propose(MapVersion.of(art), _words(table))
    assert p is not None
    assert np.mean(p.mapv.map == art.map) > 0.9


def test_delta_at_most_tau_installs_nothing(built) -> None:  # type: ignore[no-untyped-def]
    sw = FakeSwitch(_words(built.data.ds.table, scale=2.0))
    loop = SlowLoop(built.art, ControlPlaneConfig(tau_map=0.999))
    st = loop.run_step(sw, 1.0)
    assert st.decision == "hold" and not sw.installed and loop.current.version == built.art.c("MAP_VERSION")
    loop2 = SlowLoop(built.art, ControlPlaneConfig(tau_map=0.0))
    st2 = loop2.run_step(sw, 1.0)
    assert st2.decision == "install" and len(sw.installed) == 1 and loop2.current.version == st2.installed_version
    assert set(loop2.artifacts) == {built.art.c("MAP_VERSION"), st2.installed_version}


def test_failed_install_keeps_the_old_version(built) -> None:  # type: ignore[no-untyped-def]
    sw = FakeSwitch(_words(built.data.ds.table, scale=2.0), fail=True)
    loop = SlowLoop(built.art, ControlPlaneConfig(tau_map=0.0))
    st = loop.run_step(sw, 1.0)
    assert st.decision == "failed" and "rejected" in st.error
    assert loop.current.version == built.art.c("MAP_VERSION") and list(loop.artifacts) == [loop.current.version]
    stop = SlowLoop(built.art, ControlPlaneConfig(tau_map=0.0, on_install_failure="stop"))
    with pytest.raises(TargetError, match="stop"):
        stop.run_step(sw, 1.0)


def test_segments_and_versions_compose_exactly(built) -> None:  # type: ignore[no-untyped-def]
    """Cutting a run anywhere (state carried) changes nothing; the switch's version record replays installs."""
    art, table = built.art, built.data.replay_table
    whole, st = run_reference(art, table)
    cut, st2 = run_reference_segments([art, art, art], [0, 7, len(table) // 2], table)
    assert np.array_equal(whole.label, cut.label) and np.array_equal(st.class_ema, st2.class_ema)
    other = MapVersion(art.c("MAP_VERSION") + 1, art.len_lo, art.len_fine_lo,
                       (art.map + 5) % art.c("NUM_CENTROIDS")).apply(art)
    k = len(table) // 3
    seg, _ = run_reference_segments([art, other], [0, k], table)
    ver, _ = run_reference_versions({art.c("MAP_VERSION"): art, other.c("MAP_VERSION"): other}, table,
                                    seg.map_version)
    assert np.array_equal(seg.label, ver.label) and np.array_equal(seg.centroid, ver.centroid)
    assert (seg.map_version[:k] == art.c("MAP_VERSION")).all() and (seg.map_version[k:] == other.c("MAP_VERSION")).all()
    assert (seg.centroid[k:] != whole.centroid[k:]).mean() > 0.5  # the second version really differs per packet
    with pytest.raises(KeyError, match="never installed"):
        run_reference_versions({art.c("MAP_VERSION"): art}, table, seg.map_version)


def test_reference_install_schedule(built) -> None:  # type: ignore[no-untyped-def]
    """Offline: installs take effect reference_install_ms after the tick, at a packet boundary; the result is
    the reference replayed on its own version record."""
    art, table = built.art, built.data.replay_table
    dur = (table.ts_ns[-1] - table.ts_ns[0]) / 1e9
    loop = SlowLoop(art, ControlPlaneConfig(tau_map=0.0, t_cp_s=dur / 5, min_samples=16), compression=1.0)
    v, st = run_controlled(art, table, loop)
    inst = [s for s in loop.steps if s.decision == "install"]
    assert inst and np.all(np.diff(v.map_version.astype(np.int64)) >= 0)
    first = np.flatnonzero(v.map_version == inst[0].installed_version)[0]
    t_flip = table.ts_ns[0] + (inst[0].t_trace_s + loop.cfg.reference_install_ms / 1e3) * 1e9
    assert table.ts_ns[first] >= t_flip - 1 and table.ts_ns[first - 1] < t_flip + 1
    again, st2 = run_reference_versions(loop.artifacts, table, v.map_version)
    assert np.array_equal(again.label, v.label) and np.array_equal(st.ema, st2.ema)
    off, _ = run_controlled(art, table, SlowLoop(art, ControlPlaneConfig(enabled=False)))
    assert np.array_equal(off.label, run_reference(art, table)[0].label)


@pytest.mark.parametrize("over, match", [
    ({"compile": {"ema_eta": 0.9}}, r"compile\.ema_eta"),
    ({"control": {"tau_map": 1.5}}, r"control\.tau_map"),
    ({"control": {"t_cp_s": 0}}, r"control\.t_cp_s"),
    ({"cadence": {"etas": [0.0]}}, r"cadence\.etas"),
    ({"stability": {"train_hours": 30}}, r"train_hours"),
])
def test_control_config_errors_name_the_key(over: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_experiment("hyper_cadence", over)


def test_stability_labels_are_computed() -> None:
    h = np.arange(0.5, 24, 1.0)
    flat = pd.DataFrame({"t_mid_h": h, "f1": 0.8, "f1_lo": 0.79, "f1_hi": 0.81})
    assert trace_stability(flat, 12.0)["label"] == "stable"
    osc = flat.assign(f1=0.8 + 0.1 * (np.arange(h.size) % 2))
    assert trace_stability(osc, None)["label"] == "oscillating"
    slow = flat.assign(f1=np.where(h < 12, 0.9, np.minimum(0.9, 0.6 + 0.03 * (h - 12))))
    r = trace_stability(slow, 12.0)
    assert r["label"] == "slow" and r["response_h"] > 6


def test_binned_f1_intervals_cover_the_truth() -> None:
    """The per-bin interval is a real 95% interval: over repeated samples from one population it covers the
    population's macro-F1 most of the time (an interval of zero width, or around the wrong value, fails), and a
    bin with ten times the flows has a narrower one."""
    from chimera.metrics.classification import macro_f1

    def draw(rng: np.random.Generator, flows: int) -> tuple:  # type: ignore[type-arg]
        f = rng.integers(0, flows, 20 * flows)              # packets of ``flows`` flows
        y = (f % 3).astype(np.int64)                          # a flow's packets share a class
        right = rng.uniform(size=flows) < 0.75               # whole flows right or wrong (clustered errors)
        pred = np.where(right[f] | (rng.uniform(size=f.size) < 0.3), y, (y + 1) % 3)
        return rng.uniform(0, 3600, f.size), y, pred, f

    _, y_big, p_big, _ = draw(np.random.default_rng(99), 200_000)
    truth = macro_f1(y_big, p_big)
    rng = np.random.default_rng(0)
    covered, widths = 0, {}
    for k in range(40):
        t, y, pred, f = draw(rng, 60)
        b = binned_f1(t, y, pred, f, 3600, 3, bootstrap=200, seed=k)
        lo, hi = float(b["f1_lo"].iloc[0]), float(b["f1_hi"].iloc[0])
        covered += lo <= truth <= hi
        widths.setdefault(60, []).append(hi - lo)
    t, y, pred, f = draw(rng, 600)
    b = binned_f1(t, y, pred, f, 3600, 3, bootstrap=200)
    assert 0.8 <= covered / 40 <= 1.0, covered
    assert float(b["f1_hi"].iloc[0] - b["f1_lo"].iloc[0]) < 0.6 * float(np.mean(widths[60]))


# --------------------------------------------------------------------------- the P4Runtime install path

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _recording_server(addr: str, reject_table: int | None):  # type: ignore[no-untyped-def]
    import grpc
    from finsy.proto import p4r
    from finsy.test.p4runtime_server import P4RuntimeServer

    class Recorder(P4RuntimeServer):
        writes: list[Any] = []

        async def Write(self, request, context):  # type: ignore[no-untyped-def]
            ids = {u.entity.table_entry.table_id for u in request.updates}
            self.writes.append(request)
            if reject_table in ids:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "entry rejected")
            return p4r.WriteResponse()

    Recorder.writes = []
    return Recorder(addr)


def _sync(art_held: Any, art_new: Any, reject: str | None) -> tuple[Any, list[Any]]:
    from finsy import Switch, SwitchOptions

    from chimera.targets.bmv2.p4rt import model_entries, sync_version
    from chimera.targets.bmv2.schema import P4INFO, TABLE_BY_NAME

    addr = f"127.0.0.1:{_free_port()}"
    server = _recording_server(addr, TABLE_BY_NAME[reject].id if reject else None)

    async def go() -> Any:
        async with server.run():
            async with Switch("s1", addr, SwitchOptions(p4info=P4INFO, device_id=1)) as sw:
                server.writes.clear()  # what matters is the install, not the connection's own setup
                return await sync_version(sw, art_new, 0, model_entries(art_held, 0))

    try:
        return asyncio.run(go()), server.writes
    except Exception as e:  # noqa: BLE001
        return e, server.writes


def test_p4runtime_live_update_writes_map_tables_then_flips(built) -> None:  # type: ignore[no-untyped-def]
    from chimera.targets.bmv2.schema import TABLE_BY_NAME
    art = built.art
    new = MapVersion(art.c("MAP_VERSION") + 1, art.len_lo, art.len_fine_lo,
                     (art.map + 1) % art.c("NUM_CENTROIDS")).apply(art)
    res, writes = _sync(art, new, None)
    assert not isinstance(res, Exception), res
    dt, held, n = res
    tables = {u.entity.table_entry.table_id for w in writes for u in w.updates}
    allowed = {TABLE_BY_NAME[t].id for t in ("map_exact", "params", "active_version")}
    assert tables <= allowed and TABLE_BY_NAME["map_exact"].id in tables
    last = writes[-1].updates
    assert len(last) == 1 and last[0].entity.table_entry.table_id == TABLE_BY_NAME["active_version"].id
    changed = int(np.sum(art.map != new.map))
    assert n == changed + 1 + 1  # the changed map entries, the parameters (map version), the flip


def test_p4runtime_rejected_write_never_flips(built) -> None:  # type: ignore[no-untyped-def]
    from chimera.targets.bmv2.schema import TABLE_BY_NAME
    art = built.art
    new = MapVersion(art.c("MAP_VERSION") + 1, art.len_lo, art.len_fine_lo,
                     (art.map + 1) % art.c("NUM_CENTROIDS")).apply(art)
    res, writes = _sync(art, new, "map_exact")
    assert isinstance(res, Exception)
    flip = TABLE_BY_NAME["active_version"].id
    assert writes and all(u.entity.table_entry.table_id != flip for w in writes for u in w.updates)


def test_p4runtime_entries_read_back_diff_to_nothing(built) -> None:  # type: ignore[no-untyped-def]
    """After a failed install the node reads a version back from the switch and diffs against it: entries
    decoded from the wire (P4Info aliases, canonical values) must key equal to the ones we build, or every
    install after a failure would rewrite the whole version."""
    from finsy import P4Schema, P4TableEntry

    from chimera.targets.bmv2.p4rt import model_entries, version_diff
    from chimera.targets.bmv2.schema import P4INFO
    schema = P4Schema(P4INFO)
    ours = model_entries(built.art, 1)
    wire = [P4TableEntry.decode(e.encode(schema), schema) for e in ours]
    assert [len(x) for x in version_diff(wire, ours)] == [0, 0, 0]
    changed = list(ours)
    changed[0] = P4TableEntry.decode(ours[0].encode(schema), schema)
    assert len(version_diff(wire[1:], changed)[2]) == 1  # a missing entry is still found


def test_p4runtime_prior_install_writes_one_soft_entry_then_flips() -> None:
    """A prior-shift install changes the reserved prior rule's weights only: one modify of that rule's soft table
    entry (its action data), the parameters (the map version), then the flip; no Map entry."""
    from chimera.controlplane.recluster import prior_rule
    from chimera.targets.bmv2.schema import TABLE_BY_NAME
    art = quickstart_artifact(compile={"prior_logits": 2.0}).art
    w = np.arange(art.c("NUM_CLASSES"), dtype=np.int64) * 3
    new = MapVersion.of(art).successor(prior=w).apply(art)
    res, writes = _sync(art, new, None)
    assert not isinstance(res, Exception), res
    _, _, n = res
    tables = [u.entity.table_entry.table_id for wr in writes for u in wr.updates]
    soft = TABLE_BY_NAME[f"soft_{prior_rule(art)}"].id
    assert sorted(tables) == sorted([soft, TABLE_BY_NAME["params"].id, TABLE_BY_NAME["active_version"].id])
    assert tables[-1] == TABLE_BY_NAME["active_version"].id and n == 3


def test_the_papers_ema_centroid_update() -> None:
    """centroid_update: ema (the paper's Table 5 loop): each centre moves eta of the way toward the mean of the
    points nearest to it, once per T_cp; eta = 1 is one Lloyd iteration; a centre no point is nearest to stays; the
    memory is 1/eta epochs."""
    import numpy as np

    from chimera.controlplane.config import ControlPlaneConfig
    from chimera.controlplane.recluster import ema_step, lloyd
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    w = rng.uniform(1, 3, 50)
    c = np.array([[0.0, 0.0, 0.0], [3.0, 3.0, 3.0], [100.0, 100.0, 100.0]])
    one = lloyd(x, w, c, 1)
    assert np.allclose(ema_step(x, w, c, 1.0), one)
    step = ema_step(x, w, c, 0.1)
    assert np.allclose(step, c + 0.1 * (one - c))                    # a tenth of the way toward the same target
    assert np.array_equal(step[2], c[2])                              # nobody's nearest: unmoved
    assert ControlPlaneConfig(centroid_update="ema", eta=0.05).memory_epochs == 20
    assert ControlPlaneConfig().memory_epochs == 0


def test_the_papers_table5_loop_is_a_configuration() -> None:
    """hyper_cadence_slow sweeps the slow loop's EMA centroid rate (the paper's eta), not the dataplane's: each
    cell's loop updates its centroids by EMA at that eta, its memory 1/eta epochs, the dataplane's step unchanged."""
    from chimera.experiments.kinds.stability.run import control_for
    from builders import quickstart_artifact
    cfg = load_experiment("hyper_cadence_slow")
    assert cfg.cadence.eta_of == "slow_loop" and load_experiment("hyper_cadence").cadence.eta_of == "dataplane"
    cfg = cfg.model_copy(update={"stability": cfg.stability.model_copy(update={"compression": 1.0})})
    loop = control_for(cfg, "Chimera", quickstart_artifact().art, t_cp_s=60.0, centroid_update="ema", eta=0.3)
    assert (loop.cfg.centroid_update, loop.cfg.eta, loop.cfg.t_cp_s) == ("ema", 0.3, 60.0)
    assert round(loop.cfg.memory_epochs) == 3


def test_the_papers_loop_is_a_stability_configuration() -> None:
    """Issue 56: the stability day runs the paper's slow loop beside ours: Paper-Loop is Chimera (fast path on) with
    the EMA centroid update at Table 5's operating point (eta 0.1, 10 epochs, T_cp 60 s) in place of the k-means
    re-fit at the experiment's T_cp, and stability24h runs it."""
    from chimera.experiments.kinds.stability.config import ADAPTATIONS
    from chimera.experiments.kinds.stability.run import COMPARISONS, control_for
    from builders import quickstart_artifact
    cfg = load_experiment("stability24h")
    assert "Paper-Loop" in cfg.stability.configurations and ADAPTATIONS["Paper-Loop"].fast_prior
    cfg = cfg.model_copy(update={"stability": cfg.stability.model_copy(update={"compression": 1.0})})
    art = quickstart_artifact().art
    paper, ours = control_for(cfg, "Paper-Loop", art), control_for(cfg, "Chimera", art)
    assert (paper.cfg.centroid_update, paper.cfg.eta, paper.cfg.t_cp_s, round(paper.cfg.memory_epochs)) == (
        "ema", 0.1, 60.0, 10)
    assert (ours.cfg.centroid_update, ours.cfg.t_cp_s) == ("kmeans", cfg.control.t_cp_s)
    assert ("Paper-Loop", "Chimera") in {(a, b) for a, b, _ in COMPARISONS}


def test_the_papers_table5_rows_are_the_cells_run() -> None:
    """hyper_cadence_slow replays exactly the (eta, T_cp) rows of the paper's Table 5 (cadence.rows), not the grid
    around them, and each row is one cell of a sweep; a repeated row is refused (seen failing with the grid kept)."""
    from chimera.book.paper import load, number
    from chimera.experiments.kinds.cadence.config import CadenceSpec
    from chimera.experiments.kinds.cadence.run import cells
    cfg = load_experiment("hyper_cadence_slow")
    paper = [(number(r["eta"]), number(r["t_cp_s"])) for r in load()["table5_hyper_cadence"].records()]
    assert cfg.cadence.cells == paper
    assert [(c.fixes["eta"], c.fixes["t_cp_s"]) for c in cells(cfg)] == paper
    one = cfg.model_copy(update={"cadence": CadenceSpec.model_validate(cells(cfg)[4].override["cadence"])})
    assert one.cadence.cells == [paper[4]]
    assert CadenceSpec(etas=[0.1, 0.3], t_cp_s=[60.0]).cells == [(0.1, 60.0), (0.3, 60.0)]
    with pytest.raises(ValueError, match="repeats a cell"):
        CadenceSpec(rows=[(0.1, 60.0), (0.1, 60.0)])
