"""Run an experiment: the shared frame (run directory, manifest, target) around its kind.

The kind (chimera.experiments.kinds) computes and writes its tables; the
report and figures are then rendered from the run directory alone
(chimera.report.render), exactly as ``invoke report`` re-renders them later.
Everything lands in a RunDir that becomes visible only when complete.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import yaml

from chimera.experiments.config import ExperimentConfig, resolve_variants
from chimera.experiments.kinds import KINDS
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.rules import rules_path
from chimera.experiments.stages.target import preflight
from chimera.formats.rundir import RunDir, environment, git_state
from chimera.report.render import render
from chimera.rules.spec import load_rules
from chimera.targets.select import select_target

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


def run_experiment(cfg: ExperimentConfig, *, target: str | None = None, results_root: str | Path = "results",
                   data_root: str | Path = "data", experiment_file: str = "", dataset_override: str = "") -> Path:
    """Run ``cfg`` on ``target``; returns the finished run directory.

    ``dataset_override``: the --dataset the user gave in place of the experiment's own data (the report says so).
    """
    variants = resolve_variants(cfg, experiment_file or cfg.name)
    rule_file = load_rules(rules_path(cfg.rules))  # a bad rule file fails here, before any run directory exists
    kind = KINDS[cfg.kind]
    tgt = select_target(target or cfg.target, cfg.replay)
    try:
        preflight(tgt, variants, rule_file, where=experiment_file or cfg.name)  # classes are checked after the data
    except BaseException:
        tgt.close()
        raise
    with RunDir(results_root, cfg.name, tgt.name) as run:
        ctx = RunContext(cfg, variants, tgt, run, Path(data_root), rule_file)
        run.manifest.update({"kind": cfg.kind, "config": json.loads(cfg.model_dump_json()), "seed": cfg.seed,
                             "git": git_state(ROOT), "environment": environment(), "target_detail": tgt.describe(),
                             "dataset_override": dataset_override or None})
        (run.path / "config.yaml").write_text(yaml.safe_dump(json.loads(cfg.model_dump_json()), sort_keys=False))
        try:
            kind(ctx)
        finally:
            tgt.close()
        run.manifest["timings_s"] = ctx.timings
        run.write_json("manifest.json", run.manifest)
        render(run.path, allow_unfinished=True)
    return run.final
