"""Scale: a 10-million-packet dataset through every offline stage, with the time and peak memory of each.

Stages: generate (the synthetic generator streams ~1 GB of frames straight into a
normalized dataset), normalize (that capture again, as a raw capture, through the
adapters' path: read, timeline, stream), load + flows + split, tokenize, rules,
train (a seeded sample of whole training flows: ``max_train_packets``), compile,
and score the test split on the reference pipeline. The capture is headers-only
(snaplen 96, wire lengths kept: every field the pipeline reads is in the
headers), as large public traces usually are. Peak RSS is the process's
high-water mark after each stage. Goal here (2 cores, 24 GiB): <= 10 min in all
and <= 8 GiB. The ~2 GB of captures it writes are removed at the end.
"""

from __future__ import annotations

import json
import logging
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from chimera.bench.results import BenchResult, bench_run
from chimera.data.dataset import CaptureSpec, load_dataset, write_dataset
from chimera.data.synthetic import SyntheticSpec, generate
from chimera.experiments.config import resolve_variants
from chimera.experiments.load import load_experiment
from chimera.experiments.stages.compile import compile_variant
from chimera.experiments.stages.dataset import prepare
from chimera.experiments.stages.rules import load_and_learn
from chimera.experiments.stages.train import ModelCache, train_variant
from chimera.metrics.classification import macro_f1
from chimera.reference.pipeline import run_reference

log = logging.getLogger(__name__)
GOAL_S, GOAL_GIB = 600.0, 8.0
PACKETS_PER_FLOW = 171  # the iscxvpn profile's mean at max_packets_per_flow=400 (measured)
SNAPLEN = 96  # headers-only capture, as large public traces are: ~1 GB for 10 M packets


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


class ScaleResult(BenchResult):
    stages: list[dict[str, Any]]        # scale.csv's rows: each stage's time and peak memory
    total_s: float
    peak_rss_gib: float
    goal_met: bool


def main(results_root: str | Path = "results", packets: int = 10_000_000, max_train_packets: int = 1_000_000,
         work_dir: Path | None = None) -> pd.DataFrame:
    flows = max(10, packets // PACKETS_PER_FLOW)
    params: dict[str, Any] = {"target_packets": packets, "flows": flows, "profile": "iscxvpn",
                              "max_train_packets": max_train_packets, "goal_s": GOAL_S, "goal_peak_gib": GOAL_GIB}
    rows: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="chimera-scale-", dir=work_dir))
    t_all = time.perf_counter()

    def stage(name: str, t0: float, **extra: Any) -> None:
        rows.append({"stage": name, "seconds": time.perf_counter() - t0, "peak_rss_gib": _peak_gib(), **extra})
        log.info("[scale] %-10s %7.1f s  peak RSS %.2f GiB %s", name, rows[-1]["seconds"], rows[-1]["peak_rss_gib"],
                 extra or "")

    try:
        with bench_run("scale", params, results_root) as run:
            t0 = time.perf_counter()
            gen = generate(SyntheticSpec(profile="iscxvpn", flows=flows, seed=7, duration_s=3600.0,
                                         max_packets_per_flow=400, snaplen=SNAPLEN), work / "generated")
            stage("generate", t0, packets=int(load_manifest(gen)["packets"]),
                  pcap_gib=(gen / "packets.pcap").stat().st_size / 2**30)
            t0 = time.perf_counter()
            raw = load_dataset(gen)
            labels, classes = raw.labels, raw.classes
            del raw
            norm = write_dataset(work / "normalized", [CaptureSpec(gen / "packets.pcap", packet_labels=labels)],
                                 classes, name="scale", source="synthetic", seed=7)
            del labels
            stage("normalize", t0)
            t0 = time.perf_counter()
            cfg = load_experiment("quickstart", {"dataset": {"path": str(norm), "synthetic": None},
                                                 "model": {"max_train_packets": max_train_packets, "epochs": 8}})
            v = resolve_variants(cfg)[0]
            data = prepare(load_dataset(norm), cfg.seed)
            stage("load+flows+split", t0, flows=int(data.ds.flows.n_flows))
            t0 = time.perf_counter()
            rules = load_and_learn(cfg.rules, data, cfg.seed, cfg.rule_precision_floor)
            stage("rules", t0)
            t0 = time.perf_counter()
            cache = ModelCache()
            trained = train_variant(data, rules, v, cfg.seed, cache)
            stage("tokenize+train", t0, epochs=trained.model.epochs_run)
            t0 = time.perf_counter()
            art = compile_variant(data, rules, v, trained)
            stage("compile", t0)
            t0 = time.perf_counter()
            verdicts, _ = run_reference(art, data.replay_table)
            f1 = macro_f1(data.y(data.test_rows), verdicts.label[data.test_in_replay].astype(int))
            stage("score (reference)", t0, test_packets=int(data.test_rows.size), macro_f1=f1)
            total = time.perf_counter() - t_all
            table = pd.DataFrame(rows)
            table.to_csv(run.path / "scale.csv", index=False)
            peak = float(table["peak_rss_gib"].max())
            run.manifest.put("result", ScaleResult(stages=rows, total_s=total, peak_rss_gib=peak,
                                                   goal_met=bool(total <= GOAL_S and peak <= GOAL_GIB)))
            (run.path / "report.md").write_text("\n".join([
                f"# Scale: {rows[0].get('packets', 0):,} packets through every offline stage", "",
                table.to_markdown(index=False, floatfmt=".2f"), "",
                f"Total {total:.0f} s (goal <= {GOAL_S:.0f} s); peak RSS {peak:.2f} GiB (goal <= {GOAL_GIB} GiB).", ""]))
            log.info("[scale] total %.0f s (goal %.0f), peak RSS %.2f GiB (goal %.0f): %s", total, GOAL_S, peak,
                     GOAL_GIB, "met" if total <= GOAL_S and peak <= GOAL_GIB else "NOT met")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return table


def load_manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / "manifest.json").read_text())
