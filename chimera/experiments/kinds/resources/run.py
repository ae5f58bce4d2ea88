"""The resources kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera import paths
from chimera.baselines.leo import IntegerTree, fit_leo
from chimera.baselines.budget import Tuning, search_of
from chimera.baselines.zoo import BASELINES, BaselineResult, BaselineSettings, SplitFeatures, run_baseline, spec_of
from chimera.errors import ChimeraError
from chimera.experiments.kinds.resources import tables as T
from chimera.experiments.kinds.resources.config import ResourcesExperiment, ResourcesSection
from chimera.experiments.kinds.yardstick_common import NamedData, baseline_settings, named_data
from chimera.experiments.stages.compile import compile_variant, save_artifact
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.train import train_variant
from chimera.formats.artifact import Artifact
from chimera.formats.rows import Cells
from chimera.formats.tree import RangeTree
from chimera.metrics.classification import macro_f1
from chimera.targets.allocation import ebpf_allocation, p4_allocation, p4_tables
from chimera.targets.compile_only import CompileOnlyTarget, ResourceReport

log = logging.getLogger(__name__)


TCAM_WORDS = ("range", "ternary", "global", "rules")


def chimera_tables(art: Artifact) -> pd.DataFrame:
    t = pd.DataFrame(art.resources["tables"])
    t["match"] = ["TCAM-like" if any(w in n for w in TCAM_WORDS) else "SRAM" for n in t["table"]]
    return t


def _report_row(target: CompileOnlyTarget, variant: str, group: str, rep: ResourceReport) -> Cells:
    """One compiles.csv row, logged: the compiler's verdict on one program."""
    log.info("[resources] %s on %s: %s", variant, target.name,
             f"fits in {rep.columns.get('stages_used')} stages" if rep.fits else "refused: " + rep.reason[:200])
    return {"variant": variant, "group": group, "target": target.name, "fits": rep.fits, "reason": rep.reason,
            "compiler": rep.compiler, **rep.columns}


def compile_reports(ctx: RunContext[ResourcesExperiment], nd: NamedData, first: Artifact) -> pd.DataFrame:
    """Each switch-resident variant's program through the target's compiler (Table 3's resource columns): a row per
    variant, whether it fits and what it allocates, or the compiler's words for why not. A † variant has no switch
    program and no row. ``first``: the first variant's artifact, already compiled by the run."""
    target = ctx.target
    assert isinstance(target, CompileOnlyTarget)
    rows: list[Cells] = []
    for v in tqdm(ctx.variants, desc=f"{target.name} compiles", unit="variant"):
        if v.software_only:
            log.info("[resources] %s: a † configuration, no switch program to compile", v.name)
            continue
        if v is ctx.variants[0]:
            art = first
        else:
            art = compile_variant(nd.data, nd.rules, v, train_variant(nd.data, nd.rules, v, ctx.cfg.seed, nd.cache))
            save_artifact(art, ctx.run.path / "artifacts", v.name)
        rows.append(_report_row(target, v.name, v.group, target.report_resources(art, paths.BUILD)))
    return pd.DataFrame(rows)


def range_tree(t: IntegerTree) -> RangeTree:
    """Leo's fitted tree in the format a dataplane program takes."""
    names = t.spec.names()
    return RangeTree(tuple(names[int(f)] for f in t.features), tuple(tuple(int(x) for x in th) for th in t.thresholds),
                     tuple(tuple(int(x) for x in r) for r in t.leaf_lo), tuple(tuple(int(x) for x in r) for r in t.leaf_hi),
                     tuple(int(y) for y in t.leaf_class), t.n_classes)


