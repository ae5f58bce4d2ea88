"""Invoke tasks: thin wrappers over the chimera package. ``invoke --list`` shows them.

Tasks choose exit codes; the library raises ChimeraError with the problem and
the fix, which is printed without a traceback.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from invoke import Collection, Context, Exit, task

ROOT = Path(__file__).resolve().parent
VENV_PY = ROOT / ".venv" / "bin" / "python"
SYSTEM_PACKAGES = [
    "mininet", "tcpreplay", "tcpdump", "clang", "llvm", "libbpf-dev", "libbpf1", "bpftool", "iproute2",
    "ethtool", "python3-venv", "python3-pip", "gcc", "libc6-dev",
]


def _logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", datefmt="%H:%M:%S")


def cli(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ChimeraError into a clean message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(c: Context, *args: Any, **kwargs: Any) -> Any:
        _logging(bool(kwargs.get("verbose", False)))
        from chimera.errors import ChimeraError
        try:
            return fn(c, *args, **kwargs)
        except ChimeraError as e:
            raise Exit(f"error: {e}", code=2) from None
        except KeyboardInterrupt:
            raise Exit("interrupted", code=130) from None

    return wrapper


@task
def setup(c: Context) -> None:
    """Install system packages (apt) and the project into .venv; idempotent (needs root)."""
    missing = [p for p in SYSTEM_PACKAGES
               if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        if os.geteuid() != 0:
            raise Exit(f"setup: system packages missing ({' '.join(missing)}); run as root: sudo scripts/bootstrap")
        c.run("apt-get update -q", pty=False)
        c.run("DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends " + " ".join(missing))
    py = str(VENV_PY if VENV_PY.exists() else sys.executable)
    c.run(f"{py} -m pip install -q --disable-pip-version-check -e '{ROOT}[test]'")
    c.run(f"{py} -c 'import mininet.net, torch, numba; print(\"setup ok: torch\", torch.__version__)'")


@task(help={"profile": "ciciot | peerrush | iscxvpn", "flows": "number of flows", "seed": "random seed",
            "out": "output directory (default data/<profile>-<flows>-s<seed>)",
            "attacks": "comma list of SCAN,SYN_FLOOD,UDP_DOS", "drift": "size/timing drift by the end",
            "adapter": "normalize a real dataset instead: ciciot2022 | iscxvpn2016 | peerrush | folders",
            "src": "directory of the real dataset (with --adapter)", "overwrite": "replace an existing output",
            "layout": "with --adapter: sequential (captures back to back) | overlay (all start together)",
            "max_packets_per_class": "with --adapter: keep whole flows, earliest first, up to this many per class"})
@cli
def dataset(c: Context, profile: str = "ciciot", flows: int = 2000, seed: int = 1, out: str = "",
            attacks: str = "", drift: float = 0.0, duration: float = 120.0, adapter: str = "", src: str = "",
            overwrite: bool = False, layout: str = "sequential", max_packets_per_class: int = 0,
            verbose: bool = False) -> None:
    """Generate a synthetic dataset, or normalize a real one (--adapter/--src)."""
    if adapter:
        from chimera.data.adapters import normalize
        from chimera.data.dataset import NormalizeOptions
        if not src:
            raise Exit("dataset: --adapter needs --src DIR (the unpacked dataset)", code=2)
        path = normalize(adapter, src, out or f"data/{adapter}", seed=seed, overwrite=overwrite,
                         options=NormalizeOptions(layout=layout, max_packets_per_class=max_packets_per_class))
    else:
        from chimera.data.synthetic import SyntheticSpec, generate
        spec = SyntheticSpec(profile=profile, flows=flows, seed=seed, duration_s=duration, drift=drift,
                             attacks=tuple(a for a in attacks.split(",") if a))
        path = generate(spec, out or f"data/{profile}-{flows}-s{seed}", overwrite=overwrite)
    logging.getLogger("tasks").info("dataset written: %s", path)


@task(help={"what": "ingest | reference | install | switch | fidelity | scale | sweep | zeroloss | bmv2ratio",
            "pcap": "capture to benchmark (ingest)"})
@cli
def bench(c: Context, what: str = "ingest", pcap: str = "", verbose: bool = False) -> None:
    """Benchmarks; each prints its measured rates and ratios."""
    log = logging.getLogger("bench")
    if what == "ingest" and pcap:
        from chimera.bench.ingest import run
        r = run(Path(pcap))
        log.info("ingest %s: %d packets; ours %.2f M pkt/s, dpkt %.3f M pkt/s, ratio %.1fx; %s",
                 pcap, r["packets"], r["ours_pps"] / 1e6, r["dpkt_pps"] / 1e6, r["ratio"], r["results"])
    else:
        from chimera.bench import dispatch
        dispatch(what)


@task(help={"name": "experiment (experiments/<name>.yaml) or a path to a YAML file",
            "target": "auto (the default: the highest-ranked target that can run here: bmv2 > ebpf > reference), "
                      "or a name in chimera/targets/registry.py",
            "dataset": "use this dataset instead: a normalized dataset or a raw dataset directory",
            "adapter": "adapter for a raw --dataset directory (ciciot2022, iscxvpn2016, peerrush, folders)",
            "layout": "raw --dataset: sequential (captures back to back) | overlay (all start together)",
            "max_packets_per_class": "raw --dataset: keep whole flows, earliest first, up to this many per class",
            "results": "results root directory",
            "clock": "trace (verdicts on the capture's timestamps, any pace) | switch (the switch's own clock)",
            "pps": "trace clock: replay at this rate instead of the target's measured zero-loss rate",
            "max_replay": "refuse a replay expected to take longer than this many seconds (default 1800)",
            "compression": "stability/cadence: simulated seconds per trace second (1 = the real day)"})
@cli
def run_experiment(c: Context, name: str = "quickstart", target: str = "", dataset: str = "",
                   adapter: str = "ciciot2022", layout: str = "sequential", max_packets_per_class: int = 0,
                   results: str = "results", clock: str = "", pps: int = 0, max_replay: float = 0.0,
                   compression: float = 0.0, verbose: bool = False) -> None:
    """Run an experiment end to end; results land in results/<name>/<run-id>/."""
    from chimera.experiments.load import load_experiment
    from chimera.experiments.overrides import cli_overrides
    from chimera.experiments.runner import run_experiment as run
    over = cli_overrides(name, dataset, adapter, layout, max_packets_per_class, compression)
    cfg = load_experiment(name, over or None)
    out = run(cfg, target=target or None, results_root=results, experiment_file=name, dataset_override=dataset,
              clock=clock or None, pps=pps or None, max_replay_s=max_replay or None)
    logging.getLogger("tasks").info("report: %s", out / "report.md")


@task(help={"name": "experiment to sweep (experiments/<name>.yaml) or a YAML path",
            "seeds": "comma-separated seeds, e.g. 1,2,3 (mean and 95% CI across them)",
            "datasets": "comma-separated: names of the experiment's datasets, or dataset directories",
            "target": "reference | ebpf | bmv2 | auto (default: the experiment's)",
            "ray": "HEAD:PORT of a Ray cluster (default: a local Ray instance sized to this machine)",
            "retries": "retries of a task whose worker or node dies (then it is recorded as failed)",
            "sequential": "run the tasks one after another in this process (no Ray)",
            "results": "results root directory"})
@cli
def sweep(c: Context, name: str = "quickstart", seeds: str = "1", datasets: str = "", target: str = "",
          ray: str = "", retries: int = 2, sequential: bool = False, results: str = "results",
          verbose: bool = False) -> None:
    """Fan an experiment's variants x seeds x datasets out as Ray tasks; merge into results/sweep-<name>/<run>/."""
    from chimera.errors import ConfigError
    from chimera.sweep.driver import sweep as run
    try:
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--seeds {seeds!r} is not a comma-separated list of integers", "e.g. --seeds 1,2,3") from None
    out = run(name, seed_list, [d for d in datasets.split(",") if d] or None, target, ray or None, retries, results,
              executor="sequential" if sequential else "ray")
    logging.getLogger("tasks").info("report: %s", out / "report.md")


