"""The book's own blocks: set-up records, the published-runs index, the fuzzer and the mutation run.

The blocks of a kind live in its package (``chimera/experiments/kinds/<kind>/blocks.py``), those of the
benches in ``chimera/bench/blocks.py``; ``chimera.book.render`` gathers them all. This module imports no kind,
target or bench.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

from chimera.report import fmt
from chimera.report.book import Blocks, Book, paragraph
from chimera.report.fmt import n
from chimera.report.runs import Run
from chimera.report.sections import FuzzResult, MutatePlan, section

BLOCKS = Blocks()


@BLOCKS("fresh-check")
def fresh_check(b: Book) -> str:
    """The newest record, every record before it on the same host (the spread of one host's runs, named where the
    same code ran more than once), and the newest on another host."""
    r = b.runs.need("fresh-check")
    t = r.manifest.timings_s
    cfg = r.manifest.config
    kernel = r.manifest.environment.get("kernel")

    def commit(x: Run) -> str:
        return (x.manifest.git.commit or "")[:7]

    def suite(x: Run) -> str:
        """The test suite's own time within the second command (pytest's summary), where the record has it."""
        s = x.manifest.timings_s.get("tests_2")
        return f" (the test suite {n(s)} s of it)" if s else ""
    text = (f"On this project's 2-core machine (kernel {kernel or 'not recorded'}), "
            f"from a clean clone of `{commit(r)}` ({r.cite()}): the first command took "
            f"{n(t.get('command_1'))} s (Debian packages and Python wheels included), the second "
            f"{n(t.get('command_2'))} s{suite(r)}; the rootfs ({cfg.get('suite')}, {cfg.get('variant')}) took "
            f"{n(t.get('rootfs'))} s.")

    def said(x: Run) -> str:
        xt = x.manifest.timings_s
        return (f"`{commit(x)}` ({x.cite()}): {n(xt.get('command_1'))} s and "
                f"{n(xt.get('command_2'))} s{suite(x)}")
    if not kernel:  # which records share its host is unknown
        return text
    before = b.runs.all("fresh-check", lambda x: x.run_id < r.run_id)
    same = [x for x in before if x.manifest.environment.get("kernel") == kernel]
    if same:
        text += " Earlier records on the same host, oldest first: " + "; ".join(said(x) for x in same) + "."
        runs: dict[str, list[float]] = {}
        for x in [*same, r]:
            if c2 := x.manifest.timings_s.get("command_2"):
                runs.setdefault(commit(x), []).append(c2)
        again = {c: v for c, v in runs.items() if len(v) > 1}
        if again:
            text += (" The same code's second command took " +
                     "; ".join(f"{' and '.join(f'{n(v)} s' for v in vs)} at `{c}`" for c, vs in again.items()) +
                     " on this host: one record is one draw of the host's speed at the time.")
    other = [x for x in before if x.manifest.environment.get("kernel") not in (None, "", kernel)]
    if not other:
        return text
    p = other[-1]
    pt = p.manifest.timings_s
    if pt.get("command_1") and t.get("command_1"):
        text += (f" The newest record on another host (kernel {p.manifest.environment.get('kernel')}), from "
                 f"{said(p)}. The first command (the set-up) took "
                 f"{t['command_1'] / pt['command_1']:.2f} times as long here: the hosts differ in speed, so compare "
                 "the second command across records with that ratio beside it.")
    return text


@BLOCKS("wheels")
def wheels(b: Book) -> str:
    w = pd.read_csv(b.root / "docs" / "wheels.csv", dtype=str)
    per = []
    for py, g in w.groupby("python", sort=True):
        have = int(g["wheel"].fillna("").str.endswith(".whl").sum())
        per.append(f"{have} of {len(g)} have a wheel for Python {py}")
    return (f"`scripts/check-wheels` asked pip, without installing, for a binary wheel of every dependency (the "
            f"pins and all they pull in, at the versions of the lock, `constraints.txt`, which `invoke setup` "
            f"installs under): {'; '.join(per)} (`docs/wheels.csv`).")


@BLOCKS("published-runs")
def published_runs(b: Book) -> str:
    """The newest published run of each experiment, target and dataset, with its wall time and freshness."""
    rows = []
    for r in b.runs.newest_each():
        fr = r.freshness
        rows.append([f"`{r.experiment}`", r.target, Path(r.manifest.dataset_override or "").name or "its own",
                     f"`{r.rel}`", f"{fmt.f(r.minutes(), 1)} min",
                     f"`{fr.commit[:7]}`", "fresh" if fr.fresh else "**stale** (" + fr.mark().split(";")[-1]
                     .strip(" *]") + ")"])
    return fmt.table(["experiment", "target", "data", "newest published run", "wall time", "commit", "code"], rows)


@BLOCKS("fuzz")
def fuzz(b: Book) -> str:
    night, m = b.night()
    out = []
    fz = m.fuzz
    if fz is not None and fz.error is None:
        sub = next((x for x in night.nested() if x.experiment == "fuzz"), None)
        res = section(sub.manifest, "fuzz_result", FuzzResult) if sub else None
        cov = "; ".join(f"{t} {c.hit} of {c.reachable} reachable decision points" +
                        (f" (missed: {', '.join(c.missed)})" if c.missed else "") for t, c in fz.coverage.items())
        out.append(f"The latest night's fuzz budget ({night.cite('runs/fuzz')}): {n(fz.sequences)} sequences" +
                   (f", {n(res.frames)} frames" if res else "") + f", {n(fz.differences)} differences between "
                   f"{fmt.words(fz.targets)}; coverage {cov}.")
    longest = max(b.runs.all("fuzz"), key=lambda r: (section(r.manifest, "fuzz_result", FuzzResult) or
                                                      FuzzResult()).sequences, default=None)
    if longest is not None:
        res = section(longest.manifest, "fuzz_result", FuzzResult) or FuzzResult()
        out.append(f"The longest published fuzz run ({longest.cite()}): {n(res.sequences)} sequences, "
                   f"{n(res.frames)} frames, {n(res.differences)} differences" +
                   (f" ({'; '.join(res.failures)})" if res.failures else "") + ".")
    return " ".join(out)


@BLOCKS("mutation")
def mutation(b: Book) -> str:
    """The score over every mutant any published run drew (each once, its newest outcome, the triage applied),
    then the latest night's sample as drawn: the sample is reported, never the best of them."""
    from chimera.fuzz import triage as tr
    triage = tr.load(b.root / "docs" / "mutants.yaml")
    cum = tr.cumulative(tr.every_outcome(b.runs.base), triage)
    counts = {st: sum(1 for e in triage.values() if e.status == st) for st in ("killed", "equivalent", "untriaged")}
    out = ["Over every mutant the published runs drew (each counted once, its newest outcome; a survivor killed "
           "since by a named test counts as killed; equivalent ones left out): " +
           "; ".join(f"{file} {c['killed']} of {int(c['killed']) + int(c['survived'])} killed ({fmt.pct(c['score'])}, "
                     f"95% interval {fmt.pct(c['lo'])}-{fmt.pct(c['hi'])}; {c['drawn']} drawn, {c['equivalent']} "
                     "equivalent)" for file, c in cum.items()) +
           f". `docs/mutants.yaml` triages {sum(counts.values())} survivors: {counts['killed']} killed since, "
           f"{counts['equivalent']} argued equivalent, {counts['untriaged']} untriaged."]
    out += _same_seed(b)
    night, m = b.night()
    if m.mutate is not None and m.mutate.scores:
        out.append(f"The latest night's sample ({night.cite('runs/mutate')}): " +
                   "; ".join(f"{file} {s.killed + s.timeout} of {s.killed + s.timeout + s.survived} killed"
                             for file, s in m.mutate.scores.items()) + ".")
    return " ".join(out)


