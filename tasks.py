"""Invoke tasks: thin wrappers over the chimera package. ``invoke --list`` shows them.

Tasks choose exit codes; the library raises ChimeraError with the problem and
the fix, which is printed without a traceback.
"""

from __future__ import annotations

import dataclasses
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
#: installed where the distribution has them; their tests skip with the reason where absent
OPTIONAL_PACKAGES = {"chromium": "the nightly dashboard's browser test (tests/test_nightly.py)"}


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


TORCH = "torch==2.13.0"  # the pin in pyproject.toml
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: local | cpu-index | index | an index URL: overrides where `invoke setup` takes torch from
TORCH_ENV = "CHIMERA_TORCH"


@dataclasses.dataclass(frozen=True)
class TorchPlan:
    """Where torch comes from: the CPU build unless nothing else is reachable (the CUDA one is gigabytes)."""

    source: str
    pip_args: tuple[str, ...]
    warning: str = ""


def torch_plan(override: str, local_cpu_wheel: bool, cpu_index_reachable: bool) -> TorchPlan:
    """Local CPU wheel > the CPU wheel index > the plain index (with a warning); ``override`` ($CHIMERA_TORCH) wins."""
    choice = override or ("local" if local_cpu_wheel else "cpu-index" if cpu_index_reachable else "index")
    if choice == "local":
        # torch alone from find-links; its dependencies come with the project's install, from the index
        return TorchPlan("a local CPU wheel (pip's find-links)", ("--no-index", "--no-deps", TORCH))
    if choice == "cpu-index":
        return TorchPlan(TORCH_CPU_INDEX, ("--index-url", TORCH_CPU_INDEX, "--extra-index-url",
                                           "https://pypi.org/simple", TORCH))
    if choice == "index":
        return TorchPlan("the configured package index", (TORCH,),
                         "no CPU build of torch is reachable: the index's Linux wheel pulls CUDA (several GB). "
                         f"Point {TORCH_ENV} at a CPU wheel index, or put a CPU wheel in pip's find-links")
    if "://" in choice:
        return TorchPlan(choice, ("--index-url", choice, TORCH))
    raise Exit(f"setup: {TORCH_ENV}={choice!r} is not one of local, cpu-index, index or an index URL", code=2)