def leo_depths(st: BaselineSettings, chosen: int) -> list[int]:
    """The trees tried where the chosen one does not fit, deepest first: the depths of Leo's search (the one the
    run tuned it with) below ``chosen``, then those of its widened search below the shallowest of them (a switch
    may hold no tree of the budget's grid; the widened search goes shallower)."""
    def depths(tuning: Tuning) -> set[int]:
        search, _ = search_of("Leo", tuning)
        return {d for d in (c["depth"] for c in search.configs("full")) if isinstance(d, int) and d < chosen}
    own = depths(st.tuning)
    floor = min(own, default=chosen)
    return sorted(own | {d for d in depths("wide") if d < floor}, reverse=True)


def leo_order(chosen: int, shallower: list[int]) -> list[int]:
    """The order Leo's trees are compiled in: the chosen one; where it is refused, the shallowest of ``shallower``
    (deepest first), and only where that one fits, the rest from the deepest down. Where the shallowest is refused
    no deeper one is tried, on an assumption: a deeper tree of the same rows grows the shallower one's splits further
    (up to sklearn's breaking of ties), so it needs at least as much of the pipe. ``leo_report`` stops at the first
    fit after the shallowest."""
    return [chosen, *shallower[-1:], *shallower[:-1]]


def leo_report(ctx: RunContext[ResourcesExperiment], r: BaselineResult, st: BaselineSettings,
               feats: dict[Any, SplitFeatures], art: Artifact) -> list[Cells]:
    """Leo's tables through the compile-only target's compiler: the tree the run chose, fitted again on the same
    rows with the chosen depth and seed (sklearn's fit is deterministic), checked to be it by its test verdicts.

    Where the compiler refuses that tree, shallower trees follow (``leo_depths``, in ``leo_order``) until the
    deepest that fits is known: Leo sizes its tree to the switch it runs on, so the deepest tree of its searches
    that the pipeline holds is Leo's program for that switch. Each tree compiled is a row (``depth``, its
    validation macro-F1 ``val_f1``, what sized it: ``sized_by``), the rows deepest first, and is kept in the run's
    artifacts (a reviewer can compile it again without refitting)."""
    target = ctx.target
    assert isinstance(target, CompileOnlyTarget)
    spec = spec_of("Leo", st)
    sf = feats[spec]
    chosen = int(r.extra["depth"])   # type: ignore[arg-type]
    shallower = leo_depths(st, chosen)
    rows: dict[int, Cells] = {}
    for depth in leo_order(chosen, shallower):
        _, tree = fit_leo(sf.x_tr, sf.y_tr, spec, depth, ctx.cfg.seed)
        if depth == chosen and not np.array_equal(tree.predict(sf.x_te), r.pred):
            raise ChimeraError("Leo's tree fitted again differs from the one the run chose", "report this as a bug: "
                               "the fit was meant to be deterministic (chimera.baselines.leo.fit_leo)")
        rt = range_tree(tree)
        name = "Leo" if depth == chosen else f"Leo (depth {depth})"
        (ctx.run.path / "artifacts").mkdir(parents=True, exist_ok=True)
        kept = "leo-tree.json" if depth == chosen else f"leo-tree-depth{depth}.json"
        (ctx.run.path / "artifacts" / kept).write_text(json.dumps(dataclasses.asdict(rt)))
        row = _report_row(target, name, "Baseline", target.report_tree(rt, art, paths.BUILD))
        rows[depth] = {**row, "depth": depth, "val_f1": macro_f1(sf.y_va, tree.predict(sf.x_va)),
                       "sized_by": LEO_CHOSEN if depth == chosen else LEO_FITTED}
        shallowest = bool(shallower) and depth == shallower[-1]
        if (depth == chosen and row["fits"]) or (shallowest and not row["fits"]) or \
                (row["fits"] and depth != chosen and not shallowest):
            break
    return [rows[d] for d in sorted(rows, reverse=True)]


#: what sized each of Leo's rows: the run's tuning, or the switch (Leo's depths below the choice, for the deepest
#: that fits)
LEO_CHOSEN = "validation (the run's choice)"
LEO_FITTED = "the compiler (Leo's depths below the choice, for the deepest that fits)"