def _same_seed(b: Book) -> list[str]:
    """Published mutation runs of one seed and one fixed sample (a count per file, fuzz rounds, no time budget),
    compared mutant by mutant: the evidence that the nightly's mutation verdict is the seed's alone."""
    groups: dict[str, list[Run]] = {}
    for r in b.runs.all("mutate"):
        cfg = r.manifest.get("mutate", MutatePlan) or MutatePlan()
        if cfg.fuzz_rounds and cfg.max_mutants:
            key = repr((r.manifest.seed, cfg.files, cfg.fuzz_rounds, cfg.max_mutants, r.manifest.git.commit))
            groups.setdefault(key, []).append(r)
    out = []
    for runs in groups.values():
        if len(runs) < 2:
            continue
        seen = [dict(zip(x["id"].astype(str), x["status"])) for x in (r.csv("mutants.csv") for r in runs)]
        same = all(s == seen[0] for s in seen[1:])
        out.append(f"The same sample run {len(runs)} times (seed {runs[0].manifest.seed}, "
                   f"{fmt.words([r.cite() for r in runs])}): " + (
                       f"the same outcome for each of its {len(seen[0])} mutants, so the same verdict."
                       if same else "outcomes that differ: the sample is not the seed's alone."))
    return out


@BLOCKS("baselines-failures")
def baselines_failures(b: Book) -> str:
    """What fails before training, in the code's own words: an unknown method, tried when the page is rendered;
    what the data must hold, from the docstring of the function that checks it."""
    import inspect
    from chimera import paths
    from chimera.errors import ConfigError
    from chimera.experiments.load import load_experiment
    from chimera.experiments.stages import dataset as D
    try:
        load_experiment("accuracy", {"baselines": {"methods": ["NoSuchMethod"]}})
        unknown = "it was accepted (a defect: report it)"
    except ConfigError as e:
        unknown = f"refused: {e.problem.replace(str(paths.ROOT) + '/', '')}"
    return (f"An unknown method in `baselines.methods`, tried when this page was rendered, is {unknown}. "
            f"`chimera.experiments.stages.dataset.prepare`: {paragraph(inspect.getdoc(D.prepare))}")


@BLOCKS("yardstick-experiments")
def yardstick_experiments(b: Book) -> str:
    """The experiments that set Chimera against the baselines: every shipped experiment of a multi-dataset kind,
    with its kind's own account of itself and the datasets its YAML names."""
    from chimera.experiments.kinds import KINDS
    from chimera.experiments.load import available, load_experiment
    rows = []
    for name in available():
        cfg = load_experiment(name)
        kind = KINDS[cfg.kind]
        if not kind.multi_dataset:
            continue
        doc = paragraph(importlib.import_module(f"chimera.experiments.kinds.{kind.name}").__doc__)
        data = fmt.words([f"{k} ({next(iter(v.model_dump(exclude_none=True)))})"
                          for k, v in cfg.named_datasets().items()])
        rows.append([f"`{name}`", kind.name, doc, data])
    return ("Rendered from `experiments/*.yaml` and each kind's package docstring:\n\n" +
            fmt.table(["name", "kind", "what", "default data"], rows) +
            "\n\n`--dataset DIR --adapter ciciot2022|peerrush|iscxvpn2016` replaces the list of datasets with one "
            "real dataset.")
