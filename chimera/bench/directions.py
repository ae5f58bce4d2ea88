"""The two directions docs/fidelity.md named, measured: a recency term in attention and a class-aware Map.

For each kind of data of the fidelity bench and each seed, Chimera (the quickstart's first variant) is trained
three times, alike in everything but the direction (``ARMS``): the same split, rules, configuration (the
optimizer configuration Chimera used before the budget, the budget's patience and cap) and fusion, β picked
on validation as always. Each arm's fused float prediction is scored on the validation split and on the test
split. The arms are compared in float: the recency term has no integer form yet, and the float model is what
the integer pipeline follows (docs/fidelity.md: integer and float F1 agree within 0.01).

**The decision is made on validation, on the development seeds only**, by a rule fixed before any run
(``decide``): a direction is kept when its validation macro-F1, averaged over the development seeds, is above
the base arm's on a majority of the kinds of data and not more than ``TOLERANCE`` below it on any. The held-out
seeds' test numbers are reported whatever the decision: a negative result is a result.

A kept direction still has to reach every implementation before it is used: the class-aware Map changes only
the key -> centroid table, which every implementation reads as it is; the recency term changes the attention
arithmetic, which none of the dataplanes has.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel
from tqdm import tqdm

from chimera.bench.fidelity import DEV_SEEDS, HELD_OUT_SEEDS, UNSCORED, Data, Unscored, chosen_data, seed_set
from chimera.bench.results import BenchResult, bench_run
from chimera.errors import DatasetError
from chimera.experiments.config import resolve_variants
from chimera.experiments.load import load_experiment
from chimera.experiments.stages.dataset import prepare, resolve_dataset
from chimera.experiments.stages.rules import load_and_learn
from chimera.experiments.stages.train import Directions, ModelCache, budget_model, train_variant
from chimera.metrics.classification import macro_f1
from chimera.formats.rows import frame, schema_of
from chimera.metrics.intervals import ci95

log = logging.getLogger(__name__)
ARMS: dict[str, Directions] = {"base": Directions(), "recency": Directions(recency=True),
                               "class-aware Map": Directions(map_class_weight=1.0)}
TOLERANCE = 0.005
SEEDS = DEV_SEEDS + HELD_OUT_SEEDS


@dataclass(frozen=True)
class ArmRow:
    """One arm on one kind of data and seed: validation and test macro-F1 of the fused float prediction."""
    data: str
    real: bool
    seed: int
    seed_set: str
    arm: str
    val_f1: float
    test_f1: float
    epochs_run: int
    stopped_by: str
    beta: float
    fusion: str
    rho: float                  # the recency arm's learned decay per packet of age (NaN for the other arms)


DIRECTIONS = schema_of(ArmRow, "directions.csv", keys=("data", "seed", "arm"), metrics=("val_f1", "test_f1"))


class Decision(BaseModel):
    """A direction's verdict under the rule fixed before any run (``decide``)."""
    kept: bool
    kinds_up: int
    kinds: int
    worst_gain: float
    why: str


def measure(d: Data, seed: int, data_root: Path) -> list[ArmRow]:
    """One row per arm: validation and test macro-F1 of the fused float prediction."""
    cfg = load_experiment("quickstart", {"dataset": d.dataset, "seed": seed})
    v = resolve_variants(cfg)[0]
    v = v.model_copy(update={"model": budget_model(v.model, {})})  # its own lr and batch, the budget's rules
    data = prepare(resolve_dataset(cfg.the_dataset(), data_root), seed)
    rules = load_and_learn(cfg.rules, data, seed, cfg.rule_precision_floor)
    y = data.y(data.test_rows)
    rows = []
    for arm, directions in ARMS.items():
        t = train_variant(data, rules, v, seed, ModelCache(), directions)
        rows.append(ArmRow(data=d.name, real=d.real, seed=seed, seed_set=seed_set(seed), arm=arm,
                           val_f1=float(t.val_f1), test_f1=float(macro_f1(y, t.float_pred)),
                           epochs_run=int(t.model.epochs_run), stopped_by=str(t.model.stopped_by),
                           beta=float(t.beta), fusion=str(t.fusion.mode),
                           rho=float(t.model.decay[1]) if t.model.decay is not None and t.model.decay.size > 1
                           else float("nan")))
        log.info("%s seed %d %s: validation %.4f, test %.4f", d.name, seed, arm, t.val_f1, rows[-1].test_f1)
    return rows


def gains(table: pd.DataFrame, split: str, sset: str) -> pd.DataFrame:
    """Per kind of data and direction: the mean over the set's seeds of (arm − base) on ``split``, paired per
    seed, with its 95% t-interval."""
    t = table[table.seed_set == sset]
    wide = t.pivot_table(index=["data", "seed"], columns="arm", values=f"{split}_f1", sort=False)
    out = []
    for arm in (a for a in ARMS if a != "base"):
        if arm not in wide:
            continue
        diff = (wide[arm] - wide["base"]).dropna()
        for data, g in diff.groupby(level="data", sort=False):
            out.append({"data": data, "arm": arm, "split": split, "seed_set": sset, "mean_gain": float(g.mean()),
                        "ci95": ci95(g.tolist()), "seeds": int(g.size)})
    return pd.DataFrame(out)


