"""Running experiments: one run, a sweep, a replay of any pcap, a report, a comparison."""

from __future__ import annotations

import logging
from pathlib import Path

from invoke import Context, Exit, task

from tasks._common import cli


@task(help={"name": "experiment (experiments/<name>.yaml) or a path to a YAML file",
            "target": "auto (the default: the highest-ranked target that can run here) or a target's name "
                      "(`invoke targets` lists them, ranked, and says which can run here)",
            "dataset": "use this dataset instead: a normalized dataset or a raw dataset directory",
            "adapter": "adapter for a raw --dataset directory (ciciot2022, iscxvpn2016, peerrush, folders)",
            "layout": "raw --dataset: sequential (captures back to back) | overlay (all start together)",
            "max_packets_per_class": "raw --dataset: keep whole flows, earliest first, up to this many per class",
            "results": "results root directory",
            "clock": "trace (verdicts on the capture's timestamps, any pace) | switch (the switch's own clock)",
            "pps": "trace clock: replay at this rate instead of the target's measured zero-loss rate",
            "max_replay": "refuse a replay expected to take longer than this many seconds (default 1800)",
            "compression": "stability/cadence: simulated seconds per trace second (1 = the real day)",
            "shards": "replay over this many testbeds at once, each flow on one (docs/pipeline.md, 'Shards')",
            "ray": "with --shards: HEAD:PORT of the Ray cluster whose nodes run the shards (default: local processes)",
            "resume": "a run stopped part-way (its results/<name>/.<run>.partial or .failed/<run> folder), started "
                      "with the same options: take its finished units (a stability run's day x seed) instead of "
                      "redoing them (refused where its code has changed since)"})
@cli
def run_experiment(c: Context, name: str = "quickstart", target: str = "", dataset: str = "",
                   adapter: str = "ciciot2022", layout: str = "sequential", max_packets_per_class: int = 0,
                   results: str = "results", clock: str = "", pps: int = 0, max_replay: float = 0.0,
                   compression: float = 0.0, shards: int = 1, ray: str = "", resume: str = "",
                   verbose: bool = False) -> None:
    """Run an experiment end to end; results land in results/<name>/<run-id>/."""
    from chimera.experiments.load import load_experiment
    from chimera.experiments.overrides import cli_overrides
    from chimera.experiments.runner import run_experiment as run
    over = cli_overrides(name, dataset, adapter, layout, max_packets_per_class, compression)
    cfg = load_experiment(name, over or None)
    if resume:
        from chimera.book.resume import same_code
        same_code(Path(resume))
    out = run(cfg, target=target or None, results_root=results, experiment_file=name, dataset_override=dataset,
              clock=clock or None, pps=pps or None, max_replay_s=max_replay or None, shards=shards, ray=ray or None,
              resume=Path(resume) if resume else None)
    logging.getLogger("tasks").info("report: %s", out / "report.md")


@task(help={"name": "experiment to sweep (experiments/<name>.yaml) or a YAML path",
            "seeds": "comma-separated seeds, e.g. 1,2,3 (mean and 95% CI across them)",
            "datasets": "comma-separated: names of the experiment's datasets, or dataset directories",
            "target": "a target's name (`invoke targets`) or auto (default: the experiment's)",
            "ray": "HEAD:PORT of a Ray cluster (default: a local Ray instance sized to this machine)",
            "retries": "retries of a task whose worker or node dies (then it is recorded as failed)",
            "sequential": "run the tasks one after another in this process (no Ray)",
            "join": "one seed of a multi-dataset experiment: also write the experiment's own run from the tasks "
                    "(results/<name>/<run-id>, the tables a plain run writes; chimera.sweep.join)",
            "results": "results root directory",
            "resume": "a sweep stopped part-way (its results/sweep-<name>/.<run>.partial or .failed/<run> folder), "
                      "or a finished one to extend with more seeds or datasets: reuse the tasks it completed, run "
                      "the others (refused where its code has changed since)"})
@cli
def sweep(c: Context, name: str = "quickstart", seeds: str = "1", datasets: str = "", target: str = "",
          ray: str = "", retries: int = 2, sequential: bool = False, join: bool = False, results: str = "results",
          resume: str = "", verbose: bool = False) -> None:
    """Fan an experiment's variants x seeds x datasets out as Ray tasks; merge into results/sweep-<name>/<run>/."""
    from chimera.errors import ConfigError
    from chimera.sweep.driver import sweep as run
    try:
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds {seeds!r} is not a comma-separated list of integers", "e.g. --seeds 1,2,3") from None
    if join:
        from chimera.sweep.join import joinable
        joinable(name, seed_list)  # now, not after the tasks have run
    if resume:
        from chimera.book.resume import same_code
        same_code(Path(resume))
    out = run(name, seed_list, [d for d in datasets.split(",") if d] or None, target, ray or None, retries, results,
              executor="sequential" if sequential else "ray", resume=Path(resume) if resume else None)
    logging.getLogger("tasks").info("report: %s", out / "report.md")
    if join:
        from chimera.sweep.join import join as join_run
        logging.getLogger("tasks").info("joined run: %s", join_run(out, results) / "report.md")


