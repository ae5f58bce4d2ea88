"""The checks: the test suite, the nightly and its dashboard, the fuzzer, mutants, benchmarks."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from invoke import Context, Exit, task

from tasks._common import cli, python
from chimera.paths import ROOT


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


@task(help={"targets": "comma-separated target names (`invoke targets`) or auto (every target that can run "
                       "here); the reference and the oracle always run",
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


@task(help={"files": "comma-separated mutant sources, each named in its target's record, or auto (the default: "
                     "the sources of every target that can run here; chimera.p4's, p4, needs p4c and BMv2)",
            "budget": "how long to run mutants, e.g. 30m", "seed": "which mutants are drawn (default 0)",
            "fuzz": "the fuzz budget of each mutant (default 40s)", "max_mutants": "per file (0: as the budget allows)",
            "fuzz_rounds": "fuzz rounds per mutant instead of --fuzz (the outcome is then the seed's alone)",
            "only": "comma-separated mutant ids (from a run's mutants.csv): re-check just those",
            "no_conformance": "skip the conformance tests for mutants the fuzzer did not kill",
            "results": "results root directory"})
@cli
def mutate(c: Context, files: str = "auto", budget: str = "30m", seed: int = 0, fuzz: str = "40s",
           max_mutants: int = 0, no_conformance: bool = False, results: str = "results", only: str = "",
           fuzz_rounds: int = 0, verbose: bool = False) -> None:
    """Mutation score: mechanical mutants of chimera.bpf.c, chimera.p4 and the reference core (docs/fuzzing.md)."""
    from chimera.formats.units import parse_duration
    from chimera.fuzz.mutants import sources
    from chimera.fuzz.mutate import MutateConfig, available, mutate as run
    names = [f for f in files.split(",") if f]
    if names == ["auto"]:
        names = [f for f in sources() if available(f) is None]
    out = run(MutateConfig(files=tuple(names), budget_s=parse_duration(budget, "--budget"),
                           seed=seed, fuzz_s=parse_duration(fuzz, "--fuzz"), conformance=not no_conformance,
                           max_mutants=max_mutants, only=tuple(x for x in only.split(",") if x),
                           fuzz_rounds=fuzz_rounds), results)
    print((out / "summary.md").read_text())  # noqa: T201 - the summary is the command's output


@task(help={"what": "ingest | pipeline | install | switch | fidelity | directions | scale | sweep | zeroloss | "
                    "shards | bmv2ratio | bmv2files | toolchain | verifier",
            "pcap": "capture to benchmark (ingest)",
            "seeds": "fidelity, directions: comma-separated seeds (default: development 1,2,3 and held-out 11-15)",
            "only": "fidelity, directions: comma-separated parts of data names to run",
            "baseline": "bmv2files: the git revision whose chimera.p4 the shipped one is timed against",
            "p4c": "toolchain: the bin directory of the p4c build to check (default: the p4c-bm2-ss on PATH)",
            "switch": "toolchain: the bin directory of the BMv2 build to check (default: the simple_switch_grpc on PATH)",
            "sizes": "scale: comma-separated dataset sizes in packets (default 100000,1000000,10000000)",
            "shards": "shards: comma-separated numbers of testbeds (default 1,2)",
            "targets": "shards: comma-separated testbed targets (default: every testbed the benches hold to goals)",
            "experiment": "verifier: the experiment whose variants' programs are loaded (default ablation)",
            "export": "verifier: write the objects and their index to this folder for a VM (scripts/vm-boot)",
            "guest": "verifier: record what a VM's kernel said (the folder scripts/vm-boot's guest wrote)"})
@cli
def bench(c: Context, what: str = "ingest", pcap: str = "", seeds: str = "", only: str = "", baseline: str = "",
          sizes: str = "", p4c: str = "", switch: str = "", shards: str = "", targets: str = "",
          experiment: str = "", export: str = "", guest: str = "", verbose: bool = False) -> None:
    """Benchmarks; each prints its measured rates and ratios (chimera/bench/__init__.py lists them)."""
    from chimera.bench import dispatch
    from chimera.errors import ConfigError
    try:
        seed_list = tuple(int(x) for x in seeds.split(",") if x)
    except ValueError:
        raise ConfigError(f"--seeds {seeds!r}: not a comma-separated list of integers", "e.g. --seeds 1,2,3") from None
    try:
        size_list = tuple(int(float(x)) for x in sizes.split(",") if x)
    except ValueError:
        raise ConfigError(f"--sizes {sizes!r}: not a comma-separated list of packet counts",
                          "e.g. --sizes 100000,1000000") from None
    try:
        shard_list = tuple(int(x) for x in shards.split(",") if x)
    except ValueError:
        raise ConfigError(f"--shards {shards!r}: not a comma-separated list of integers", "e.g. --shards 1,2,4") from None
    if any(k < 1 for k in shard_list):
        raise ConfigError(f"--shards {shards!r}: a number of testbeds is at least 1", "e.g. --shards 1,2,4")
    dispatch(what, pcap=Path(pcap) if pcap else None, seeds=seed_list, only=tuple(x for x in only.split(",") if x),
             baseline=baseline, sizes=size_list, p4c=Path(p4c) if p4c else None,
             switch=Path(switch) if switch else None, shards=shard_list,
             targets=tuple(x for x in targets.split(",") if x), experiment=experiment,
             export=Path(export) if export else None, guest=Path(guest) if guest else None)


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@task(help={"k": "pytest -k expression", "x": "stop at first failure",
            "workers": "pytest-xdist workers (default: one per core and one more; 0: in this process, one test at a time)"})
def test(c: Context, k: str = "", x: bool = False, workers: int = -1) -> None:
    """Run the test suite (tests needing root/BMv2 skip with a reason where absent).

    Tests run in parallel, one worker per core and one more (pytest-xdist, --dist loadgroup): a file's tests on
    one worker, so its module fixtures are built once, and the testbed files' tests on one worker together (their
    `xdist_group` mark; their testbeds take turns through the machine-wide lock anyway), in the order tests/conftest.py
    gives the groups (those with a test marked ``long`` first, then the largest).
    The workers are the parallelism: each runs its math libraries on one thread (OMP/OpenBLAS/MKL, unless set
    already), since their thread pools on every worker at once oversubscribe the cores and spin."""
    py = python()
    one = {} if workers == 0 else {v: os.environ.get(v, "1") for v in THREAD_VARS}
    par = [] if workers == 0 else ["-n", str((os.cpu_count() or 1) + 1) if workers < 0 else str(workers),
                                   "--dist", "loadgroup", "--no-loadscope-reorder", "--durations", "10"]
    args = ["-m", "pytest", "-ra", "-q", *par] + (["-k", k] if k else []) + (["-x"] if x else [])
    r = subprocess.run([py, *args], cwd=ROOT, check=False, env={**os.environ, **one})
    if r.returncode == 5:
        raise Exit("no tests were collected", code=1)
    if r.returncode != 0:
        raise Exit(code=r.returncode)
