"""Run an experiment: the shared frame (run directory, manifest, target, clock) around its kind.

The kind (chimera.experiments.kinds) computes and writes its tables; the
report and figures are then rendered from the run directory alone
(chimera.experiments.render), exactly as ``invoke report`` re-renders them
later. Everything lands in a RunDir that becomes visible only when complete.
The clock is resolved here once: the YAML's ``replay.clock``, else the kind's
default; the manifest and the report's first line say which, and which target
ran and why.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import yaml

from chimera import paths
from chimera.errors import ConfigError
from chimera.experiments.config import ExperimentConfig, resolve_variants
from chimera.experiments.kinds import kind_of
from chimera.experiments.render import render
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.preflight import preflight
from chimera.experiments.stages.rules import rules_path
from chimera.formats.checkpoints import Checkpoints, resumable, take_over
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.sharded import sharded
from chimera.targets.registry import environment, with_capability
from chimera.rules.spec import load_rules
from chimera.targets.base import Capability
from chimera.targets.registry import select_target
from chimera.testbed.replay import Clock

log = logging.getLogger(__name__)
ROOT = paths.ROOT


def resolve_clock(cfg: ExperimentConfig, clock: str | None = None) -> Clock:
    """The clock of a run: asked for, else the YAML's, else the kind's default; refused when the kind cannot."""
    kind = kind_of(cfg.kind)
    chosen = clock or cfg.replay.clock or kind.default_clock
    for c in kind.clocks:
        if c == chosen:
            return c
    raise ConfigError(f"{cfg.name}: kind {kind.name} runs on the {' or '.join(kind.clocks)} clock, not {chosen}",
                      f"use --clock {kind.clocks[0]} (or replay.clock in the YAML)")


def run_experiment(cfg: ExperimentConfig, *, target: str | None = None, results_root: str | Path = "results",
                   data_root: str | Path = "data", experiment_file: str = "", dataset_override: str = "",
                   clock: str | None = None, pps: int | None = None, max_replay_s: float | None = None,
                   shards: int = 1, ray: str | None = None, resume: Path | None = None) -> Path:
    """Run ``cfg`` on ``target``; returns the finished run directory.

    ``dataset_override``: the --dataset the user gave in place of the experiment's own data (the report says so).
    ``clock``, ``pps``, ``max_replay_s``: the command line's replay settings, over the YAML's.
    ``shards``, ``ray``: replay over that many testbeds at once, locally or on that Ray cluster
    (chimera.targets.sharded).
    ``resume``: a stopped run of the same experiment, target and configuration whose finished units (its
    checkpoints: chimera.formats.checkpoints) this run takes instead of redoing; the caller checks that the code is
    the same (``invoke run-experiment --resume``, ``invoke republish``).
    """
    kind = kind_of(cfg.kind)
    chosen = resolve_clock(cfg, clock)
    cfg = kind.resolve(cfg, chosen)
    over = {"clock": chosen, **({"pps": pps} if pps else {}), **({"max_replay_s": max_replay_s} if max_replay_s else {})}
    replay = cfg.replay.model_copy(update=over)
    variants = resolve_variants(cfg, experiment_file or cfg.name)
    rule_file = load_rules(rules_path(cfg.rules))  # a bad rule file fails here, before any run directory exists
    sel = select_target(target or cfg.target)
    with sharded(sel.target, shards, ray) as tgt:
        if kind.needs_testbed and not tgt.can(Capability.TESTBED):
            raise ConfigError(f"kind {kind.name} measures a testbed: the {tgt.name} target has none",
                              "run it as root with --target " + " or ".join(
                                  c.name for c in with_capability(Capability.TESTBED)) + " (or auto where one can run)")
        preflight(tgt, variants, rule_file, where=experiment_file or cfg.name)  # classes: checked after the data
        if resume is not None:  # refused before a run directory exists
            resumable(resume, cfg.name, tgt.name, json.loads(cfg.model_dump_json()), socket.gethostname())
        with RunDir(results_root, cfg.name, tgt.name) as run:
            ctx = RunContext(cfg, variants, tgt, run, Path(data_root), rule_file, replay,
                             section=(kind.section_key, kind.section_model) if kind.section_model else None)
            run.manifest.record(kind=cfg.kind, config=json.loads(cfg.model_dump_json()), seed=cfg.seed,
                                git=git_state(ROOT), environment=environment(), target_detail=tgt.describe(),
                                target_requested=sel.requested, target_reason=sel.reason,
                                clock=tgt.clock(chosen),
                                dataset_override=dataset_override or None)
            if resume is not None:
                run.manifest.record(resumed_from=str(resume), resumed_units=take_over(resume, run.path))
            run.write_manifest()  # the commit and configuration on disk from the start: a stopped run is resumable
            log.info("[run] %s (kind %s) on %s (%s), clock %s", cfg.name, kind.name, tgt.name, sel.reason, chosen)
            (run.path / "config.yaml").write_text(yaml.safe_dump(json.loads(cfg.model_dump_json()), sort_keys=False))
            kind.run(ctx)
            Checkpoints(run.path).clear()  # complete: its tables hold what the checkpoints held
            run.manifest.timings_s = ctx.timings
            run.write_manifest()
            render(run.path, allow_unfinished=True)
    return run.final