@task(help={"sweep_dir": "a finished one-seed sweep of a multi-dataset experiment (results/sweep-<name>/<run-id>)",
            "results": "results root directory"})
@cli
def join_sweep(c: Context, sweep_dir: str, results: str = "results", verbose: bool = False) -> None:
    """Write the experiment's own run from a one-seed sweep's dataset tasks (as `invoke sweep --join`)."""
    from chimera.sweep.join import join as join_run
    logging.getLogger("tasks").info("joined run: %s", join_run(Path(sweep_dir), results) / "report.md")


@task
@cli
def targets(c: Context, verbose: bool = False) -> None:
    """The registered targets, in --target auto's order: what each can do and whether it can run here (and why
    not)."""
    import pandas as pd

    from chimera.targets.registry import AUTO, TARGETS, TRUTH, describe_all, target_class
    rows = []
    for name, why in describe_all().items():
        t = target_class(name)
        caps = [str(f.name).lower() for f in type(t.capabilities) if f in t.capabilities and f.name]
        rows.append({"target": name + (" (the truth)" if name == TRUTH else ""), "title": t.title,
                     "auto rank": "-" if t.auto_rank is None else t.auto_rank, "can": ", ".join(caps) or "classify",
                     "here": "yes" if why is None else f"no: {why}"})
    table = pd.DataFrame(rows).sort_values("auto rank", key=lambda r: r.map(lambda x: -1 if x == "-" else -x))
    print(table.to_markdown(index=False))  # noqa: T201 - the table is the command's output
    print(f"\n--target {AUTO}: the highest-ranked target that can run here; registry: "  # noqa: T201
          f"chimera/targets/registry.py ({len(TARGETS)} targets)")


@task(help={"pcap": "the capture to classify",
            "target": "a registered target or auto (default: the reference, the truth the others are checked against)",
            "model": "a run directory whose artifact to load (default: train the quickstart model)",
            "variant": "which of the run's artifacts (default: the first)", "results": "results root directory",
            "clock": "trace (default) | switch", "pps": "trace clock: replay rate (default: measured)",
            "max_replay": "refuse a replay expected to take longer than this many seconds",
            "artifact": "an artifact file instead of a run's model (a fuzz failure's failure-N.artifact.json)",
            "installs": "Map installs between given packets (a fuzz failure's failure-N.installs.json; trace clock)",
            "frames": "normalized (default) | as-captured (send the pcap's Ethernet frames byte for byte)",
            "coverage": "build the dataplane with its decision-point counters (compared with the reference's)"})
@cli
def replay(c: Context, pcap: str, target: str = "", model: str = "", variant: str = "",
           results: str = "results", clock: str = "trace", pps: int = 0, max_replay: float = 0.0,
           artifact: str = "", installs: str = "", frames: str = "normalized", coverage: bool = False,
           verbose: bool = False) -> None:
    """Replay any pcap through a fresh testbed with a trained model; per-packet verdicts to results/replay/<run>/."""
    from chimera.experiments.replay import replay_pcap
    from chimera.targets.registry import TRUTH
    from chimera.testbed.replay import CLOCKS
    if clock not in CLOCKS:
        raise Exit(f"replay: --clock {clock!r}: use trace or switch", code=2)
    if frames not in ("normalized", "as-captured"):
        raise Exit(f"replay: --frames {frames!r}: use normalized or as-captured", code=2)
    out = replay_pcap(Path(pcap), target or TRUTH, Path(model) if model else None, variant, results, clock,
                      pps or None, max_replay or None, Path(artifact) if artifact else None,
                      Path(installs) if installs else None, frames, coverage)
    logging.getLogger("tasks").info("verdicts: %s", out / "verdicts.csv")


@task(help={"run_dir": "a finished run directory (results/<experiment>/<run-id>)"})
@cli
def report(c: Context, run_dir: str, verbose: bool = False) -> None:
    """Re-render a run's report.md and figures from its CSVs (no rerun); refuses partial and failed runs."""
    from chimera.experiments.render import render
    logging.getLogger("tasks").info("report: %s", render(run_dir))


@task(help={"run_a": "first run directory", "run_b": "second run directory",
            "out": "write the comparison here as markdown (default: print it)"})
@cli
def compare(c: Context, run_a: str, run_b: str, out: str = "", verbose: bool = False) -> None:
    """Two runs side by side: metrics, per-class F1 and counters, with the differences."""
    from chimera.experiments.compare import compare_runs
    text = compare_runs(Path(run_a), Path(run_b))
    if out:
        Path(out).write_text(text)
        logging.getLogger("tasks").info("comparison: %s", out)
    else:
        print(text)  # noqa: T201 - the comparison is the command's output
