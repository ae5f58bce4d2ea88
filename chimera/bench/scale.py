"""Scale: datasets of 10^5, 10^6 and 10^7 packets through every offline stage, with each stage's time and peak
memory, and how each grows with size.

Stages: generate (the synthetic generator streams ~1 GB of frames straight into a
normalized dataset), normalize (that capture again, as a raw capture, through the
adapters' path: read, timeline, stream), load + flows + split, tokenize, rules,
train (a seeded sample of whole training flows: ``max_train_packets``), compile,
and score the test split on the reference pipeline. The capture is headers-only
(snaplen 96, wire lengths kept: every field the pipeline reads is in the
headers), as large public traces usually are. Peak RSS is the process's
high-water mark after each stage; each size runs in a process of its own, so a size's peak is its own.
Goal here (2 cores, 24 GiB): 10^7 packets in <= 10 min in all and <= 8 GiB. The ~2 GB of captures it writes
are removed at the end.

How each stage grows: its exponent between consecutive sizes (time ~ packets^b: 1 is linear), and the
largest size's time and memory carried to 10^8 packets by the last measured exponent. A stage growing faster
than linearly, and a projection over this machine's memory, are named in the report: the limit is stated,
not hidden. Training reads a bounded sample (``max_train_packets``), so its cost stops growing past it.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from chimera.bench.results import BenchResult, bench_run
from chimera.data.dataset import CaptureSpec, load_dataset, write_dataset
from chimera.data.synthetic import SyntheticSpec, generate
from chimera.errors import ChimeraError
from chimera.experiments.config import resolve_variants
from chimera.experiments.load import load_experiment
from chimera.experiments.stages.compile import compile_variant
from chimera.experiments.stages.dataset import prepare
from chimera.experiments.stages.rules import load_and_learn
from chimera.experiments.stages.train import ModelCache, train_variant
from chimera.formats.rows import frame, schema_of
from chimera.metrics.classification import macro_f1
from chimera.reference.pipeline import run_reference

log = logging.getLogger(__name__)
GOAL_S, GOAL_GIB = 600.0, 8.0
SIZES = (100_000, 1_000_000, 10_000_000)
PROJECT_TO = 100_000_000
#: this machine's memory: a projection above it does not fit
MACHINE_GIB = 24.0
#: a stage whose time grows with an exponent above this between the two largest sizes is called superlinear
SUPERLINEAR = 1.15
PACKETS_PER_FLOW = 171  # the iscxvpn profile's mean at max_packets_per_flow=400 (measured)
SNAPLEN = 96  # headers-only capture, as large public traces are: ~1 GB for 10 M packets


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


@dataclass(frozen=True)
class StageRow:
    """One offline stage at one size: its time and the process's peak memory (each size in a process of its
    own); what the stage alone measures is in its own columns, empty for the others."""
    packets: int
    stage: str
    seconds: float
    peak_rss_gib: float
    baseline_rss_gib: float             # the interpreter and the libraries, before any data
    generated_packets: int | None = None
    pcap_gib: float | None = None
    flows: int | None = None
    epochs: int | None = None
    test_packets: int | None = None
    macro_f1: float | None = None


SCALE = schema_of(StageRow, "scale.csv", keys=("packets", "stage"), metrics=("seconds", "peak_rss_gib"))


class ScaleResult(BenchResult):
    stages: list[StageRow]              # scale.csv's rows
    sizes: list[int]
    total_s: float                      # the largest size's
    peak_rss_gib: float                 # the largest size's
    goal_met: bool                      # the largest size within GOAL_S and GOAL_GIB
    projected_s: float                  # the largest size carried to PROJECT_TO packets, each stage by its exponent
    projected_gib: float
    superlinear: list[str]              # stages growing faster than linearly between the two largest sizes


def run_one(packets: int, max_train_packets: int, work: Path) -> list[StageRow]:
    """Every offline stage on a ``packets``-packet dataset: one row per stage (its time, the process's peak RSS)."""
    flows = max(10, packets // PACKETS_PER_FLOW)
    rows: list[StageRow] = []
    base = _peak_gib()  # the interpreter and the libraries, before any data

    def stage(name: str, t0: float, **extra: Any) -> None:
        rows.append(StageRow(packets=packets, stage=name, seconds=time.perf_counter() - t0, peak_rss_gib=_peak_gib(),
                             baseline_rss_gib=base, **extra))
        log.info("[scale %s] %-18s %7.1f s  peak RSS %.2f GiB %s", f"{packets:.0e}", name, rows[-1].seconds,
                 rows[-1].peak_rss_gib, extra or "")

    t0 = time.perf_counter()
    gen = generate(SyntheticSpec(profile="iscxvpn", flows=flows, seed=7, duration_s=3600.0,
                                 max_packets_per_flow=400, snaplen=SNAPLEN), work / "generated")
    stage("generate", t0, generated_packets=int(load_manifest(gen)["packets"]),
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
    trained = train_variant(data, rules, v, cfg.seed, ModelCache())
    stage("tokenize+train", t0, epochs=trained.model.epochs_run)
    t0 = time.perf_counter()
    art = compile_variant(data, rules, v, trained)
    stage("compile", t0)
    t0 = time.perf_counter()
    verdicts, _ = run_reference(art, data.replay_table)
    f1 = macro_f1(data.y(data.test_rows), verdicts.label[data.test_in_replay].astype(int))
    stage("score (reference)", t0, test_packets=int(data.test_rows.size), macro_f1=float(f1))
    return rows


def _one_size(packets: int, max_train_packets: int, work: Path) -> list[StageRow]:
    """``run_one`` in a process of its own (its peak RSS is this size's alone), its rows read back."""
    out = work / f"rows-{packets}.json"
    cmd = [sys.executable, "-m", "chimera.bench.scale", "--packets", str(packets), "--max-train-packets",
           str(max_train_packets), "--work", str(work / f"size-{packets}"), "--out", str(out)]
    r = subprocess.run(cmd, check=False)
    if r.returncode != 0 or not out.exists():
        raise ChimeraError(f"the scale run at {packets:,} packets failed (exit {r.returncode})",
                         "see its log above; rerun one size with python -m chimera.bench.scale --packets N ...")
    return [replace(StageRow(**row), packets=packets) for row in json.loads(out.read_text())]


def growth(table: pd.DataFrame) -> pd.DataFrame:
    """Per stage and pair of consecutive sizes: the exponent b of time ~ packets^b and of peak memory."""
    rows = []
    sizes = sorted(table["packets"].unique())
    for st, g in table.groupby("stage", sort=False):
        g = g.set_index("packets")
        for a, b in zip(sizes, sizes[1:]):
            if a in g.index and b in g.index:
                span = math.log(b / a)
                ta, tb = float(g.at[a, "seconds"]), float(g.at[b, "seconds"])
                rows.append({"stage": st, "from_packets": a, "to_packets": b,
                             "time_exponent": math.log(max(tb, 1e-3) / max(ta, 1e-3)) / span,
                             "memory_exponent": math.log(float(g.at[b, "peak_rss_gib"]) /
                                                         float(g.at[a, "peak_rss_gib"])) / span})
    return pd.DataFrame(rows)


def projection(table: pd.DataFrame, grow: pd.DataFrame, to: int = PROJECT_TO) -> tuple[float, float, list[str]]:
    """The largest size's total time and peak memory carried to ``to`` packets, and the stages that grew faster
    than linearly between the two largest sizes. Each stage's time goes by its own last exponent; the memory
    the data holds (the peak less the process's baseline: interpreter and libraries) goes at least linearly."""
    sizes = sorted(table["packets"].unique())
    top, prev = int(sizes[-1]), int(sizes[-2])
    last = grow[grow["to_packets"] == top].set_index("stage")
    big = table[table["packets"] == top].set_index("stage")
    k = to / top
    secs = sum(float(r["seconds"]) * k ** float(last.at[st, "time_exponent"]) if st in last.index else
               float(r["seconds"]) * k for st, r in big.iterrows())

    def data_gib(n: int) -> tuple[float, float]:
        g = table[table["packets"] == n]
        return float(g["peak_rss_gib"].max() - g["baseline_rss_gib"].max()), float(g["baseline_rss_gib"].max())

    (hi, base), (lo, _) = data_gib(top), data_gib(prev)
    mem_b = max(1.0, math.log(max(hi, 1e-3) / max(lo, 1e-3)) / math.log(top / prev))
    return secs, base + hi * k ** mem_b, sorted(last.index[last["time_exponent"] > SUPERLINEAR].tolist())


def figure(table: pd.DataFrame, path: Path) -> None:
    """Each stage's time and the peak memory against size, log-log (seaborn)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    sns.lineplot(data=table, x="packets", y="seconds", hue="stage", marker="o", ax=a)
    peak = table.groupby("packets", as_index=False)["peak_rss_gib"].max()
    sns.lineplot(data=peak, x="packets", y="peak_rss_gib", marker="o", ax=b)
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_yscale("log")
    a.set_title("time per stage")
    b.set_title("peak memory (process high-water mark)")
    b.set_ylabel("GiB")
    a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(results_root: str | Path = "results", sizes: tuple[int, ...] = SIZES, max_train_packets: int = 1_000_000,
         work_dir: Path | None = None) -> pd.DataFrame:
    sizes = tuple(sorted(sizes))
    if not sizes or min(sizes) < 10_000:
        raise ChimeraError(f"scale sizes {sizes}: each must be at least 10,000 packets", "e.g. --sizes 100000,1000000")
    # dict[str, Any]: JSON out: the bench's parameters in its manifest
    params: dict[str, Any] = {"sizes": list(sizes), "profile": "iscxvpn", "max_train_packets": max_train_packets,
                              "goal_s": GOAL_S, "goal_peak_gib": GOAL_GIB, "project_to": PROJECT_TO}
    work = Path(tempfile.mkdtemp(prefix="chimera-scale-", dir=work_dir))
    try:
        with bench_run("scale", params, results_root) as run:
            rows = [row for size in tqdm(sizes, desc="scale sizes", unit="size")
                    for row in _one_size(size, max_train_packets, work)]
            table = frame(rows, StageRow)
            SCALE.write(table, run.path)
            grow = growth(table)
            grow.to_csv(run.path / "growth.csv", index=False)
            figs = run.path / "figures"
            figs.mkdir(exist_ok=True)
            figure(table, figs / "scale.png")
            top = table[table["packets"] == sizes[-1]]
            total, peak = float(top["seconds"].sum()), float(top["peak_rss_gib"].max())
            proj_s, proj_gib, superlinear = projection(table, grow) if len(sizes) > 1 else (float("nan"),
                                                                                             float("nan"), [])
            met = bool(total <= GOAL_S and peak <= GOAL_GIB)
            run.manifest.put("result", ScaleResult(stages=rows, sizes=list(sizes), total_s=total, peak_rss_gib=peak,
                                                   goal_met=met, projected_s=proj_s, projected_gib=proj_gib,
                                                   superlinear=superlinear))
            totals = table.groupby("packets").agg(seconds=("seconds", "sum"), peak_rss_gib=("peak_rss_gib", "max"))
            (run.path / "report.md").write_text("\n".join([
                f"# Scale: {', '.join(f'{s:,}' for s in sizes)} packets through every offline stage", "",
                "Each size in a process of its own (synthetic iscxvpn profile, headers-only capture; training on "
                f"a seeded sample of at most {max_train_packets:,} packets).", "",
                totals.reset_index().assign(packets=lambda d: d["packets"].map("{:,}".format))
                .to_markdown(index=False, floatfmt=".2f"), "",
                table.pivot(index="stage", columns="packets", values="seconds").to_markdown(floatfmt=".1f"), "",
                "Growth exponents (time ~ packets^b; 1 is linear):", "",
                grow.to_markdown(index=False, floatfmt=".2f"), "",
                f"{sizes[-1]:,} packets: {total:.0f} s (goal <= {GOAL_S:.0f} s), peak RSS {peak:.2f} GiB "
                f"(goal <= {GOAL_GIB} GiB): {'met' if met else 'NOT met'}.",
                f"Carried to {PROJECT_TO:,} packets (each stage's time by its last exponent; the data's memory at "
                f"least linearly): about {proj_s / 60:.0f} min and {proj_gib:.1f} GiB "
                f"({'fits' if proj_gib <= MACHINE_GIB else 'does NOT fit'} this machine's {MACHINE_GIB:.0f} GiB). "
                f"Superlinear stages: {', '.join(superlinear) or 'none'}.", "", "![scale](figures/scale.png)", ""]))
            log.info("[scale] %s packets: total %.0f s (goal %.0f), peak RSS %.2f GiB (goal %.0f): %s; 10^8 carried: "
                     "%.0f min, %.1f GiB", f"{sizes[-1]:,}", total, GOAL_S, peak, GOAL_GIB, "met" if met else "NOT met",
                     proj_s / 60, proj_gib)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return table


def load_manifest(path: Path) -> dict[str, Any]:  # JSON in: a manifest read back
    return json.loads((path / "manifest.json").read_text())


def _cli() -> None:
    """One size in this process (``_one_size`` runs it so): its rows as JSON."""
    ap = argparse.ArgumentParser(description="one size of the scale bench")
    ap.add_argument("--packets", type=int, required=True)
    ap.add_argument("--max-train-packets", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    a.work.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps([asdict(r) for r in run_one(a.packets, a.max_train_packets, a.work)], default=float))


if __name__ == "__main__":
    _cli()