def torch_install(c: Context, py: str) -> None:
    """Install the pinned torch from the source torch_plan picks, unless it is already there."""
    log = logging.getLogger("tasks")
    have = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if have.returncode == 0 and have.stdout.strip().split("+")[0] == TORCH.split("==")[1]:
        return
    local = subprocess.run([py, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-q", TORCH],
                           capture_output=True).returncode == 0
    reachable = False
    if not local:
        import urllib.request
        try:
            with urllib.request.urlopen(TORCH_CPU_INDEX + "/torch/", timeout=10):
                reachable = True
        except OSError:
            pass
    plan = torch_plan(os.environ.get(TORCH_ENV, ""), local, reachable)
    if plan.warning:
        log.warning("setup: %s", plan.warning)
    log.info("setup: torch from %s", plan.source)
    c.run(f"{py} -m pip install -q --disable-pip-version-check " + " ".join(plan.pip_args))


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
    for pkg, why in OPTIONAL_PACKAGES.items():
        if subprocess.run(["dpkg", "-s", pkg], capture_output=True).returncode == 0 or os.geteuid() != 0:
            continue
        r = c.run(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {pkg}", warn=True)
        if not r or r.failed:
            logging.getLogger("tasks").warning("setup: optional %s not installed (used by %s); its tests will skip",
                                               pkg, why)
    py = str(VENV_PY if VENV_PY.exists() else sys.executable)
    torch_install(c, py)
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


@task(help={"what": "ingest | reference | install | switch | fidelity | scale | sweep | zeroloss | bmv2ratio | bmv2files",
            "pcap": "capture to benchmark (ingest)",
            "seeds": "fidelity: comma-separated seeds (default 1,2,3)",
            "only": "fidelity: comma-separated parts of data names to run (the docs are then left alone)",
            "baseline": "bmv2files: the git revision whose chimera.p4 the shipped one is timed against"})
@cli
def bench(c: Context, what: str = "ingest", pcap: str = "", seeds: str = "", only: str = "", baseline: str = "",
          verbose: bool = False) -> None:
    """Benchmarks; each prints its measured rates and ratios (chimera/bench/__init__.py lists them)."""
    from chimera.bench import dispatch
    from chimera.errors import ConfigError
    try:
        seed_list = tuple(int(x) for x in seeds.split(",") if x)
    except ValueError:
        raise ConfigError(f"--seeds {seeds!r}: not a comma-separated list of integers", "e.g. --seeds 1,2,3") from None
    dispatch(what, pcap=Path(pcap) if pcap else None, seeds=seed_list, only=tuple(x for x in only.split(",") if x),
             baseline=baseline)


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


@task(help={"update_baseline": "make this night the golden baseline (results/baseline/golden.json); never automatic",
            "force": "with --update-baseline: accept a night that regressed or failed to run (needs --reason)",
            "reason": "why the golden moves (recorded in golden.json with who and when)",
            "require": "comma-separated targets that must run tonight (replaces the suite's `require`)",
            "suite": "the nightly suite YAML (default results/baseline/nightly.yaml)",
            "history": "history CSV (default results/nightly/history.csv)",
            "repeats": "repeats per bench (median and IQR; >= 5)", "results": "results root directory",
            "fuzz_budget": "override the suite's fuzz budget, e.g. 2m (0: no fuzzing tonight)",
            "mutate_budget": "override the suite's mutation budget, e.g. 5m (0: no mutants tonight)"})
@cli
def nightly(c: Context, update_baseline: bool = False, force: bool = False, reason: str = "", require: str = "",
            suite: str = "", history: str = "", repeats: int = 0, results: str = "results", fuzz_budget: str = "",
            mutate_budget: str = "", verbose: bool = False) -> None:
    """The nightly regression suite against the golden baseline; non-zero exit on any regression or failure to run."""
    from chimera.nightly.config import SUITE, load_suite
    from chimera.nightly.suite import nightly as run
    cfg = load_suite(Path(suite) if suite else SUITE).with_cli(
        require=[t for t in require.split(",") if t] or None, repeats=repeats or None,
        fuzz_budget=fuzz_budget or None, mutate_budget=mutate_budget or None)
    out, regressed = run(cfg, update_baseline=update_baseline, force=force, reason=reason,
                         history=Path(history) if history else None, results_root=results)
    print((out / "summary.md").read_text())  # noqa: T201 - the summary is the command's output (CI comment)
    if regressed and not update_baseline:
        raise Exit(f"nightly: regressed or failed to run (see {out / 'summary.md'})", code=1)


@task(help={"history": "history CSV (default results/nightly/history.csv)", "results": "results root directory"})
@cli
def dashboard(c: Context, history: str = "", results: str = "results", verbose: bool = False) -> None:
    """Rewrite the nightly dashboard (results/nightly/site/index.html) from an existing history."""
    from chimera.nightly.dashboard import write_site
    from chimera.nightly.golden import load_golden
    from chimera.nightly.suite import BASELINE_DIR
    from chimera.errors import ResultsError
    root = Path(results) / "nightly"
    try:
        golden = load_golden(BASELINE_DIR)
    except ResultsError as e:
        logging.getLogger("tasks").warning("drawing without a golden line: %s", e)
        golden = None
    out = write_site(Path(history) if history else root / "history.csv", root, golden)
    logging.getLogger("tasks").info("open file://%s", out.resolve())


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
            "max_replay": "refuse a replay expected to take longer than this many seconds",
            "artifact": "an artifact file instead of a run's model (a fuzz failure's failure-N.artifact.json)",
            "installs": "Map installs between given packets (a fuzz failure's failure-N.installs.json; trace clock)",
            "frames": "normalized (default) | as-captured (send the pcap's Ethernet frames byte for byte)",
            "coverage": "build the dataplane with its decision-point counters (compared with the reference's)"})
@cli
def replay(c: Context, pcap: str, target: str = "reference", model: str = "", variant: str = "",
           results: str = "results", clock: str = "trace", pps: int = 0, max_replay: float = 0.0,
           artifact: str = "", installs: str = "", frames: str = "normalized", coverage: bool = False,
           verbose: bool = False) -> None:
    """Replay any pcap through a fresh testbed with a trained model; per-packet verdicts to results/replay/<run>/."""
    from chimera.experiments.replay import replay_pcap
    from chimera.testbed.replay import CLOCKS
    if clock not in CLOCKS:
        raise Exit(f"replay: --clock {clock!r}: use trace or switch", code=2)
    if frames not in ("normalized", "as-captured"):
        raise Exit(f"replay: --frames {frames!r}: use normalized or as-captured", code=2)
    out = replay_pcap(Path(pcap), target, Path(model) if model else None, variant, results, clock,
                      pps or None, max_replay or None, Path(artifact) if artifact else None,
                      Path(installs) if installs else None, frames, coverage)
    logging.getLogger("tasks").info("verdicts: %s", out / "verdicts.csv")


@task(help={"targets": "comma-separated: reference,ebpf,bmv2 or auto (every target that can run here); the "
                       "reference and the oracle always run",
            "budget": "how long to fuzz, e.g. 10m, 90s, 1h", "seed": "the generator's seed (default: today's date)",
            "profiles": "artifact profiles (default: all; chimera/fuzz/profiles.py)",
            "reproduce": "re-run a saved failure (results/fuzz/<run>/failure-N.json) instead of fuzzing",
            "results": "results root directory"})