def decide(table: pd.DataFrame) -> dict[str, Decision]:
    """The rule fixed before any run: on validation, development seeds only. Kept when the mean gain is > 0 on a
    majority of the kinds of data and no kind loses more than ``TOLERANCE``."""
    g = gains(table, "val", "development")
    out = {}
    for arm in (a for a in ARMS if a != "base"):
        x = g[g.arm == arm]
        up, worst = int((x.mean_gain > 0).sum()), float(x.mean_gain.min()) if len(x) else float("nan")
        keep = bool(len(x)) and up > len(x) / 2 and worst >= -TOLERANCE
        out[arm] = Decision(kept=keep, kinds_up=up, kinds=int(len(x)), worst_gain=worst,
                            why=(f"validation macro-F1 up on {up} of {len(x)} kinds of data, worst {worst:+.4f} "
                                 f"(kept needs a majority up and none below {-TOLERANCE:+.3f})"))
    return out


class DirectionsResult(BenchResult):
    decisions: dict[str, Decision]
    unscored: list[Unscored]


def report(run_dir: Path, cite: str) -> str:
    """The run's report from its CSVs: the decision, then the gains on validation and test, per seed set."""
    table = DIRECTIONS.read(run_dir)
    dec = decide(table)
    out = [f"Measured by `invoke bench --what directions` in `{cite}`. Float macro-F1 of Chimera's fused "
           "prediction; each direction against the base arm, paired per seed (mean ± 95% t-interval). The decision "
           "reads validation on the development seeds only; the held-out seeds are reported as measured. The real "
           "datasets are small (their README).", "", "### Decision (validation, development seeds)", "",
           "| direction | kept | why |", "| --- | --- | --- |"]
    for arm, d in dec.items():
        out.append(f"| {arm} | {'**kept**' if d.kept else 'dropped'} | {d.why} |")
    for split in ("val", "test"):
        for sset in ("development", "held-out"):
            g = gains(table, split, sset)
            if g.empty:
                continue
            out += ["", f"### {'Validation' if split == 'val' else 'Test'}, {sset} seeds: gain over the base arm",
                    "", "| data | direction | seeds | mean gain |", "| --- | --- | --- | --- |"]
            for _, r in g.iterrows():
                ci = "" if np.isnan(r["ci95"]) else f" ± {r['ci95']:.4f}"
                out.append(f"| {r['data']} | {r['arm']} | {int(r['seeds'])} | {r['mean_gain']:+.4f}{ci} |")
    base = table[table.arm == "base"].groupby(["data", "seed_set"], sort=False)["test_f1"].mean()
    out += ["", "### The base arm's test macro-F1 (mean over seeds)", "", "| data | seed set | base |",
            "| --- | --- | --- |"]
    out += [f"| {d} | {s} | {x:.4f} |" for (d, s), x in base.items()]
    rho = table[table.arm == "recency"].groupby("data", sort=False)["rho"].mean()
    if len(rho):
        out += ["", "The recency term's learned decay per packet of age, rho (mean over seeds): " +
                "; ".join(f"{d} {x:.3f}" for d, x in rho.items()) + " (1 = no decay)."]
    return "\n".join(out) + "\n"


def main(results_root: str | Path = "results", data_root: Path = Path("data"), seeds: Sequence[int] = SEEDS,
         only: Sequence[str] = ()) -> pd.DataFrame:
    chosen = chosen_data(only, "directions")
    rows: list[ArmRow] = []
    unscored: list[Unscored] = []
    with bench_run("directions", {"data": {d.name: d.dataset for d in chosen}, "seeds": list(seeds),
                                  "arms": {k: repr(v) for k, v in ARMS.items()}, "tolerance": TOLERANCE,
                                  "experiment": "quickstart (first variant)"}, results_root) as run:
        todo = [(d, s) for d in chosen for s in seeds]
        for d, s in tqdm(todo, desc="directions", unit="cell"):
            try:
                rows += measure(d, s, data_root)
            except DatasetError as e:  # reported, never replaced by another seed
                log.warning("%s seed %d: not measurable: %s", d.name, s, e.problem)
                unscored.append(Unscored(d.name, s, e.problem))
                continue
            DIRECTIONS.write(frame(rows, ArmRow), run.path)   # partial progress stays readable
        table = frame(rows, ArmRow)
        if table.empty:
            raise DatasetError("no kind of data could be measured (see the warnings above)",
                               "check CHIMERA_SHARED_DATASETS and the datasets' class counts")
        DIRECTIONS.write(table, run.path)
        UNSCORED.write(frame(unscored, Unscored), run.path)
        run.manifest.put("result", DirectionsResult(decisions=decide(table), unscored=unscored))
        (run.path / "report.md").write_text("# The two named directions, measured\n\n" +
                                            report(run.path, str(run.final)))
    log.info("directions (results: %s):\n%s", run.final, (run.final / "report.md").read_text()
             if run.final.exists() else "")
    return table