@task(help={"update_baseline": "make this run the golden baseline (results/baseline/golden.json); never automatic",
            "history": "history CSV (default results/nightly/history.csv)",
            "repeats": "repeats per bench (median and IQR; >= 5)", "results": "results root directory"})
@cli
def nightly(c: Context, update_baseline: bool = False, history: str = "", repeats: int = 5, results: str = "results",
            verbose: bool = False) -> None:
    """The nightly regression suite against the golden baseline; non-zero exit on any regression."""
    from chimera.errors import ConfigError
    from chimera.nightly.suite import NightlyConfig, nightly as run
    if repeats < 5:
        raise ConfigError(f"--repeats {repeats}: a median and IQR need at least 5 repeats", "use --repeats 5 or more")
    out, regressed = run(NightlyConfig(repeats=repeats), update_baseline=update_baseline,
                         history=Path(history) if history else None, results_root=results)
    print((out / "summary.md").read_text())  # noqa: T201 - the summary is the command's output (CI comment)
    if regressed:
        raise Exit(f"nightly: regressions (see {out / 'summary.md'})", code=1)


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


@task(help={"pcap": "the capture to classify", "target": "reference | ebpf | bmv2 | auto",
            "model": "a run directory whose artifact to load (default: train the quickstart model)",
            "variant": "which of the run's artifacts (default: the first)", "results": "results root directory",
            "clock": "trace (default) | switch", "pps": "trace clock: replay rate (default: measured)",
            "max_replay": "refuse a replay expected to take longer than this many seconds"})
@cli
def replay(c: Context, pcap: str, target: str = "reference", model: str = "", variant: str = "",
           results: str = "results", clock: str = "trace", pps: int = 0, max_replay: float = 0.0,
           verbose: bool = False) -> None:
    """Replay any pcap through a fresh testbed with a trained model; per-packet verdicts to results/replay/<run>/."""
    from chimera.experiments.replay import replay_pcap
    from chimera.testbed.replay import CLOCKS
    if clock not in CLOCKS:
        raise Exit(f"replay: --clock {clock!r}: use trace or switch", code=2)
    out = replay_pcap(Path(pcap), target, Path(model) if model else None, variant, results, clock,  # type: ignore[arg-type]
                      pps or None, max_replay or None)
    logging.getLogger("tasks").info("verdicts: %s", out / "verdicts.csv")