@cli
def fuzz(c: Context, targets: str = "auto", budget: str = "10m", seed: int = -1, profiles: str = "",
         reproduce: str = "", results: str = "results", verbose: bool = False) -> None:
    """Differential fuzzing: reference, oracle, eBPF and BMv2 agree on every verdict and register (docs/fuzzing.md)."""
    import datetime as dt

    from chimera.formats.units import parse_duration
    from chimera.fuzz.profiles import PROFILES
    from chimera.fuzz.run import FuzzConfig, fuzz as run, reproduce as rerun
    from chimera.targets.registry import describe_all
    if reproduce:
        ok = rerun(Path(reproduce))
        if not ok:
            raise Exit("fuzz: the failure reproduces", code=1)
        return
    names = [t for t in targets.split(",") if t]
    if names == ["auto"]:
        names = [t for t, why in describe_all().items() if why is None]
    cfg = FuzzConfig(targets=tuple(names), budget_s=parse_duration(budget, "--budget"),
                     seed=seed if seed >= 0 else int(dt.date.today().strftime("%Y%m%d")),
                     profiles=tuple(p for p in profiles.split(",") if p) or tuple(PROFILES))
    res = run(cfg, results)
    print((res.run_dir / "summary.md").read_text())  # noqa: T201 - the summary is the command's output
    if res.failures:
        raise Exit(f"fuzz: {len(res.failures)} differences (see {res.run_dir / 'summary.md'})", code=1)


@task(help={"files": "comma-separated: reference, ebpf, p4 (p4 where p4c and BMv2 are installed)",
            "budget": "how long to run mutants, e.g. 30m", "seed": "which mutants are drawn (default 0)",
            "fuzz": "the fuzz budget of each mutant (default 40s)", "max_mutants": "per file (0: as the budget allows)",
            "fuzz_rounds": "fuzz rounds per mutant instead of --fuzz (the outcome is then the seed's alone)",
            "only": "comma-separated mutant ids (from a run's mutants.csv): re-check just those",
            "no_conformance": "skip the conformance tests for mutants the fuzzer did not kill",
            "results": "results root directory"})
@cli
def mutate(c: Context, files: str = "reference,ebpf", budget: str = "30m", seed: int = 0, fuzz: str = "40s",
           max_mutants: int = 0, no_conformance: bool = False, results: str = "results", only: str = "",
           fuzz_rounds: int = 0, verbose: bool = False) -> None:
    """Mutation score: mechanical mutants of chimera.bpf.c, chimera.p4 and the reference core (docs/fuzzing.md)."""
    from chimera.formats.units import parse_duration
    from chimera.fuzz.mutate import MutateConfig, mutate as run
    out = run(MutateConfig(files=tuple(f for f in files.split(",") if f), budget_s=parse_duration(budget, "--budget"),
                           seed=seed, fuzz_s=parse_duration(fuzz, "--fuzz"), conformance=not no_conformance,
                           max_mutants=max_mutants, only=tuple(x for x in only.split(",") if x),
                           fuzz_rounds=fuzz_rounds), results)
    print((out / "summary.md").read_text())  # noqa: T201 - the summary is the command's output


@task(help={"run_dir": "a complete run directory (results/<experiment>/<run-id>) made from committed code"})
@cli
def publish(c: Context, run_dir: str, verbose: bool = False) -> None:
    """Copy a run's light files into results/published/ (committed): the evidence the README cites."""
    from chimera.report.publish import publish as run
    logging.getLogger("tasks").info("published: %s", run(Path(run_dir)))


@task(help={"check": "re-render in memory and fail on any difference (the README test), writing nothing"})
@cli
def book(c: Context, check: bool = False, verbose: bool = False) -> None:
    """Render every measured number of README.md, docs/*.md and docs/claims.md from results/published/."""
    from chimera.book.render import check as diff, write
    log = logging.getLogger("tasks")
    if check:
        bad = diff()
        for d in bad:
            log.error("%s", d)
        if bad:
            raise Exit(f"{len(bad)} block(s) differ from their rendering: run `invoke book`", code=1)
        log.info("the book is as its runs render it")
        return
    changed = write()
    log.info("book: %d page(s) re-rendered%s", len(changed), "".join(f"\n  {p}" for p in changed))


@task(help={"stale": "re-run every cited experiment run whose code has moved on (required: says what it does)",
            "only": "comma-separated experiments: just these", "dry_run": "print the plan and its expected time"})
@cli
def republish(c: Context, stale: bool = False, only: str = "", dry_run: bool = False, verbose: bool = False) -> None:
    """Re-run the stale runs the book cites from committed code, publish them and re-render the book."""
    from chimera.errors import ConfigError
    if not stale:
        raise ConfigError("invoke republish re-runs the stale cited runs only", "say so: invoke republish --stale")
    from chimera.book.republish import republish as run
    run(tuple(x for x in only.split(",") if x), dry_run=dry_run)


@task(help={"quick": "the steps of the ledger that take minutes (leaves out Table 1, Table 2 and the window "
                     "figure)", "dry_run": "print the plan and its expected time, run nothing"})
@cli
def reproduce(c: Context, quick: bool = False, dry_run: bool = False, verbose: bool = False) -> None:
    """Run what docs/claims.md needs on this machine; its ledger beside the published one, claim by claim."""
    from chimera.book.reproduce import reproduce as run
    run(quick=quick, dry_run=dry_run)


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
        logging.getLogger("tasks").info("%s pipeline loaded; try: h1 ping -c1 h2", cls.name)
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


ns = Collection(setup, dataset, run_experiment, sweep, nightly, dashboard, fuzz, mutate, publish, republish, book, reproduce, report, compare, replay, topo, build, p4info, p4header,
                bench, test, clean)
