"""``invoke mutate``: the mutation score of the conformance tests and the fuzzer.

Mutants (chimera.fuzz.mutants) are drawn at random from each file asked for (``reference``: the reference
core; ``ebpf``: chimera.bpf.c; ``p4``: chimera.p4, where p4c and BMv2 are installed), in turn, until the budget is
spent. Each runs in its own process (``python -m chimera.fuzz.mutate --worker``): the mutant built (a C or P4
mutant through BuildOptions.source; a reference mutant imported in place of chimera.reference.pipeline, with
its own numba cache), then

1. a fixed fuzz budget (chimera.fuzz.run, stopping at the first difference): the reference against the oracle
   for a reference mutant, the mutant switch against the reference for the others;
2. if it survived, the conformance tests of its target (tests/test_conformance.py, tests/test_reference.py for
   the reference), which build with the mutant through CHIMERA_MUTANT_SOURCE / CHIMERA_MUTANT_TARGET.

Outcomes: killed (by what), survived, equivalent (listed with an argued reason in
docs/mutants.yaml: never run), invalid (does not compile, load or import: counted apart), and
timeout (counted as killed: the pipeline stopped answering). The score is killed / (killed + survived), with
a 95% Wilson interval, per file. Survivors are the to-do list: a new test, or an argued equivalence.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from chimera import paths
from chimera.errors import ChimeraError, ConfigError
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.registry import environment
from chimera.fuzz.mutants import Mutant, mutants_of, source_of, sources
from chimera.report.sections import MutatePlan, MutateResult, Score
from chimera.targets.base import Capability, Target
from chimera.targets.registry import mutant_sources
from chimera.fuzz.triage import equivalents, wilson

log = logging.getLogger(__name__)
ROOT = paths.ROOT


def target_of(file: str) -> type[Target]:
    """The target whose source a mutant file is (its record's ``mutants``)."""
    source_of(file)  # an unknown file is named with the known ones
    return mutant_sources()[file][0]


def in_process(file: str) -> bool:
    """The mutant's target classifies in this process (a Python source imported in place of the original)."""
    return not target_of(file).can(Capability.TESTBED)


STATUSES = ("killed", "timeout", "survived", "equivalent", "invalid")
#: with fuzz_rounds, a mutant's fuzz has this as its time budget: never reached by a working pipeline, so the
#: rounds decide; a mutant that hangs the pipeline past it is a timeout (counted as killed)
ROUNDS_CAP_S = 1800.0


@dataclass(frozen=True)
class MutateConfig:
    files: tuple[str, ...]          # mutant sources by name (a target record's ``mutants.name``)
    budget_s: float = 1800.0
    seed: int = 0
    fuzz_s: float = 40.0            # the fixed fuzz budget of each mutant (seconds; see fuzz_rounds)
    fuzz_rounds: int = 0            # > 0: each mutant gets this many fuzz rounds instead, whatever they take, and
    #                                 Hypothesis's saved examples are not replayed: the outcome is the seed's alone
    conformance: bool = True        # the conformance tests for a mutant the fuzzer did not kill
    max_mutants: int = 0            # per file; 0: as many as the budget allows
    only: tuple[str, ...] = ()      # just these mutant ids (a survivor re-checked after a generator change)

    def __post_init__(self) -> None:
        bad = [f for f in self.files if f not in sources()]
        if bad:
            raise ConfigError(f"unknown mutation files {bad}", f"choose from {list(sources())}")


@dataclass
class Outcome:
    id: str
    file: str
    line: int
    operator: str
    original: str
    replacement: str
    status: str
    by: str = ""
    seconds: float = 0.0


def available(file: str) -> str | None:
    """Why a file's mutants cannot run here, or None."""
    return target_of(file).unavailable_reason()


def run_mutant(m: Mutant, cfg: MutateConfig, work: Path) -> Outcome:
    """One mutant in its own process; the outcome from its report (a hang past the limit: timeout)."""
    src = source_of(m.file).path
    d = work / m.id
    d.mkdir(parents=True, exist_ok=True)
    mutant_src = d / src.name
    mutant_src.write_text(m.apply(src.read_text()))
    spec = {"file": m.file, "source": str(mutant_src), "fuzz_s": cfg.fuzz_s, "seed": cfg.seed,
            "conformance": cfg.conformance, "work": str(d), "rounds": cfg.fuzz_rounds}
    (d / "spec.json").write_text(json.dumps(spec))
    # a reference mutant compiles its own numba kernels into a cache of its own; a switch mutant leaves the
    # package's kernels as they are, so its worker loads the checkout's compiled ones (compiling them again cost
    # every such worker about 15 s)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           **({"NUMBA_CACHE_DIR": str(d / "numba")} if in_process(m.file) else {})}
    limit = (ROUNDS_CAP_S if cfg.fuzz_rounds else cfg.fuzz_s * 3) + (900 if cfg.conformance else 300)
    t0 = time.monotonic()
    base = Outcome(m.id, m.file, m.line, m.operator, m.original.strip(), m.replacement.strip(), "timeout")
    try:
        r = subprocess.run([sys.executable, "-m", "chimera.fuzz.mutate", "--worker", str(d / "spec.json")],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit)
        (d / "worker.log").write_text(r.stdout[-20000:] + "\n" + r.stderr[-20000:])
        report = json.loads((d / "report.json").read_text()) if (d / "report.json").is_file() else \
            {"status": "killed", "by": f"the worker crashed ({r.returncode}): {r.stderr.strip().splitlines()[-1:]}"}
        base.status, base.by = report["status"], report.get("by", "")
    except subprocess.TimeoutExpired:
        base.by = f"no answer within {limit:.0f} s"
    base.seconds = time.monotonic() - t0
    return base


def draw(cfg: MutateConfig, files: list[str], equivalent: frozenset[str] = frozenset()
         ) -> tuple[dict[str, list[Mutant]], dict[str, int]]:
    """The mutants a run takes from each file, in order (the seed's shuffle, cut after max_mutants that are not
    argued equivalent: those are recorded, never run, and do not fill the sample), and each file's population: a
    function of the seed, the sources and the triage alone."""
    rng = random.Random(cfg.seed)
    queues: dict[str, list[Mutant]] = {}
    population: dict[str, int] = {}
    for f in files:
        ms = mutants_of(f)
        population[f] = len(ms)
        rng.shuffle(ms)
        if cfg.only:
            ms = [m for m in ms if m.id in cfg.only]
        if cfg.max_mutants:
            kept, judged = [], 0
            for m in ms:
                if judged == cfg.max_mutants:
                    break
                kept.append(m)
                judged += m.id not in equivalent
            ms = kept
        queues[f] = ms
    unknown = set(cfg.only) - {m.id for q in queues.values() for m in q}
    if unknown:
        raise ConfigError(f"no mutant {sorted(unknown)} in {files}",
                          "take the id from a run's mutants.csv, and name its file in --files")
    return queues, population


def mutate(cfg: MutateConfig, results_root: str | Path = "results") -> Path:
    """Run mutants until the budget is spent; results/mutate/<run>/ holds mutants.csv and summary.md."""
    eq = equivalents()
    skipped = {f: why for f in cfg.files if (why := available(f)) is not None}
    files = [f for f in cfg.files if f not in skipped]
    queues, population = draw(cfg, files, frozenset(eq))
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + cfg.budget_s
    with RunDir(results_root, "mutate", "-".join(files) or "none") as run, \
            tempfile.TemporaryDirectory(prefix="chimera-mutate-") as tmp:
        run.manifest.record(kind="mutate", git=git_state(ROOT), environment=environment(), seed=cfg.seed)
        run.manifest.put("mutate", MutatePlan.model_validate({**asdict(cfg), "population": population,
                                                              "skipped": skipped}))
        turn = 0
        while time.monotonic() < deadline and any(queues.values()):
            f = [x for x in files if queues[x]][turn % len([x for x in files if queues[x]])]
            turn += 1
            m = queues[f].pop(0)
            if m.id in eq:
                outcomes.append(Outcome(m.id, m.file, m.line, m.operator, m.original.strip(), m.replacement.strip(),
                                        "equivalent", eq[m.id]))
                continue
            o = run_mutant(m, cfg, Path(tmp))
            outcomes.append(o)
            log.info("mutant %s %s: %s%s (%.0f s)", m.id, m.describe(), o.status, f" ({o.by[:120]})" if o.by else "",
                     o.seconds)
            pd.DataFrame([asdict(x) for x in outcomes]).to_csv(run.path / "mutants.csv", index=False)
        df = pd.DataFrame([asdict(x) for x in outcomes], columns=list(Outcome.__dataclass_fields__))
        df.to_csv(run.path / "mutants.csv", index=False)
        scores = score_table(df, population)
        run.manifest.put("mutate_result", MutateResult.model_validate({"scores": scores, "mutants": len(df)}))
        (run.path / "summary.md").write_text(summary_markdown(df, scores, cfg, skipped, run.final.name))
    return run.final


def score_table(df: pd.DataFrame, population: dict[str, int]) -> dict[str, Score]:
    """Per file: the outcomes counted, the score (killed / judged) and its Wilson interval."""
    out: dict[str, Score] = {}
    for f, g in df.groupby("file"):
        counts = {s: int((g["status"] == s).sum()) for s in STATUSES}
        killed = counts["killed"] + counts["timeout"]
        n = killed + counts["survived"]
        lo, hi = wilson(killed, n)
        out[str(f)] = Score.model_validate({**counts, "population": population.get(str(f), 0),
                                            "score": killed / n if n else math.nan, "ci95": (lo, hi)})
    return out


def summary_markdown(df: pd.DataFrame, scores: dict[str, Score], cfg: MutateConfig,
                     skipped: dict[str, str], run_id: str) -> str:
    lines = [f"# Mutation run {run_id}", "",
             f"seed {cfg.seed}, " + (f"budget {cfg.budget_s:.0f} s, " if math.isfinite(cfg.budget_s) else
                                     f"{cfg.max_mutants} mutants per file, ") + (f"{cfg.fuzz_rounds} fuzz rounds" if cfg.fuzz_rounds
                                                                  else f"{cfg.fuzz_s:.0f} s of fuzzing") + " per mutant"
             f"{', then the conformance tests' if cfg.conformance else ''}; mutants drawn at random from each file", "",
             "| file | score (killed / non-equivalent) | 95% CI | killed | timeout | survived | equivalent | invalid "
             "| population |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f, s in scores.items():
        score, lo, hi = (math.nan if x is None else x for x in (s.score, *s.ci95))
        lines.append(f"| {f} | {score:.1%} | {lo:.0%}-{hi:.0%} | {s.killed} | "
                     f"{s.timeout} | {s.survived} | {s.equivalent} | {s.invalid} | {s.population} |")
    for f, why in skipped.items():
        lines.append(f"| {f} | not run here: {why} | | | | | | | |")
    surv = df[df["status"] == "survived"]
    if len(surv):
        lines += ["", "## Survivors (a new test each, or an argued equivalence in docs/mutants.yaml)", "",
                  surv[["id", "file", "line", "operator", "original", "replacement"]].to_markdown(index=False)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the worker (its own process)

def install_python_mutant(file: str, path: Path) -> None:
    """Import the mutant in place of the in-process target's module (before anything imports the original)."""
    name = ".".join(source_of(file).path.relative_to(ROOT).with_suffix("").parts)
    importlib.import_module(name.rsplit(".", 1)[0])  # the package first
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)


def _valid(file: str, source: Path, work: Path) -> str | None:
    """Why the mutant cannot run at all (it does not compile, load or import), or None."""
    from chimera.fuzz.profiles import artifact
    from chimera.testbed.nodes import BuildOptions
    try:
        if not in_process(file):
            for prof in ("collide", "max"):
                target_of(file).verify_program(artifact(prof), work / "build",
                                               BuildOptions(coverage=True, source=source))
        else:
            from chimera.fuzz.check import observe_reference
            from chimera.fuzz.sequence import Batch
            from chimera.fuzz.strategies import Context, sample_sequences
            art = artifact("collide")
            b = Batch(art, sample_sequences(Context.of(art), 2, 1))
            observe_reference(art, b.write(work / "probe.pcap"), b.ts_ns, b.script)
    except ChimeraError as e:
        return e.problem.splitlines()[0][:200]
    except Exception as e:  # noqa: BLE001 - a mutant reference that fails to type or run is invalid, not killed
        if in_process(file) and type(e).__module__.startswith(("numba", "builtins")) and \
                type(e).__name__ in ("TypingError", "NameError", "SyntaxError", "UnsupportedError", "LoweringError"):
            return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        raise
    return None


def worker(spec_path: Path) -> dict[str, Any]:  # JSON out: the worker's result, read back by the parent process
    spec = json.loads(spec_path.read_text())
    file, source, work = spec["file"], Path(spec["source"]), Path(spec["work"])
    local, target, src = in_process(file), target_of(file), source_of(file)
    if local:
        try:
            install_python_mutant(file, source)
        except Exception as e:  # noqa: BLE001 - a mutant that does not import is invalid
            return {"status": "invalid", "by": f"import: {type(e).__name__}: {str(e)[:200]}"}
    why = _valid(file, source, work)
    if why is not None:
        return {"status": "invalid", "by": why}
    from chimera.fuzz.run import FuzzConfig, fuzz
    from chimera.testbed.nodes import BuildOptions
    # an in-process mutant is held to the oracle (with the directed corpus); a switch mutant to the reference
    testbed = () if local else (target.name,)
    try:
        rounds = int(spec.get("rounds", 0))
        res = fuzz(FuzzConfig(targets=testbed, budget_s=ROUNDS_CAP_S if rounds else float(spec["fuzz_s"]),
                              seed=int(spec["seed"]), rounds=rounds, database=not rounds,
                              stop_at_first=True, corpus=local, oracle=local,
                              investigate=False, batch=25, pps=src.pps,
                              build=BuildOptions(coverage=True, source=None if local else source)),
                   work / "fuzz")
    except Exception as e:  # noqa: BLE001 - the mutant broke the run itself: the difference is visible
        return {"status": "killed", "by": f"fuzz run failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    if res.failures:
        return {"status": "killed", "by": "fuzz: " + res.failures[0].diff.describe()}
    if not spec["conformance"]:
        return {"status": "survived", "by": f"{res.sequences} sequences"}
    import pytest
    os.environ["CHIMERA_MUTANT_SOURCE"] = str(source)
    os.environ["CHIMERA_MUTANT_TARGET"] = target.name
    rc = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *src.tests])
    if rc not in (0, 5):
        return {"status": "killed", "by": f"conformance tests ({src.tests[0]}...) failed"}
    return {"status": "survived", "by": f"{res.sequences} sequences and the conformance tests"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", type=Path, required=True, help="a mutant's spec.json (run by invoke mutate)")
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    report = worker(a.worker)
    (a.worker.parent / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
