"""Run an experiment: dataset -> rules -> (per variant) train -> compile -> target -> metrics -> outputs.

Each stage is one module of chimera.experiments.stages; this module strings
them together over a RunContext, one log line per phase. Everything lands in a
RunDir that becomes visible only when complete. Software-only variants (exact
softmax, dense attention) have no tables: they are evaluated by the float
software classifier and marked † everywhere.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import yaml
from tqdm import tqdm

from chimera.experiments.config import ExperimentConfig, resolve_variants
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.compile import compile_variant, save_artifact
from chimera.experiments.stages.dataset import prepare, resolve_dataset
from chimera.experiments.stages.metrics import VariantResult, score_variant
from chimera.experiments.stages.outputs import write_outputs
from chimera.experiments.stages.rules import learn_rules, rules_path
from chimera.experiments.stages.target import run_variant
from chimera.experiments.stages.train import train_variant
from chimera.formats.rundir import RunDir, environment, git_state
from chimera.rules.spec import load_rules
from chimera.targets.select import select_target

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


def run_experiment(cfg: ExperimentConfig, *, target: str | None = None, results_root: str | Path = "results",
                   data_root: str | Path = "data", experiment_file: str = "", dataset_override: str = "") -> Path:
    """Run every variant of ``cfg`` on ``target``; returns the finished run directory.

    ``dataset_override``: the --dataset the user gave in place of the experiment's own data (the report says so).
    """
    variants = resolve_variants(cfg, experiment_file or cfg.name)
    rule_file = load_rules(rules_path(cfg.rules))  # a bad rule file fails here, before any run directory exists
    tgt = select_target(target or cfg.target, cfg.replay)
    with RunDir(results_root, cfg.name, tgt.name) as run:
        ctx = RunContext(cfg, variants, tgt, run, Path(data_root), rule_file)
        run.manifest.update({"config": json.loads(cfg.model_dump_json()), "seed": cfg.seed, "git": git_state(ROOT),
                             "environment": environment(), "target_detail": tgt.describe(),
                             "dataset_override": dataset_override or None})
        (run.path / "config.yaml").write_text(yaml.safe_dump(json.loads(cfg.model_dump_json()), sort_keys=False))
        try:
            results = _run(ctx)
        finally:
            tgt.close()
        _record_fallbacks(ctx, results)
        write_outputs(ctx, results)
    return run.final


def _run(ctx: RunContext) -> list[VariantResult]:
    cfg = ctx.cfg
    log.info("[1/7 dataset] %s", cfg.dataset.model_dump(exclude_none=True))
    with ctx.timed("dataset"):
        ctx.data = data = prepare(resolve_dataset(cfg.dataset, ctx.data_root), cfg.seed)
    ds = data.ds
    ctx.run.manifest["dataset"] = {k: ds.manifest.get(k) for k in ("name", "source", "seed", "classes", "packets",
                                                                   "status", "packets_sha256", "generator",
                                                                   "skipped_files")}
    ctx.run.manifest["dataset"].update({"path": str(ds.root), "flows": ds.flows.n_flows,
                                        "split_packets": data.split_sizes(), "accounting": data.accounting(),
                                        "normalization": ds.manifest.get("normalization"),
                                        "unreadable_captures": ds.manifest.get("unreadable_captures"),
                                        "cross_capture_flows": ds.manifest.get("cross_capture_flows")})
    log.info("[1/7 dataset] %s: %d packets, %d flows, %d classes; test split %d packets (%d replayed)",
             ds.manifest["name"], len(ds.table), ds.flows.n_flows, len(ds.classes), data.test_rows.size,
             data.replay_rows.size)
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    log.info("[2/7 rules] %s: %d hard, %d soft rules; soft weights learned (hinge-loss MRF)", rules.rules.path,
             len(rules.rules.hard), len(rules.rules.soft))
    results = []
    for v in tqdm(ctx.variants, desc=f"{cfg.name} variants", unit="variant"):
        log.info("[3/7 train] %s", v.name)
        with ctx.timed(f"train:{v.name}"):
            trained = train_variant(data, rules, v, cfg.seed, ctx.cache)
        art, sha = None, None
        if not v.software_only:
            with ctx.timed(f"compile:{v.name}"):
                art = compile_variant(data, rules, v, trained)
                sha = save_artifact(art, ctx.run.path / "artifacts", v.name)
            log.info("[4/7 compile] %s: %d bits/flow, %d table entries, artifact %s", v.name,
                     art.resources["per_flow_bits"]["total"], art.resources["table_entries"], sha[:12])
        with ctx.timed(f"target:{v.name}"):
            ex = run_variant(ctx.target, data, rules, v, trained, art, ctx.run.path)
        log.info("[5/7 target] %s: %s", v.name, ex.executed_on)
        r = score_variant(data, v, trained, art, sha, ex)
        log.info("[6/7 metrics] %s%s: macro-F1 %.4f (P %.4f, R %.4f)", v.name, " †" if v.software_only else "",
                 r.row["macro_f1"], r.row["macro_precision"], r.row["macro_recall"])
        results.append(r)
    log.info("[7/7 outputs] %s", ctx.run.path)
    return results


def _record_fallbacks(ctx: RunContext, results: list[VariantResult]) -> None:
    """Variants that ran elsewhere than the chosen target are named in the manifest; when every variant did,
    the run itself is marked (run id, manifest target) with the reason."""
    where = {r.row["variant"]: r.row["executed_on"] for r in results}
    fallbacks = {r.row["variant"]: r.row["target_fallback"] for r in results if r.row.get("target_fallback")}
    ctx.run.manifest.update({"variant_targets": where, "variant_fallbacks": fallbacks})
    if fallbacks and len(fallbacks) == len(results) and ctx.target.name != "reference":
        ctx.run.set_target("reference", "every variant fell back: " + "; ".join(sorted(set(fallbacks.values()))))
