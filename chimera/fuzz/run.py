"""``invoke fuzz``: differential fuzzing of the reference, the oracle and every testbed target, within a budget.

Each round takes one artifact profile (chimera.fuzz.profiles, in turn) and asks Hypothesis for a batch of
sequences (chimera.fuzz.strategies). Every sequence runs at once through the reference and the oracle; a
difference there is shrunk by Hypothesis itself. The round's sequences then run as one batch, one replay per
testbed target (built with its coverage counters), and are compared with the reference on the whole batch:
verdicts frame by frame, registers, counters, coverage. A testbed difference is traced to its sequence, re-run
alone, shrunk by removing frames and installs while it still reproduces (each trial one replay), re-run
``repeats`` times to tell a deterministic failure from a flaky one, and saved as ``failure-N.pcap`` with its
artifacts, its installs and the one-line command that reproduces it. Coverage is counted per target from the
decision-point counters; ``coverage.csv`` has it per point, profile and target.

A directed corpus comes first: one flow of 65 600 packets (the packet count saturates, the sample ring wraps),
on every target whose replay of it fits in a quarter of the budget.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import shutil
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed
from hypothesis import target as htarget
from hypothesis.database import DirectoryBasedExampleDatabase

from chimera import paths
from chimera.controlplane.schedule import ScriptedInstalls
from chimera.errors import ChimeraError, ConfigError, ToolMissingError
from chimera.formats import coverage as cov
from chimera.formats.artifact import Artifact
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.registry import environment
from chimera.fuzz.check import CONTROL_POINTS, Difference, Observation, compare, observe_oracle, \
    observe_reference, observe_target
from chimera.fuzz.frames import FrameSpec
from chimera.fuzz.profiles import PROFILES, artifact
from chimera.fuzz.sequence import Batch, Event, Sequence
from chimera.fuzz.strategies import UNIT_NS, Context, sequences
from chimera.report.sections import Coverage, FuzzPlan
from chimera.report.sections import FuzzResult as FuzzResultSection
from chimera.targets.base import Capability, Target
from chimera.targets.registry import target_class, with_capability
from chimera.testbed.nodes import BuildOptions
from chimera.targets.registry import TRUTH


log = logging.getLogger(__name__)
#: the fuzzer's own executable specification (chimera.fuzz.oracle), observed beside the truth (registry.TRUTH)
ORACLE = "oracle"
ROOT = paths.ROOT
DATABASE = ROOT / "build" / "fuzz" / "hypothesis"
#: the longest sequence the oracle checks frame by frame (a longer directed one: the reference and targets only)
ORACLE_MAX = 70_000
LONG_FLOW = 65_600


@dataclass(frozen=True)
class FuzzConfig:
    targets: tuple[str, ...] = (TRUTH,)      # testbed targets beside the reference and the oracle
    budget_s: float = 600.0
    seed: int = 0
    profiles: tuple[str, ...] = tuple(PROFILES)
    batch: int = 40               # sequences per round
    shrink_trials: int = 40       # replays a testbed shrink may spend
    repeats: int = 5              # re-runs of a minimal failure (deterministic or flaky)
    corpus: bool = True           # the directed corpus first (long flow)
    build: BuildOptions = BuildOptions(coverage=True)   # how the testbed targets build (a mutant: invoke mutate)
    stop_at_first: bool = False   # end the run at the first difference (invoke mutate: a kill is enough)
    oracle: bool = True           # check every drawn sequence against the oracle (off: a testbed mutant's run)
    investigate: bool = True      # shrink and re-run testbed differences (off: invoke mutate, a kill is enough)
    pps: int | None = None        # a fixed replay rate (None: the target's measured zero-loss rate)
    rounds: int = 0               # stop after this many rounds (0: when the budget is spent); with a budget that
    #                               is never reached, the run draws the same sequences however fast the machine is
    database: bool = True         # replay Hypothesis's saved failures first (off: the draw is the seed's alone)

    def __post_init__(self) -> None:
        bad = [p for p in self.profiles if p not in PROFILES]
        if bad:
            raise ConfigError(f"unknown fuzz profiles {bad}", f"choose from {sorted(PROFILES)}")
        if self.budget_s <= 0:
            raise ConfigError(f"a fuzz budget of {self.budget_s} s", "give a positive budget, e.g. --budget 10m")


@dataclass
class Failure:
    """A difference, shrunk to a minimal sequence, saved as one pcap with everything needed to reproduce it."""

    n: int
    diff: Difference
    profile: str
    sequence: Sequence
    reproduced: str = ""          # "5/5 (deterministic)" | "2/5 (flaky)" | "0/5 (...)"
    files: dict[str, str] = field(default_factory=dict)
    command: str = ""

    def describe(self) -> str:
        return f"failure-{self.n} [{self.profile}, {self.reproduced}] {self.diff.describe()}"


@dataclass
class FuzzResult:
    run_dir: Path
    sequences: int = 0
    frames: int = 0
    rounds: int = 0
    failures: list[Failure] = field(default_factory=list)
    coverage: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)   # (target, profile) -> counts
    reachable: dict[str, set[str]] = field(default_factory=dict)                     # profile -> points
    targets: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def coverage_table(self) -> pd.DataFrame:
        rows = []
        for (t, prof), counts in self.coverage.items():
            for point, n in counts.items():
                rows.append({"target": t, "profile": prof, "point": point, "count": n,
                             "reachable": point in self.reachable.get(prof, set()) or point in CONTROL_POINTS})
        return pd.DataFrame(rows, columns=["target", "profile", "point", "count", "reachable"])

    def coverage_summary(self) -> dict[str, Coverage]:
        """Per target: the reachable points (over the profiles it ran) and those it took at least once."""
        df = self.coverage_table()
        out: dict[str, Coverage] = {}
        for t, g in df.groupby("target"):
            reach = sorted(set(g[g["reachable"]]["point"]))
            hit = sorted(set(g[(g["count"] > 0)]["point"]) & set(reach))
            out[str(t)] = Coverage(reachable=len(reach), hit=len(hit), percent=100.0 * len(hit) / max(1, len(reach)),
                                   missed=sorted(set(reach) - set(hit)))
        return out


def long_flow() -> Sequence:
    """One TCP flow of LONG_FLOW packets one unit apart: the per-flow packet count saturates at 65535 and a
    4096-slot sample ring taking every 16th packet wraps."""
    f = FrameSpec(src=0x0A000001, dst=0x0A000002, sport=40000, dport=443, tcp_flags=0x18, payload=100)
    return Sequence(tuple(Event(f, UNIT_NS, "long flow: the packet count saturates") for _ in range(LONG_FLOW)))


class Fuzzer:
    """One fuzz run: the targets up, the profiles built, rounds until the budget is spent."""

    def __init__(self, cfg: FuzzConfig, run: RunDir, targets: dict[str, Target]) -> None:
        self.cfg, self.run, self.targets = cfg, run, targets
        self.result = FuzzResult(run.final, targets=[TRUTH, ORACLE, *targets])
        self.work = run.path / "work"
        self.deadline = time.monotonic() + cfg.budget_s
        self.failed: set[tuple[str, str, str]] = set()   # difference signatures already saved
        self.arts: dict[str, Artifact] = {}

    # ------------------------------------------------------------------ observing

    def observe(self, name: str, art: Artifact, batch: Batch, tag: str) -> Observation:
        d = self.work / tag
        d.mkdir(parents=True, exist_ok=True)
        table = batch.write(d / "batch.pcap")
        if name == TRUTH:
            return observe_reference(art, table, batch.ts_ns, batch.script)
        if name == ORACLE:
            return observe_oracle(art, table, batch.ts_ns, batch.script)
        return observe_target(self.targets[name], art, table, batch.script, d, tag, self.cfg.pps)

    def count(self, obs: Observation, profile: str) -> None:
        acc = self.result.coverage.setdefault((obs.target, profile), {})
        for k, v in obs.coverage().items():
            acc[k] = acc.get(k, 0) + int(v)

    # ------------------------------------------------------------------ reference vs oracle (Hypothesis)

    def explore(self, profile: str, round_seed: int) -> tuple[list[Sequence], Sequence | None, list[Difference]]:
        """A batch of sequences; each checked on the reference against the oracle as it is drawn. Returns the
        sequences drawn before any failure, and the minimal failing sequence with its differences."""
        art, ctx = self.arts[profile], Context.of(self.arts[profile])
        drawn: list[Sequence] = []
        last: list[tuple[Sequence, list[Difference]]] = []   # the failing sequence and its differences
        failing = False

        def check(seq: Sequence) -> None:
            nonlocal failing
            batch = Batch(art, [seq])
            ref = self.observe(TRUTH, art, batch, "explore")
            diffs = compare(ref, self.observe(ORACLE, art, batch, "explore")) if self.cfg.oracle else []
            htarget(float(sum(1 for v in ref.coverage().values() if v)), label="decision points taken")
            if diffs:
                failing = True
                last[:] = [(seq, diffs)]
                raise AssertionError("; ".join(d.describe() for d in diffs[:3]))
            if not failing:
                drawn.append(seq)
                self.count(ref, profile)

        DATABASE.mkdir(parents=True, exist_ok=True)
        prop = given(sequences(ctx))(check)
        prop = settings(max_examples=self.cfg.batch, deadline=None, print_blob=False,
                        database=DirectoryBasedExampleDatabase(str(DATABASE / profile)) if self.cfg.database
                        else None,
                        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                        suppress_health_check=list(HealthCheck))(prop)
        prop = hseed(round_seed)(prop)
        try:
            prop()
        except AssertionError:
            return (drawn, *last[0]) if last else (drawn, None, [])
        return drawn, None, []

    # ------------------------------------------------------------------ testbed differences

    def oracle_diffs(self, profile: str, seq: Sequence) -> list[Difference]:
        art = self.arts[profile]
        batch = Batch(art, [seq])
        return compare(self.observe(TRUTH, art, batch, "shrink"), self.observe(ORACLE, art, batch, "shrink"))

    def oracle_differs(self, profile: str, seq: Sequence, sig: tuple[str, str, str]) -> bool:
        return any(d.signature() == sig for d in self.oracle_diffs(profile, seq))

    def differs(self, name: str, art: Artifact, seq: Sequence, sig: tuple[str, str, str], tag: str) -> bool:
        batch = Batch(art, [seq])
        try:
            got = self.observe(name, art, batch, tag)
        except ChimeraError as e:
            log.warning("%s: a shrink trial failed to run: %s", name, e.problem.splitlines()[0])
            return False
        want = self.observe(TRUTH, art, batch, tag)
        return any(d.signature() == sig for d in compare(want, got))

    def shrink(self, reproduces: Callable[[Sequence], bool], seq: Sequence, budget: int | None = None) -> Sequence:
        """Fewer frames and installs while the difference reproduces (delta debugging, within ``budget`` trials,
        default shrink_trials)."""
        limit = self.cfg.shrink_trials if budget is None else budget
        trials = 0
        cur = seq
        if cur.installs:
            for i in reversed(range(len(cur.installs))):
                if trials >= limit:
                    break
                cand = cur.without_installs({i})
                trials += 1
                if reproduces(cand):
                    cur = cand
        chunk = max(1, len(cur) // 2)
        while chunk >= 1 and trials < limit and len(cur) > 1:
            removed = False
            for start in range(0, len(cur), chunk):
                if trials >= limit:
                    break
                cand = cur.without(set(range(start, min(start + chunk, len(cur)))))
                if not len(cand):
                    continue
                trials += 1
                if reproduces(cand):
                    cur, removed = cand, True
                    break
            if not removed:
                chunk //= 2
        return cur

    def investigate(self, profile: str, batch: Batch, diff: Difference) -> None:
        """Trace a testbed difference to its sequence, shrink it, tell deterministic from flaky, save it."""
        sig = diff.signature()
        if sig in self.failed:
            return
        self.failed.add(sig)
        art = self.arts[profile]
        name = diff.target
        k = batch.sequence_of(diff.frame)[0] if diff.frame is not None else None
        candidates = ([batch.sequences[k]] if k is not None else []) + \
            [Sequence(tuple(e for s in batch.sequences[: (k or len(batch.sequences) - 1) + 1] for e in s.events))]
        seq = next((s for s in candidates if self.differs(name, art, s, sig, "isolate")), None)
        if seq is None:  # not alone, not with what came before: keep the whole batch's sequences as found
            seq = Sequence(tuple(e for s in batch.sequences for e in s.events))
            reproduced = f"0/1 alone: it needs the whole batch ({len(seq)} frames)"
            self.save(Failure(0, diff, profile, seq, reproduced))
            return
        seq = self.shrink(lambda s: self.differs(name, art, s, sig, "shrink"), seq)
        hits = sum(self.differs(name, art, seq, sig, "repeat") for _ in range(self.cfg.repeats))
        verdict = "deterministic" if hits == self.cfg.repeats else "flaky" if hits else "did not reproduce"
        self.save(Failure(0, diff, profile, seq, f"{hits}/{self.cfg.repeats} ({verdict})"))

    def save(self, f: Failure) -> Failure:
        """failure-N.pcap, its artifacts and installs, failure-N.json, and the command that reproduces it."""
        f.n = len(self.result.failures) + 1
        out = self.run.path
        batch = Batch(self.arts[f.profile], [f.sequence])
        stem = f"failure-{f.n}"
        batch.write(out / f"{stem}.pcap")
        base = out / f"{stem}.artifact.json"
        self.arts[f.profile].save(base)
        installs = []
        for s in batch.script.script:
            p = out / f"{stem}.v{s.version}.artifact.json"
            s.art.save(p)
            installs.append({"before": s.before, "artifact": p.name, "fail_after": s.fail_after})
        files = {"pcap": f"{stem}.pcap", "artifact": base.name}
        if installs:
            (out / f"{stem}.installs.json").write_text(json.dumps(installs, indent=1))
            files["installs"] = f"{stem}.installs.json"
        final = self.run.final
        if f.diff.target == "oracle":
            f.command = f"invoke fuzz --reproduce {final / (stem + '.json')}"
        else:
            f.command = (f"invoke replay --pcap {final / files['pcap']} --artifact {final / files['artifact']} "
                         f"--target {f.diff.target} --frames as-captured"
                         + (f" --installs {final / files['installs']}" if installs else ""))
        f.files = files
        (out / f"{stem}.json").write_text(json.dumps({
            "difference": dataclasses.asdict(f.diff), "describe": f.diff.describe(), "profile": f.profile,
            "reproduced": f.reproduced, "files": files, "command": f.command,
            "sequence": f.sequence.describe(limit=200)}, indent=1, default=str))
        self.result.failures.append(f)
        log.error("fuzz: %s\n  reproduce: %s", f.describe(), f.command)
        return f

    # ------------------------------------------------------------------ the run

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def batch_on_targets(self, profile: str, batch: Batch, tag: str, names: list[str]) -> None:
        art = self.arts[profile]
        ref = self.observe(TRUTH, art, batch, tag)
        self.count(ref, profile)
        for name in names:
            try:
                got = self.observe(name, art, batch, f"{tag}-{name}")
            except ChimeraError as e:
                diff = Difference(name, TRUTH, "error", "run", None, e.problem.splitlines()[0], None)
                if diff.signature() not in self.failed:
                    self.failed.add(diff.signature())
                    self.save(Failure(0, diff, profile, Sequence(tuple(ev for s in batch.sequences
                                                                        for ev in s.events)), "the run failed"))
                continue
            self.count(got, profile)
            diffs = compare(ref, got)
            for d in diffs:
                log.warning("fuzz round %s: %s", tag, d.describe())
            for d in diffs[:1]:
                if self.cfg.investigate:
                    self.investigate(profile, batch, d)
                elif d.signature() not in self.failed:
                    self.failed.add(d.signature())
                    self.save(Failure(0, d, profile, Sequence(tuple(ev for s in batch.sequences for ev in s.events)),
                                      "not investigated"))

    def corpus(self) -> None:
        prof = "collide" if "collide" in self.cfg.profiles else self.cfg.profiles[0]
        seq = long_flow()
        batch = Batch(self.arts[prof], [seq])
        if self.left() > 30 and self.cfg.oracle:
            diffs = compare(self.observe(TRUTH, self.arts[prof], batch, "corpus"),
                            self.observe(ORACLE, self.arts[prof], batch, "corpus"))
            for d in diffs[:1]:
                self.save(Failure(0, d, prof, seq, "directed corpus (reference vs oracle)"))
        names = [n for n, t in self.targets.items() if self.affordable(t, len(seq))]
        self.batch_on_targets(prof, batch, "corpus", names)
        self.result.sequences += 1
        self.result.frames += len(seq)

    def affordable(self, t: Target, frames: int) -> bool:
        """Whether a replay of ``frames`` fits in a quarter of what is left (at the target's measured rate)."""
        pps = t.replay_rate(self.arts[self.cfg.profiles[0]])
        ok = pps is None or frames / max(pps, 1) < self.left() / 4
        if not ok:
            log.info("fuzz: the directed corpus (%d frames) does not fit %s's share of the budget", frames, t.name)
        return ok

    def go(self) -> FuzzResult:
        for p in self.cfg.profiles:
            self.arts[p] = artifact(p)
            self.result.reachable[p] = {pt.name for pt in cov.POINTS if cov.reachable(self.arts[p], pt)}
        if self.cfg.corpus:
            self.corpus()
        rnd = 0
        while self.left() > 0 and not (self.cfg.stop_at_first and self.result.failures) \
                and not (self.cfg.rounds and rnd >= self.cfg.rounds):
            profile = self.cfg.profiles[rnd % len(self.cfg.profiles)]
            seqs, bad, diffs = self.explore(profile, self.cfg.seed * 1000 + rnd)
            if bad is not None:
                sig = diffs[0].signature()
                if sig not in self.failed:
                    self.failed.add(sig)
                    bad = self.shrink(lambda s: self.oracle_differs(profile, s, sig), bad, budget=400)
                    again = self.oracle_diffs(profile, bad)
                    self.save(Failure(0, again[0] if again else diffs[0], profile, bad,
                                      "shrunk by Hypothesis, then by frame removal (reference vs oracle)"))
            self.result.sequences += len(seqs)
            self.result.frames += sum(len(s) for s in seqs)
            if seqs and self.targets and self.left() > 0:
                self.batch_on_targets(profile, Batch(self.arts[profile], seqs), f"round{rnd}", list(self.targets))
            shutil.rmtree(self.work, ignore_errors=True)
            rnd += 1
            log.info("fuzz: round %d (%s): %d sequences so far, %d differences, %.0f s left", rnd, profile,
                     self.result.sequences, len(self.result.failures), max(0.0, self.left()))
        self.result.rounds = rnd
        return self.result


def open_targets(names: list[str], stack: ExitStack, build: BuildOptions, build_dir: Path | None = None,
                 ) -> dict[str, Target]:
    """The testbed targets asked for, built with ``build`` (coverage counters); a missing one is named."""
    out: dict[str, Target] = {}
    for n in names:
        if n in (TRUTH, ORACLE):
            continue
        cls = target_class(n)
        why = cls.unavailable_reason()
        if why is not None:
            raise ToolMissingError(f"the fuzz target {n} cannot run here: {why}", cls.install_hint())
        if not cls.can(Capability.TRACE_CLOCK):
            raise ConfigError(f"target {n} cannot classify on the trace clock", "fuzz one of: " + ", ".join(
                c.name for c in with_capability(Capability.TRACE_CLOCK)))
        out[n] = stack.enter_context(cls(build=build, build_dir=build_dir))
    return out


def start_testbeds(targets: dict[str, Target], where: Path) -> None:
    """Each testbed up once, its switch logs under ``where`` (the rounds' work directories come and go)."""
    from chimera.targets.testbed import TestbedTarget
    for n, t in targets.items():
        if isinstance(t, TestbedTarget):
            t.up(where / n)


def fuzz(cfg: FuzzConfig, results_root: str | Path = "results") -> FuzzResult:
    """Run the fuzzer; the run directory is results/fuzz/<run-id>/ (see the module docstring)."""
    with ExitStack() as stack, RunDir(results_root, "fuzz", "-".join([TRUTH, *[
            t for t in cfg.targets if t not in (TRUTH, ORACLE)]])) as run:
        targets = open_targets(list(cfg.targets), stack, cfg.build)
        start_testbeds(targets, run.path / "testbed")
        run.manifest.record(kind="fuzz", git=git_state(ROOT), environment=environment(), seed=cfg.seed)
        run.manifest.put("fuzz", FuzzPlan(budget_s=cfg.budget_s, profiles=list(cfg.profiles), batch=cfg.batch,
                                          targets=[TRUTH, ORACLE, *targets],
                                          started=dt.datetime.now().isoformat(timespec="seconds")))
        fz = Fuzzer(cfg, run, targets)
        res = fz.go()
        shutil.rmtree(fz.work, ignore_errors=True)
        table = res.coverage_table()
        table.to_csv(run.path / "coverage.csv", index=False)
        summary = res.coverage_summary()
        run.manifest.put("fuzz_result", FuzzResultSection.model_validate({
            "sequences": res.sequences, "frames": res.frames, "rounds": res.rounds, "differences": len(res.failures),
            "failures": [f.describe() for f in res.failures], "commands": [f.command for f in res.failures],
            "coverage": summary}))
        (run.path / "summary.md").write_text(summary_markdown(res, cfg, summary))
    return res


def summary_markdown(res: FuzzResult, cfg: FuzzConfig, summary: dict[str, Coverage]) -> str:
    lines = [f"# Fuzz run {res.run_dir.name}", "",
             f"seed {cfg.seed}, budget {cfg.budget_s:.0f} s, profiles {', '.join(cfg.profiles)}; "
             f"targets {', '.join(res.targets)}", "",
             f"**{res.sequences} sequences, {res.frames} frames, {res.rounds} rounds: "
             f"{len(res.failures)} differences**", "", "## Coverage of the decision points", "",
             "| target | taken / reachable | missed |", "| --- | --- | --- |"]
    for t, s in summary.items():
        lines.append(f"| {t} | {s.hit}/{s.reachable} ({s.percent:.0f}%) | {', '.join(s.missed) or '-'} |")
    if res.failures:
        lines += ["", "## Differences", ""]
        for f in res.failures:
            lines += [f"- {f.describe()}", f"  - reproduce: `{f.command}`"]
    return "\n".join(lines) + "\n"


def reproduce(failure_json: Path, repeats: int = 3) -> bool:
    """Re-run a saved failure (its pcap, artifact and installs) on the implementation that differed and on the
    reference (and the oracle); logs every difference. True when nothing differs any more (fixed)."""
    from chimera.data.pcap import read_pcap
    from chimera.experiments.replay import load_installs
    try:
        info = json.loads(failure_json.read_text())
        files, target = info["files"], info["difference"]["target"]
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"{failure_json}: not a fuzz failure record ({e})",
                          "give a results/fuzz/<run>/failure-N.json") from None
    d = failure_json.parent
    art = Artifact.load(d / files["artifact"])
    table = read_pcap(d / files["pcap"])
    script = load_installs(d / files["installs"], art) if "installs" in files else ScriptedInstalls(art, [])
    ref = observe_reference(art, table, table.ts_ns, script)
    diffs: list[Difference] = []
    if target in (ORACLE, TRUTH):
        diffs = compare(ref, observe_oracle(art, table, table.ts_ns, script))
    else:
        with ExitStack() as stack:
            t = open_targets([target], stack, BuildOptions(coverage=True))[target]
            for k in range(repeats):
                diffs += compare(ref, observe_target(t, art, table, script, d / "reproduce", f"reproduce-{k}"))
            shutil.rmtree(d / "reproduce", ignore_errors=True)
    for x in diffs:
        log.error("still differs: %s", x.describe())
    if not diffs:
        log.info("%s: no difference now (fixed, or flaky: it was %s)", failure_json.name, info.get("reproduced"))
    return not diffs