@task(help={"k": "pytest -k expression", "x": "stop at first failure"})
def test(c: Context, k: str = "", x: bool = False) -> None:
    """Run the test suite (tests needing root/BMv2 skip with a reason where absent)."""
    py = str(VENV_PY if VENV_PY.exists() else sys.executable)
    args = ["-m", "pytest", "-ra", "-q"] + (["-k", k] if k else []) + (["-x"] if x else [])
    r = subprocess.run([py, *args], cwd=ROOT)
    if r.returncode == 5:
        raise Exit("no tests were collected", code=1)
    if r.returncode != 0:
        raise Exit(code=r.returncode)


@task(help={"target": "ebpf | bmv2 (where BMv2 is installed)", "experiment": "experiment whose first variant is loaded"})
@cli
def topo(c: Context, target: str = "ebpf", experiment: str = "quickstart", verbose: bool = False) -> None:
    """Bring up h1 - s1 - h2 with the pipeline loaded and open the Mininet CLI (needs root)."""
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    from chimera.experiments.load import build_artifact
    from chimera.targets.registry import target_class
    from chimera.targets.testbed import TestbedTarget
    from chimera.testbed.topology import Testbed
    cls = target_class(target)
    if not issubclass(cls, TestbedTarget):
        raise Exit(f"topo: target {target!r} has no switch; use --target ebpf or bmv2", code=2)
    cls.require_available()  # fails fast, naming what to install
    art = build_artifact(experiment).art
    with Testbed(cls.switch_cls, ROOT / "build", ROOT / "build") as tb:
        setLogLevel("output")  # the CLI prints through Mininet's own handler...
        tb.s1.load(art)
        logging.getLogger("tasks").info("%s pipeline loaded; try: h1 ping -c1 h2", tgt.name)
        for h in logging.getLogger().handlers:  # ...so ours steps back while the CLI runs (no double lines)
            h.setLevel(logging.WARNING)
        CLI(tb.net)


@task(help={"target": "ebpf | bmv2", "experiment": "experiment whose first variant is compiled"})
@cli
def build(c: Context, target: str = "ebpf", experiment: str = "quickstart", verbose: bool = False) -> None:
    """Compile the dataplane for an experiment's model (eBPF object, or chimera.p4 with p4c-bm2-ss)."""
    from chimera.experiments.load import build_artifact
    if target not in ("ebpf", "bmv2"):
        raise Exit(f"build: unknown target {target!r} (ebpf | bmv2)", code=2)
    art = build_artifact(experiment).art
    if target == "ebpf":
        from chimera.targets.ebpf.build import build_object
        logging.getLogger("tasks").info("eBPF object: %s", build_object(art, ROOT / "build"))
    else:
        from chimera.targets.bmv2.compiler import compile_p4
        logging.getLogger("tasks").info("BMv2 JSON: %s", compile_p4(art, ROOT / "build"))


@task(help={"check": "also compile chimera.p4 with p4c and compare its P4Info with the committed one"})
@cli
def p4info(c: Context, check: bool = False, verbose: bool = False) -> None:
    """Regenerate p4/chimera.p4info.txtpb from the schema; --check diffs it against p4c's (where p4c exists)."""
    from chimera.targets.bmv2.schema import P4INFO, render_p4info
    P4INFO.write_text(render_p4info())
    logging.getLogger("tasks").info("wrote %s", P4INFO)
    if check:
        from chimera.experiments.load import build_artifact
        from chimera.targets.bmv2.p4info_check import check_against_p4c
        diffs = check_against_p4c(build_artifact("quickstart").art, ROOT / "build")
        if diffs:
            raise Exit("P4Info differs from p4c's:\n  " + "\n  ".join(diffs), code=1)
        logging.getLogger("tasks").info("p4c's P4Info matches the committed contract")


@task
@cli
def p4header(c: Context, verbose: bool = False) -> None:
    """Regenerate p4/chimera_constants.h, the quickstart model's header, so `p4c-bm2-ss p4/chimera.p4` compiles."""
    from chimera.compile.header import write_header
    from chimera.experiments.load import build_artifact
    from chimera.targets.bmv2.schema import P4_DIR
    path = write_header(build_artifact("quickstart").art, P4_DIR / "chimera_constants.h")
    logging.getLogger("tasks").info("wrote %s", path)


@task
def clean(c: Context) -> None:
    """Remove build outputs and caches (keeps results/ and data/)."""
    for p in ("build", ".pytest_cache", ".hypothesis"):
        shutil.rmtree(ROOT / p, ignore_errors=True)


ns = Collection(setup, dataset, run_experiment, sweep, nightly, report, compare, replay, topo, build, p4info, p4header,
                bench, test, clean)