def run(ctx: RunContext[ResourcesExperiment]) -> None:
    nd = next(iter(named_data(ctx)))
    v = ctx.variants[0]
    trained = train_variant(nd.data, nd.rules, v, ctx.cfg.seed, nd.cache)
    art = compile_variant(nd.data, nd.rules, v, trained)
    save_artifact(art, ctx.run.path / "artifacts", v.name)
    budget = ctx.cfg.sweep.per_flow_budget_bits
    tables = chimera_tables(art)
    T.CHIMERA_TABLES.write(tables, ctx.run.path)
    sram = int(tables.loc[tables["match"] == "SRAM", "bits"].sum())
    tcam = int(tables.loc[tables["match"] == "TCAM-like", "bits"].sum())
    common = {"table_entries": int(tables["entries"].sum()), "exact_bits": sram, "ternary_range_bits": tcam,
              "action_data_bits": int(tables["entry_bits"].max()), "model_kbits": art.resources["table_bits"] / 1000,
              "formula_bits": art.resources["per_flow_bits"]["total"]}
    rows: list[Cells] = []
    try:  # the targets' build cache (keyed by content): the same object a run would load
        e = ebpf_allocation(art, paths.BUILD)
        T.EBPF_MAPS.write(pd.DataFrame(e["maps"]), ctx.run.path)
        rows.append({"method": "Chimera", "where": "eBPF dataplane", "per_flow_bits": e["per_flow_bits"],
                     "per_flow_source": e["source"] + ": " + ", ".join(e["per_flow_maps"]), **common})
    except ChimeraError as err:
        log.warning("eBPF allocation not measured here: %s", err.problem)
    p = p4_allocation(art, paths.BUILD)
    T.P4_REGISTERS.write(pd.DataFrame(p["registers"]), ctx.run.path)
    T.P4_TABLES.write(pd.DataFrame(p4_tables()), ctx.run.path)
    rows.append({"method": "Chimera", "where": "chimera.p4 (v1model)", "per_flow_bits": p["per_flow_bits"],
                 "per_flow_source": p["source"] + ": " + ", ".join(p["per_flow_registers"]), **common})
    st = baseline_settings(ctx)
    feats: dict[Any, SplitFeatures] = {}
    leo_rows: list[Cells] = []
    d = nd.data
    att = nd.attack_classes()
    for name in ctx.cfg.baselines.methods:
        if BASELINES[name].task != "classification" and not att:
            continue
        r = run_baseline(name, d.ds, d.tokens, (d.train_rows, d.val_rows, d.test_rows), len(d.classes), att, st,
                         ctx.cfg.seed, feats)
        res = r.resources
        rows.append({"method": name, "where": r.where, "per_flow_bits": r.per_flow_bits,
                     "per_flow_source": "tree-tested fields of earlier packets" if name == "Leo" else
                     "fields of the window's earlier packets (software; a switch would store these)",
                     "table_entries": res.get("table_entries"), "exact_bits": res.get("exact_bits"),
                     "ternary_range_bits": res.get("ternary_range_bits"),
                     "action_data_bits": res.get("action_data_bits"), "model_kbits": r.model_bits / 1000})
        if name == "Leo" and isinstance(ctx.target, CompileOnlyTarget):
            leo_rows = leo_report(ctx, r, st, feats, art)
    out = pd.DataFrame(rows)
    out["budget_bits"] = budget
    out["budget_ratio"] = out["per_flow_bits"] / budget
    T.RESOURCES.write(out, ctx.run.path)
    if isinstance(ctx.target, CompileOnlyTarget):
        compiles = compile_reports(ctx, nd, art)
        if leo_rows:
            compiles = pd.concat([compiles, pd.DataFrame(leo_rows)], ignore_index=True)
        T.COMPILES.write(compiles, ctx.run.path)
    ctx.record(ResourcesSection(budget_bits=budget, p4_source=p["source"]))
