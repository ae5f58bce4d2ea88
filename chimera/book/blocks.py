"""The book's blocks: each renders one stretch of README.md or docs/*.md from runs.

A block selects its runs by what they are (``RunSet.latest``), so a newer published run replaces an older one
everywhere at once; it reports the newest run, never the best one; every number it writes is computed from
the run's tables or manifest and rounded by ``chimera.book.fmt``; every run it reads is cited, with the stale
mark where its code has moved on. Interpretation that depends on the numbers (who wins, where the peak is)
is computed too, so it cannot go stale either.
"""

from __future__ import annotations

import importlib

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from chimera.book import fmt
from chimera.book.fmt import f, n, signed
from chimera.book.runs import PUBLISHED, Run, RunSet, on_dataset, on_target, on_testbed
from chimera.errors import ResultsError
from chimera.experiments.kinds.accuracy.tables import ACCURACY
from chimera.experiments.kinds.cadence.tables import CADENCE
from chimera.experiments.kinds.hyper_dim.tables import HYPER_DIM
from chimera.experiments.kinds.input_scale.tables import INPUT_SCALE
from chimera.experiments.kinds.latency.tables import LATENCY_COST, LATENCY_SUMMARY
from chimera.experiments.kinds.resources.tables import RESOURCES
from chimera.experiments.kinds.roc.tables import ROC
from chimera.experiments.kinds.stability.tables import DIAGNOSIS, DIFFERENCES, DRIFT, STABILITY
from chimera.experiments.kinds.throughput.tables import THROUGHPUT
from chimera.experiments.kinds.variants.tables import ABLATION
from chimera.report.provenance import ROOT
from chimera.bench import BENCHES
from chimera.bench.bmv2files import Bmv2FilesResult
from chimera.bench.bmv2ratio import Bmv2RatioResult
from chimera.bench.scale import GOAL_GIB, GOAL_S, MACHINE_GIB, PROJECT_TO, SUPERLINEAR, ScaleResult
from chimera.bench.results import BenchParams
from chimera.bench.suite import SuiteResult
from chimera.report.sections import FuzzResult, MutatePlan, NightMeasured, section
from chimera.targets.base import Capability
from chimera.targets.registry import TRUTH, by_rank, with_capability


@dataclass
class Book:
    """What blocks render from: a run set (the published runs, or a reproduction's) and the repository."""
    runs: RunSet
    root: Path = ROOT

    @staticmethod
    def published(root: Path = ROOT) -> "Book":
        return Book(RunSet(root / "results" / "published" if root != ROOT else PUBLISHED, root), root)

    def night(self) -> tuple[Run, NightMeasured]:
        r = self.runs.need("nightly")
        m = section(r.manifest, "measured", NightMeasured)
        assert m is not None, f"{r.rel}: a night without its measured section"
        return r, m


BlockFn = Callable[[Book], str]
BLOCKS: dict[str, BlockFn] = {}


def block(name: str) -> Callable[[BlockFn], BlockFn]:
    def reg(fn: BlockFn) -> BlockFn:
        BLOCKS[name] = fn
        return fn
    return reg


CHIMERA = "Chimera (PRF, hybrid, incremental, cascade)"
REAL = {"ciciot2022-sonos": "CICIoT2022 sample (real)", "suricata-zeek-apps": "suricata-zeek-apps (real)"}


def params_of(r: Run) -> BenchParams:
    """A bench run's parameters (defaults where an old run recorded none)."""
    return r.manifest.get("params", BenchParams) or BenchParams()


def not_run_here(r: Run) -> str:
    """The targets a bench could not measure where it ran, each with its reason ("" where it measured them all)."""
    par = params_of(r)
    return fmt.words([f"{k} ({v})" for k, v in par.skipped.items()]) if par.skipped else ""


# ------------------------------------------------------------------------------------------------ set-up
@block("fresh-check")
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


@block("vm-boot")
def vm_boot(b: Book) -> str:
    """The README's commands in a Debian 12 VM on its own kernel: the eBPF program verified by a second kernel."""
    r = b.runs.latest("vm-boot")
    if r is None:
        return "No VM-boot record is published."
    vm, t, cfg = r.manifest.sections.get("vm", {}), r.manifest.timings_s, r.manifest.config
    qs = next((x for x in r.nested() if x.experiment == "quickstart"), None)
    said = ""
    if qs is not None:
        tab = qs.table(ABLATION)
        kernel = qs.manifest.target_detail.get("kernel")
        said = (f" The guest's quickstart ran on `{qs.target}` ({qs.manifest.target_reason or 'asked for'})"
                + (f", its program loaded and verified by the guest's kernel, {kernel}" if kernel else "") + ": "
                f"{n(int(tab['replayed'].sum()))} frames replayed over its {len(tab)} variants, "
                f"{n(int(tab['lost'].sum()))} lost, "
                f"{n(int(tab['reference_mismatches'].sum()))} verdicts different from the reference.")
    return (f"`scripts/vm-boot` ({r.cite()}): Debian {cfg.get('suite')} on its own kernel, "
            f"{vm.get('guest_kernel') or 'unknown'}, booted with qemu ({cfg.get('accel')}"
            + (f", emulated CPU {cfg['tcg_cpu']}" if cfg.get('accel') == "tcg" and cfg.get('tcg_cpu') else "")
            + f", {cfg.get('cpus')} vCPUs; "
            f"this machine runs {r.manifest.environment.get('host_kernel')}); the first command took "
            f"{n(t.get('command_1'))} s (exit {vm.get('exit_1') or '-'})"
            + (f", the second {n(t.get('command_2'))} s (exit {vm.get('exit_2') or '-'})" if t.get('command_2') else
               ", the second was not run") + "." + said)


@block("suite-here")
def suite_here(b: Book) -> str:
    """The test command timed on this machine with every tool it has (BMv2 included where built)."""
    r = b.runs.latest("bench-suite")
    if r is None:
        return "No suite bench is published (`invoke bench --what suite` times the test command here)."
    res = r.manifest.get("result", SuiteResult)
    assert res is not None, f"{r.rel}: a suite bench without its result"
    skips = r.csv("skips.csv")
    absent = not_run_here(r)
    return (f"On the same machine with every tool it has (targets that could run: {fmt.words(res.targets)}), "
            f"`{res.command}` took {n(res.wall_s)} s at `{(r.manifest.git.commit or '')[:7]}` ({r.cite()}): "
            f"{n(res.passed)} passed, {n(res.skipped)} skipped" + (" (each with its reason in `skips.csv`)"
                                                                    if len(skips) else "")
            + "." + (f" Absent here: {absent}." if absent else ""))


@block("wheels")
def wheels(b: Book) -> str:
    w = pd.read_csv(b.root / "docs" / "wheels.csv", dtype=str)
    per = []
    for py, g in w.groupby("python", sort=True):
        have = int(g["wheel"].fillna("").str.endswith(".whl").sum())
        per.append(f"{have} of {len(g)} have a wheel for Python {py}")
    return (f"`scripts/check-wheels` asked pip, without installing, for a binary wheel of every dependency (the "
            f"pins and all they pull in, at the versions installed here): {'; '.join(per)} (`docs/wheels.csv`).")


# ------------------------------------------------------------------------------------------------ runs index
@block("published-runs")
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


# ------------------------------------------------------------------------------------------------ ablation
def _ablation(r: Run) -> pd.DataFrame:
    return r.table(ABLATION).set_index("variant")


@block("ablation")
def ablation(b: Book) -> str:
    testbeds = with_capability(Capability.TESTBED)  # in registry order: the first with a run leads
    runs = [(c, r) for c in testbeds if (r := b.runs.latest("ablation", on_target(c.name))) is not None]
    if not runs:
        raise ResultsError(f"no published run of ablation on a testbed under {b.runs.base}",
                           "run it and `invoke publish` the run (or `invoke reproduce` for this machine)")
    (lead, r), others = runs[0], runs[1:]
    d = _ablation(r)
    ch = d.loc[CHIMERA]
    sw = d[d["executed_on"].astype(str) == r.target]
    rows = []
    for v, x in d.iterrows():
        on_switch = str(x["executed_on"]) == r.target
        rows.append([str(v), "switch" if on_switch else ("software host †" if bool(x["software_only"]) else
                                                           "reference only"),
                     f(x["macro_f1"]), signed(x["macro_f1"] - ch["macro_f1"]),
                     n(x["bits_per_flow"]) if x["bits_per_flow"] == x["bits_per_flow"] else "—",
                     n(x["table_entries"]) if x["table_entries"] == x["table_entries"] else "—",
                     f(x["latency_switch_p50_us"], 3), f(x["latency_switch_p99_us"], 3),
                     n(x["switch_pps"]) if x["switch_pps"] == x["switch_pps"] else "—",
                     n(x["lost"]) if x["lost"] == x["lost"] else "—",
                     n(x["reference_mismatches"]) if x["reference_mismatches"] == x["reference_mismatches"] else "—"])
    above = [str(v) for v, x in d.iterrows() if x["macro_f1"] > ch["macro_f1"]]
    out = [f"The ablation on the {r.target} testbed, synthetic ciciot profile, {ch['clock']} clock ({r.cite()}): "
           f"Chimera {f(ch['macro_f1'])}; on the {len(sw)} rows that run on the switch, "
           f"{n(sw['lost'].sum())} packets lost and {n(sw['reference_mismatches'].sum())} verdicts and "
           f"{n(sw['register_mismatches'].sum())} registers different from the reference. "
           f"Rows above Chimera: {fmt.words(above)}. Latency is the switch's own (ingress to egress) under the "
           "run's pace, the rate what the switch classified per second; † rows run on the software classifier "
           "host, whose latency includes the detour.", "",
           fmt.table(["row", "runs on", "F1", "Δ Chimera", "bits/flow", "entries", "switch p50 µs", "p99 µs",
                      "pps", "lost", "≠ reference"], rows)]
    out += ["", dagger_rows(b, r, d)]
    notes = [(str(v), str(x["row_note"])) for v, x in d.iterrows() if isinstance(x["row_note"], str) and x["row_note"]]
    if notes:
        out += ["", "What the rows say of themselves (`row_note`):", ""] + [f"- {v}: {t}" for v, t in notes]
    for other, bm in others:
        db = _ablation(bm)
        both = [v for v in d.index if v in db.index and str(d.loc[v, "executed_on"]) == lead.name
                and str(db.loc[v, "executed_on"]) == other.name]
        same = [v for v in both if db.loc[v, "macro_f1"] == d.loc[v, "macro_f1"]]
        sw_b = db[db["executed_on"].astype(str) == other.name]
        dag = [(str(v), f(db.loc[v, "macro_f1"]), f(d.loc[v, "macro_f1"])) for v in db.index
               if bool(db.loc[v, "software_only"]) and v in d.index]
        out += ["", f"The same ablation on {other.title} ({bm.cite()}): of the {len(both)} rows that run on "
                f"{other.program} there and on {lead.program} here, {len(same)} score exactly as on {lead.title}; "
                f"on {other.title}'s switch rows "
                f"{n(sw_b['lost'].sum())} lost, {n(sw_b['reference_mismatches'].sum())} verdicts and "
                f"{n(sw_b['register_mismatches'].sum())} registers different from the reference. The † rows: " +
                fmt.words([f"{v} {x} on {other.title}'s run against {y} on {lead.title}'s" for v, x, y in dag]) +
                (" (that run's software host classified on its own clock)" if not _on_trace(db) else "") + "."]
    return "\n".join(out)


def _on_trace(d: pd.DataFrame) -> bool:
    """The run's † rows were classified on the trace clock: equal to the offline float model on every packet
    (the software host reads the trace-time shim since the fix; before it, on its own clock, they were not)."""
    dag = d[d["software_only"].astype(bool)]
    return "offline_agreement" in d and len(dag) > 0 and bool((dag["offline_agreement"] == 1.0).all())


def dagger_rows(b: Book, r: Run, d: pd.DataFrame) -> str:
    """What the † rows are, and whether they repeat: every other published run of the ablation on the same
    target made from the same result-determining code, row by row."""
    from chimera.report.provenance import fingerprint_at
    dag = d[d["software_only"].astype(bool)]
    if dag.empty:
        return ""
    if _on_trace(d):
        text = ("The † rows ran on the software classifier host on the trace clock: their verdicts equal the "
                "offline float model's on every packet (offline agreement 1).")
    else:
        text = ("The † rows ran on the software classifier host on its own clock (offline agreement " +
                fmt.words([f"{v} {f(x['offline_agreement'])}" for v, x in dag.iterrows()]) +
                "), so they may move between runs.")
    same = [p for p in b.runs.all("ablation", on_target(r.target)) if p.run_id != r.run_id and
            fingerprint_at(p.freshness.commit, b.root, r.scope) == fingerprint_at(r.freshness.commit, b.root, r.scope)]
    if not same:
        return text
    pairs = [(p, _ablation(p)) for p in same]
    diff = [f"{v} {f(dp.loc[v, 'macro_f1'])} in {p.cite()}" for p, dp in pairs for v in dag.index
            if v in dp.index and dp.loc[v, "macro_f1"] != d.loc[v, "macro_f1"]]
    return text + (f" Made again from the same code ({fmt.words([p.cite() for p, _ in pairs])}): " +
                   ("every † row scored the same, bit for bit." if not diff else
                    f"the † rows differ: {fmt.words(diff)}."))


# ------------------------------------------------------------------------------------------------ Table 1
def accuracy_runs(b: Book) -> list[tuple[str, Run]]:
    out = []
    syn = b.runs.latest("accuracy", on_dataset(None))
    if syn is not None:
        out.append(("", syn))
    for frag in REAL:
        r = b.runs.latest("accuracy", on_dataset(frag))
        if r is not None:
            out.append((frag, r))
    return out


def accuracy_frame(b: Book) -> tuple[pd.DataFrame, list[Run]]:
    """One F1 column per dataset (synthetic profiles by name, real sets by their label), rows = methods."""
    cols: dict[str, pd.Series] = {}
    runs = []
    for frag, r in accuracy_runs(b):
        runs.append(r)
        a = r.table(ACCURACY)
        a = a[a["task"] == "classification"] if "task" in a else a
        for ds, g in a.groupby("dataset", sort=False):
            label = REAL[frag] if frag else f"{ds} (synthetic)"
            cols[label] = g.set_index("method")["f1"]
    return pd.DataFrame(cols), runs


@block("accuracy")
def accuracy(b: Book) -> str:
    df, runs = accuracy_frame(b)
    first = runs[0].table(ACCURACY).drop_duplicates("method").set_index("method")
    soft = {m: str(first.loc[m, "where"]) == "software" for m in df.index if m in first.index}
    rows = [[m + (" †" if soft.get(m) else "")] + [f(df.loc[m, c]) for c in df.columns] for m in df.index]
    tuned = [r for r in runs if "configs_tried" in r.table(ACCURACY)]
    budget = ("every method, Chimera and the yardsticks included, is tuned under one budget (docs/baselines.md: "
              "the same number of configurations chosen on validation, balanced class weights, early stopping by "
              "patience; each run's `## Tuning` table shows what was chosen and why training stopped)"
              if len(tuned) == len(runs) else
              "**runs made before the equal budget** (" + fmt.words([r.cite() for r in runs if r not in tuned]) +
              "): there the methods were not tuned alike (Leo on 4 packets at depth 8, the neural models at one "
              "learning rate under a binding epoch cap, the yardsticks unweighted)")
    joined = [r for r in runs if "joined" in r.manifest.sections]
    how = ("; " + fmt.words([f"`{r.run_id}`" for r in joined]) + ": its datasets ran as parallel tasks of one "
           "sweep, joined into the run a plain run writes (`invoke sweep --join`)" if joined else "")
    out = [f"Every method reads Chimera's per-packet inputs, on the same split (seed 1, a development seed), "
           f"reference target; {budget}. Chimera's column is the compiled integer pipeline, bit-exact with eBPF "
           f"and BMv2; † runs in software only. Runs: {fmt.words([r.cite() for r in runs])}{how}. The real sets "
           "are small (their README).", "", fmt.table(["method", *df.columns], rows), ""]
    lines = []
    for c in df.columns:
        ch = df.loc["Chimera", c]
        above = [(m, df.loc[m, c]) for m in df.index if m != "Chimera" and df.loc[m, c] > ch]
        ties = [m for m in df.index if m != "Chimera" and df.loc[m, c] == ch]
        if above or ties:
            lines.append(f"- {c}: " + "; ".join(
                ([f"above Chimera ({f(ch)}): " + fmt.words([f"{m} {f(v)} ({signed(v - ch)})" for m, v in above])]
                 if above else []) + ([f"tied with Chimera at {f(ch)}: {fmt.words(ties)}"] if ties else [])))
        else:
            lines.append(f"- {c}: Chimera ({f(ch)}) is above every other method.")
    return "\n".join(out + ["Where Chimera does not win, and where it does:", "", *lines])


# ------------------------------------------------------------------------------------------------ window
@block("input-scale")
def input_scale(b: Book) -> str:
    r = b.runs.need("input_scale")
    d = r.table(INPUT_SCALE)
    ch = d[d["method"] == "Chimera"].sort_values("window")
    others = d[d["method"] != "Chimera"]
    best = others.loc[others.groupby("window")["f1"].idxmax()].sort_values("window")
    peak = ch.loc[ch["f1"].idxmax()]
    return (f"The window sweep on the ciciot profile, every method under the same budget ({r.cite()}): Chimera "
            f"scores {fmt.words([f(x) for x in ch['f1']])} at L = {fmt.words([str(int(w)) for w in ch['window']])} "
            f"(per-flow state {n(ch['per_flow_bits'].min())} to {n(ch['per_flow_bits'].max())} bits: "
            f"{fmt.words(sorted(set(ch['per_flow_source'].astype(str))))}); the best other method at each window: " +
            fmt.words([f"{m} {f(x)}" for m, x in zip(best['method'], best['f1'])]) +
            f". Chimera peaks at L = {int(peak['window'])} ({f(peak['f1'])}).")


# ------------------------------------------------------------------------------------------------ stability
@block("stability")
def stability(b: Book) -> str:
    """What the current code measures on the drifting day (the freshest run, a night's included), and the
    newest testbed run's conformance beside it."""
    r = b.runs.freshest("stability24h", on_dataset(None))
    if r is None:
        r = b.runs.need("stability24h")
    s = r.table(STABILITY).set_index("configuration")
    c = s.loc["Chimera"]
    k = int(c["seeds"]) if "seeds" in c and pd.notna(c["seeds"]) else 1
    size = (n(c['replayed'] / k) + " packets" if "replayed" in c and pd.notna(c["replayed"]) else
            n(c['new_flows']) + " flows")
    out = [f"The drifting day, uncompressed under the {r.manifest.clock} clock on the {r.target} target ({r.cite()}): "
           f"{size}{f', each configuration run with {k} training seeds' if k > 1 else ''}. Mean F1 over the day"
           f"{' (the mean over seeds)' if k > 1 else ''}: " +
           fmt.words([f"{k} {f(v)}" for k, v in s["f1_mean"].items()]) +
           f"; first to last bin, Chimera {f(c['f1_first'])} to {f(c['f1_last'])}. The slow loop's own effect, "
           f"Chimera − Fast-Only: {signed(c['diff_vs_fast_only'])} ({_interval_words(r)} "
           f"{fmt.interval(c['diff_vs_fast_only_lo'], c['diff_vs_fast_only_hi'])}); both timescales together, "
           f"Chimera − Static-Map: {signed(c['diff_vs_static_map'])} "
           f"{fmt.interval(c['diff_vs_static_map_lo'], c['diff_vs_static_map_hi'])}. " + _verdict_slow(c)]
    tb = b.runs.latest("stability24h", lambda x: on_testbed(x) and not x.manifest.dataset_override)
    if tb is not None and tb is not r:
        t = tb.table(STABILITY).set_index("configuration")
        tk = int(t.loc["Chimera", "seeds"]) if "seeds" in t and pd.notna(t.loc["Chimera", "seeds"]) else 1
        out.append(f"The newest testbed run of the day ({tb.target}, {tb.cite()}): {n(t.loc['Chimera', 'replayed'] / tk)} "
                   f"packets per replay, {len(t) * tk} replays ({len(t)} configurations x {tk} seeds), "
                   f"{n(t['lost'].sum())} lost and {n(t['reference_mismatches'].sum())} verdicts different "
                   f"from the reference; its Chimera − Fast-Only {signed(t.loc['Chimera', 'diff_vs_fast_only'])}, "
                   f"Chimera − Static-Map {signed(t.loc['Chimera', 'diff_vs_static_map'])}.")
    elif on_testbed(r):
        out.append(f"{n(s['lost'].sum())} lost and {n(s['reference_mismatches'].sum())} verdicts different from "
                   "the reference.")
    return " ".join(out)


def _interval_words(r: Run) -> str:
    """How a stability run's intervals were made (seeds and blocks, or bins alone in older runs)."""
    if (r.path / DIFFERENCES.name).is_file():
        d = r.table(DIFFERENCES)
        k = int(d["seeds"].max()) if len(d) else 1
        blocks = sorted({float(x) for x in d["block_hours"]})
        chosen = "block_chosen" in d and bool(d["block_chosen"].all())
        return (f"95% interval over {k} training seed{'s' * (k > 1)} and "
                f"{'/'.join(f'{x:g}' for x in blocks)}-hour blocks of time bins"
                f"{' (chosen from each series by Politis and White’s rule)' if chosen else ''}, paired")
    return "95% interval paired by time bin"


def _drift_words(r: Run) -> str:
    if not (r.path / DRIFT.name).is_file():
        return ""
    d = r.table(DRIFT)
    st = r.view.config.get("stability") or {}
    last = d[d["t_mid_h"] >= float(st.get("day_hours", 24)) - float(st.get("last_hours", 6))]
    floor = d[d["in_training_hours"].astype(bool)]
    return ("drift in the last hours against the training hours (Jensen-Shannon, bits; the training hours' own "
            "bins in brackets): " + fmt.words([f"{k} {float(last[k].mean()):.3f} ({float(floor[k].mean()):.3f})"
                                               for k in ("covariate", "label", "concept")]))


def _pairs(r: Run, pairs: list[tuple[str, str]]) -> str:
    d = r.table(DIFFERENCES).set_index(["a", "b"])
    return fmt.words([f"{a} − {b} {signed(d.loc[(a, b), 'diff'])} {fmt.interval(d.loc[(a, b), 'lo'], d.loc[(a, b), 'hi'])}"
                      for a, b in pairs if (a, b) in d.index])


@block("drift")
def drift(b: Book) -> str:
    """The adaptations on the two days: the drifting day (covariate, concept and label shift) and the day with
    label shift only; each with its drift decomposition and the paired differences the paper's claim turns on."""
    out = []
    pairs = [("Fast-Only", "Static-Map"), ("Re-cluster-Only", "Static-Map"), ("Prior-Only", "Static-Map"),
             ("Chimera+Prior", "Chimera"), ("Oracle", "Static-Map")]
    for exp, what in (("stability24h", "The drifting day"), ("stability_labelshift", "The day with label shift only")):
        r = b.runs.freshest(exp, on_dataset(None))
        if r is None or not (r.path / DIFFERENCES.name).is_file():  # older runs: the stability block cites them
            continue
        s = r.table(STABILITY).set_index("configuration")
        out.append(f"{what} ({r.target}, {r.cite()}; {_interval_words(r)}): {_drift_words(r)}. Mean F1 after the "
                   "training hours: " + fmt.words([f"{k} {f(v)}" for k, v in s["f1_mean"].items()]) +
                   f". Paired differences: {_pairs(r, pairs)}.")
    if not out:
        raise ResultsError("no stability run with paired differences (differences.csv) is published",
                           "run invoke run-experiment --name stability24h and --name stability_labelshift, then "
                           "invoke publish")
    return " ".join(out)


#: the days of the drift section: (experiment, what the day is, the drift it carries)
DAYS = (("stability24h", "the drifting day", "concept, covariate and label shift"),
        ("stability_labelshift", "the day with label shift only", "label shift"))


def difference_words(a: str, b: str, diff: float, lo: float, hi: float) -> str:
    """One comparison in words no wider than its interval: measurably above or below where the interval excludes
    zero, else "no measurable difference"."""
    where = f"{signed(diff)} {fmt.interval(lo, hi)}"
    if lo > 0:
        return f"{a} measurably above {b} ({where})"
    if hi < 0:
        return f"{a} measurably below {b} ({where})"
    return f"no measurable difference between {a} and {b} ({where})"


@block("drift-verdicts")
def drift_verdicts(b: Book) -> str:
    """The drift section's conclusions, one sentence per comparison and day, from each day's paired intervals
    (differences.csv): what a reader may say, and nothing wider. Each interval is a 95% one on its own; the
    comparisons of a day are reported as exploratory (no correction for multiplicity), which the text says."""
    out = []
    for exp, what, kind in DAYS:
        r = b.runs.freshest(exp, on_dataset(None))
        if r is None or not (r.path / DIFFERENCES.name).is_file():
            continue
        d = r.table(DIFFERENCES)
        lines = [f"- **{what[0].upper() + what[1:]}** ({kind}; {r.target}, {r.cite()}; {_interval_words(r)}; "
                 f"{len(d)} comparisons, each interval at 95% on its own: exploratory, not corrected for "
                 "multiplicity):"]
        lines += [f"  - {x['measures']}: {difference_words(x['a'], x['b'], x['diff'], x['lo'], x['hi'])}."
                  for _, x in d.iterrows()]
        if exp == "stability24h" and (r.path / DIAGNOSIS.name).is_file():
            g = r.table(DIAGNOSIS)
            lines.append("  - the diagnosis runs (the slow loop's parts switched off one at a time, on the reference, "
                         "the first training seed only: points without intervals, not verdicts), mean F1 after the "
                         "training hours: " + fmt.words([f"{x['slow_loop']} {f(x['f1_mean'])} ({n(x['installs'])} "
                                                         f"installs)" for _, x in g.iterrows()]) + ".")
        out.append("\n".join(lines))
    if not out:
        raise ResultsError("no stability run with paired differences (differences.csv) is published",
                           "run invoke run-experiment --name stability24h and --name stability_labelshift, then "
                           "invoke publish")
    return "\n".join(out)


def _verdict_slow(c: pd.Series) -> str:
    lo, hi = c["diff_vs_fast_only_lo"], c["diff_vs_fast_only_hi"]
    if hi < 0:
        return "The interval is below zero: on this day the slow loop measurably hurts."
    if lo > 0:
        return "The interval is above zero: on this day the slow loop measurably helps."
    return "The interval holds zero: no effect of the slow loop is measured on this day."


@block("cadence")
def cadence(b: Book) -> str:
    r = b.runs.need("hyper_cadence")
    d = r.table(CADENCE)
    labels = d["label"].value_counts().to_dict()
    vs = ""
    if "diff_vs_static_map_lo" in d:
        up, down = int((d["diff_vs_static_map_lo"] > 0).sum()), int((d["diff_vs_static_map_hi"] < 0).sum())
        vs = (f" Against Static-Map of the same seed ({int(d['seeds'].max())} training seeds, intervals over seeds "
              f"and blocks of bins): {up} of {len(d)} cells above it, {down} below, {len(d) - up - down} no "
              f"difference shown; the differences run from {signed(d['diff_vs_static_map'].min())} to "
              f"{signed(d['diff_vs_static_map'].max())}.")
    return (f"The cadence grid, {d['eta'].nunique()} values of eta x {d['t_cp_s'].nunique()} of T_cp on the same "
            f"day ({r.cite()}): stability labels " + fmt.words([f"{v} {k}" for k, v in labels.items()]) +
            f"; mean F1 after training between {f(d['f1_mean'].min())} and {f(d['f1_mean'].max())}.{vs} The install "
            "time in the paper's condition is the configured one (simulated) on the reference.")


@block("roc-hyper-dim")
def roc_hyper_dim(b: Book) -> str:
    r = b.runs.need("roc")
    d = r.table(ROC)
    dets = list(dict.fromkeys(d["detector"]))
    sets = list(dict.fromkeys(d["dataset"]))
    parts = [f"{det}: " + " / ".join(f(d[(d.detector == det) & (d.dataset == s)]["auc"].iloc[0]) for s in sets)
             for det in dets]
    h = b.runs.need("hyper_dim")
    g = h.table(HYPER_DIM)

    def cell(x: pd.Series) -> str:
        return f"{f(x['f1'])} (m={int(x['m'])}, d_v={int(x['d_v'])}, {int(x['bits'])} bits)"
    spans = [f"on {ds}: F1 from {cell(d.loc[d['f1'].idxmin()])} to {cell(d.loc[d['f1'].idxmax()])}"
             for ds, d in g.groupby("dataset", sort=False)]
    return (f"The benign-trained detectors ({r.cite()}), AUC on {' / '.join(sets)}: " + "; ".join(parts) +
            f". The m x d_v x bits grid ({h.cite()}), each dataset's lowest and highest cell: " + "; ".join(spans)
            + ".")


@block("resources")
def resources(b: Book) -> str:
    r = b.runs.need("resources")
    d = r.table(RESOURCES)
    ch = d[d["method"] == "Chimera"]
    return (f"State as allocated ({r.cite()}): the same Chimera model takes " +
            fmt.words([f"{n(x['per_flow_bits'])} bits per flow in the {x['where']} (budget ratio "
                       f"{f(x['budget_ratio'])} of {n(x['budget_bits'])} bits)" for _, x in ch.iterrows()]) + ".")


#: a path keeps up with its offered load when it classifies at least this share of it
SUSTAINED = 0.9


@block("throughput-latency")
def throughput_latency(b: Book) -> str:
    t = b.runs.need("throughput")
    d = t.table(THROUGHPUT)
    sw = d[d["path"].str.startswith("Chimera")]
    bare = d[d["path"] == "bare forwarding"]
    host = d[d["path"].str.contains("software")]
    lat = b.runs.need("latency")
    ls = lat.table(LATENCY_SUMMARY)
    cost = lat.table(LATENCY_COST)
    med = ls.groupby(["program", "load", "pps"], sort=False)[["switch_p50_us", "switch_p99_us", "host_p50_us"]] \
        .median().reset_index()
    sws, hs = med[med["program"] == "chimera"], med[med["program"] == "software host"]
    reps = int(ls["repeat"].nunique())
    out = (f"On the {t.target} testbed under the switch clock ({t.cite()}, {lat.cite()}): at top speed the Chimera "
           f"path delivers {n(sw['delivered_pps'].min())} to {n(sw['delivered_pps'].max())} pps against "
           f"{n(bare['delivered_pps'].min())} to {n(bare['delivered_pps'].max())} pps for bare forwarding on the same "
           f"path (the sender shares the cores, so neither is the switch's limit), with {n(sw['lost'].sum())} "
           f"packets lost and {n(sw['reference_mismatches'].sum())} verdicts different from the reference; the "
           f"software classifier host † delivers {n(host['delivered_pps'].min())} to {n(host['delivered_pps'].max())}"
           f" pps. Over {reps} interleaved repeats (medians), in-switch latency p50 ")
    out += fmt.words([f"{f(x['switch_p50_us'])} µs at {n(x['pps'])} pps (p99 {f(x['switch_p99_us'])})"
                      for _, x in sws.iterrows()])
    out += ("; host to host " + fmt.words([f"{f(x['host_p50_us'])} µs" for _, x in sws.iterrows()]) +
            ". The software classifier host † takes " +
            fmt.words([f"{f(x['switch_p50_us'])} µs p50 at {n(x['pps'])} pps" for _, x in hs.iterrows()]) +
            " to classify (its own time per packet, which the ledger's \"far slower\" reads).")
    over = ls[(ls["program"] == "software host") & (ls["switch_pps"] < SUSTAINED * ls["pps"])]
    if len(over):
        g = over.groupby("pps")
        out += (" Where it cannot keep up, its host-to-host latency is a queue's, not a classifier's: " +
                fmt.words([f"offered {n(pps)} pps, it classifies {n(x['switch_pps'].median())} pps (median of "
                           f"{len(x)} repeats) and its host-to-host p50 is {f(x['host_p50_us'].median() / 1e3, 0)} ms"
                           for pps, x in g]) + ".")
    added = cost[(cost["a"] == "chimera") & (cost["measure"] == "host_p50_us") & (cost["statistic"] == "difference")]
    if len(added):
        out += (" What the pipeline adds to the host-to-host p50 (mean of per-repeat differences, 95% bootstrap "
                "interval over repeats): " + fmt.words([
                    f"{f(x['estimate'], 3)} µs [{f(x['lo'], 3)}, {f(x['hi'], 3)}] over {x['b']} at {n(x['pps'])} pps"
                    for _, x in added.iterrows()]) + ".")
    return out


# ------------------------------------------------------------------------------------------------ fidelity
def fidelity_summary(r: Run) -> pd.DataFrame:
    from chimera.bench.fidelity import summary_sets
    return summary_sets(r.csv("summary.csv"))


def fidelity_runs(b: Book) -> list[tuple[Run, list[str]]]:
    """The fidelity runs the book shows, newest first, each with the kinds of data it is the newest run of: a run
    made for some kinds only (``--only``) leaves the others to the newest run that has them. Nothing is dropped
    from the page, and every row names its run."""
    out: list[tuple[Run, list[str]]] = []
    seen: set[str] = set()
    for r in reversed(b.runs.all("bench-fidelity")):
        kinds = [d for d in dict.fromkeys(r.csv("fidelity.csv")["data"]) if d not in seen]
        if kinds:
            out.append((r, kinds))
            seen.update(kinds)
    if not out:
        raise ResultsError(f"no published run of bench-fidelity under {b.runs.base}",
                           "run `invoke bench --what fidelity` and `invoke publish` the run")
    return out


#: the causes the fidelity bench measures, each a paired per-seed difference of two of its columns: (what it is,
#: the column it starts from, the column it is compared with)
CAUSES = (("quantization: Chimera's float model − its integer switch model", "chimera_float_f1", "chimera_int_f1"),
          ("the tokens, for a tree: a tree on exact inputs − a tree on Chimera's tokens", "tree_f1",
           "tree_quantized_f1"),
          ("the model: a tree on Chimera's tokens − Chimera (integer)", "tree_quantized_f1", "chimera_int_f1"),
          ("the window: Chimera − Chimera with a window of 1", "chimera_int_f1", "chimera_w1_f1"),
          ("ports, for a tree: with − without", "tree_f1", "tree_without_ports_f1"),
          ("packet lengths, for a tree: with − without", "tree_f1", "tree_without_lengths_f1"))


@block("fidelity-causes")
def fidelity_causes(b: Book) -> str:
    """Where Chimera's F1 goes, as the fidelity bench measures it on the held-out seeds: each cause a paired
    per-seed difference with its 95% t-interval, per kind of data; "no measurable difference" where the interval
    holds 0. No cause is written by hand (issue 53: one was, and its own table contradicted it)."""
    from chimera.book.rules import paired_interval
    rows, cited = [], []
    for r, kinds in fidelity_runs(b):
        t = r.csv("fidelity.csv")
        t = t[t["data"].isin(kinds) & (t["seed_set"] == "held-out")]
        if len(t):
            cited.append(r.cite())
        for data, g in t.groupby("data", sort=False):
            for what, a, c in CAUSES:
                if a not in g or c not in g:
                    continue
                d = (g[a] - g[c]).dropna()
                if len(d) < 2:
                    continue
                mean, lo, hi = paired_interval(list(d))
                said = "no measurable difference" if lo <= 0 <= hi else \
                    ("the first higher" if mean > 0 else "the second higher")
                rows.append([data, str(len(d)), what, f"{signed(mean, 3)} [{signed(lo, 3)}, {signed(hi, 3)}]", said])
    return ("On the held-out seeds (the development seeds are the ones design decisions looked at), from " +
            fmt.words(cited) + ". Each row: a paired difference of two of the bench's columns, per seed, then its "
            "mean with a 95% t-interval over the seeds: \"no measurable difference\" where the interval holds 0. A "
            "cause is stated only as such a row. The real sets are small, see their README.\n\n" +
            fmt.table(["data", "seeds", "cause (first − second)", "mean [95% interval]", "reading"], rows))


@block("fidelity")
def fidelity(b: Book) -> str:
    """Per kind of data and seed set (development, held-out): Chimera against the tuned yardsticks, each kind
    from the newest run that has it."""
    from chimera.bench.fidelity import groups, pm
    rows = []
    for r, kinds in fidelity_runs(b):
        s = fidelity_summary(r)
        t = r.csv("fidelity.csv")
        tuned = "yes" if "chimera_chosen" in t else "**no** (before the budget)"
        for data, sset, g in groups(t[t["data"].isin(kinds)]):
            x = s[(s.data == data) & (s.seed_set == sset)].set_index("measure")["mean"]
            met = int(g["goal_met"].sum())
            ch, tr = float(x["chimera_int_f1"]), float(x["tree_f1"])
            goal = "met" if met == len(g) else f"**not met** on {len(g) - met} of {len(g)} seeds" + (
                f": {f(tr - ch, 3)} below the tree" if ch < tr else "")
            rows.append([data, f"{sset} ({', '.join(str(int(v)) for v in g.seed)})",
                         *(pm(s, data, m, sset) for m in ("chimera_int_f1", "tree_f1", "forest_f1")), goal, tuned,
                         r.cite()])
    return ("Mean ± 95% t-interval over each set's seeds; development seeds are the ones design decisions looked "
            "at, held-out seeds the final numbers; macro-F1 on test packets; each kind of data from the newest "
            "published run that has it; equal budget: Chimera, tree and forest tuned alike (docs/baselines.md). "
            "The real sets are small, see their README.\n\n" +
            fmt.table(["data", "seed set (seeds)", "Chimera (in-switch)", "tree", "forest", "goal", "equal budget",
                       "run"], rows))


@block("fidelity-history")
def fidelity_history(b: Book) -> str:
    """Every published fidelity run, oldest first: Chimera's mean per kind of data (what each change did,
    reported whole, not just the steps that helped)."""
    runs = b.runs.all("bench-fidelity")
    cols: dict[str, dict[str, str]] = {}
    for r in runs:
        s = fidelity_summary(r)
        for sset, g in s[s.measure == "chimera_int_f1"].groupby("seed_set", sort=False):
            cols[f"`{r.run_id}` ({r.freshness.commit[:7]}, {sset})"] = {
                d: f(x, 3) for d, x in g.set_index("data")["mean"].items()}
    df = pd.DataFrame(cols)
    rows = [[str(d)] + [str(df.loc[d, c]) if isinstance(df.loc[d, c], str) else "—" for c in df.columns]
            for d in df.index]
    return ("Chimera (in-switch) mean F1 in every published fidelity run, oldest first (each run is in "
            "`results/published/bench-fidelity/`):\n\n" + fmt.table(["data", *df.columns], rows))


@block("fidelity-tables")
def fidelity_tables(b: Book) -> str:
    """docs/fidelity.md's tables: each contributing run's, for the kinds of data it is the newest run of."""
    from chimera.bench.fidelity import tables_markdown
    parts = []
    for r, kinds in fidelity_runs(b):
        parts.append(tables_markdown(r.path, r.rel, kinds) +
                     (f"\n{r.freshness.mark().strip()}\n" if not r.freshness.fresh else ""))
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------------------------ benches
@block("benches")
def benches(b: Book) -> str:
    night, m = b.night()
    rows = []
    for k, s in m.benches.items():
        rec = next((x for x in BENCHES.values() if x.metric == k), None)
        name, what, unit, goal = (rec.name, rec.measures, rec.unit, rec.goal) if rec is not None else (k, k, "", "")
        rows.append([f"`{name}`", what, f"{f(s.median, 4)}{unit}", f(s.iqr, 4), n(s.n), goal])
    return (f"From the latest published night {night.cite()} (medians, IQR; its `manifest.json`, section "
            "`measured.benches`):\n\n" + fmt.table(["`invoke bench --what`", "measures", "median", "IQR", "n",
                                                     "goal"], rows))


def _zero_loss_words(x: pd.Series) -> str:
    """One target's row of zeroloss.csv in words: the spread over repeated ladders, or (runs before them) the
    one ladder's reading."""
    if "words" in x and isinstance(x["words"], str):
        return x["words"]
    return (f"{'at least ' if bool(x['lower_bound']) else ''}{n(x['max_zero_loss_pps'])} pps (one ladder)")


@block("bmv2-rates")
def bmv2_rates(b: Book) -> str:
    out = []
    z = b.runs.latest("bench-zeroloss")
    if z is not None:
        d = z.csv("zeroloss.csv").set_index("target")
        out.append(f"The highest fixed rate with 0 packets lost ({z.cite()}): " + fmt.words(
            [f"{_zero_loss_words(x)} on {t} (goal {n(x['goal_pps'])}: {'met' if bool(x['goal_met']) else 'not met'})"
             for t, x in d.iterrows()]) + ".")
    rr = b.runs.latest("bench-bmv2ratio")
    res = rr.manifest.get("result", Bmv2RatioResult) if rr is not None else None
    if rr is not None and res is not None and res.words:
        out.append(f"On the same BMv2 build, chimera.p4 against plain forwarding (`p4/forward.p4`), ladders run "
                   f"back to back {res.repeats} times: {res.words} (goal {f(res.goal, 1)}: "
                   f"{'met' if (res.ratio or 0) >= res.goal else 'not met'} by the median; {rr.cite()}).")
    elif rr is not None and res is not None and res.ratio is not None:
        out.append(f"On the same BMv2 build plain forwarding (`p4/forward.p4`) loses nothing up to "
                   f"{n(res.forward_zero_loss_pps)} pps and chimera.p4 up to {n(res.chimera_zero_loss_pps)}: "
                   f"chimera.p4 runs at {'at most ' if res.ratio_is_upper_bound else ''}{f(res.ratio, 3)} "
                   f"of it (goal {f(res.goal, 1)}: {'met' if res.ratio >= res.goal else 'not met'}; "
                   f"{rr.cite()}).")
    fl = b.runs.latest("bench-bmv2files")
    files = fl.manifest.get("result", Bmv2FilesResult) if fl is not None else None
    if fl is not None and files is not None:
        par = params_of(fl)
        out.append(f"In BMv2's file mode chimera.p4 as shipped ran {f(files.shipped_fps.median, 1)} frames/s "
                   f"against {f(files.baseline_fps.median, 1)} at `{par.baseline or '?'}` "
                   f"({signed(100 * (files.ratio - 1), 1)}%), "
                   f"{'every verdict and register equal to the reference' if files.conformant else 'NOT conformant'}"
                   f" ({fl.cite()}).")
    return " ".join(out) if out else "No BMv2 rate is published."


@block("scale")
def scale(b: Book) -> str:
    """Each offline stage's time and the peak memory at every published size, and how they grow."""
    r = b.runs.latest("bench-scale")
    res = r.manifest.get("result", ScaleResult) if r is not None else None
    if r is None or res is None:
        return "No scale run is published."
    t = r.csv("scale.csv")
    per = t.groupby("packets").agg(seconds=("seconds", "sum"), peak=("peak_rss_gib", "max"))
    stages = t.pivot(index="stage", columns="packets", values="seconds").reindex(t["stage"].drop_duplicates())
    rows = [[f"`{st}`", *(f(v, 1) for v in vals)] for st, vals in stages.iterrows()]
    rows.append(["**total**", *(f"**{f(v, 1)}**" for v in per["seconds"])])
    rows.append(["peak memory (GiB)", *(f(v, 2) for v in per["peak"])])
    top = max(res.sizes)
    grow = r.csv("growth.csv")
    last = grow[grow["to_packets"] == top]
    exps = fmt.words([f"{s} {f(x, 2)}" for s, x in zip(last["stage"], last["time_exponent"])])
    fig = (r.path / "figures" / "scale.png").relative_to(b.root).as_posix()
    par = params_of(r)
    cap = n((par.model_extra or {}).get("max_train_packets", 0))
    return (f"Every offline stage on synthetic datasets (the iscxvpn profile, headers-only capture) of "
            f"{fmt.words([n(s) for s in res.sizes])} packets, each size in a process of its own ({r.cite()}); "
            f"seconds per stage, on this project's 2-core machine:\n\n"
            + fmt.table(["stage", *(n(s) for s in per.index)], rows) +
            f"\n\n{n(top)} packets took {n(res.total_s)} s and {f(res.peak_rss_gib, 2)} GiB at the peak (goal "
            f"<= {n(GOAL_S)} s and <= {f(GOAL_GIB, 0)} GiB: {'met' if res.goal_met else 'not met'}). Growth from "
            f"{n(int(last['from_packets'].iloc[0]))} to {n(top)} packets (time ~ packets^b, 1 is linear): {exps}; "
            f"{'above ' + f(SUPERLINEAR, 2) + ', so faster than linear beyond the noise of one run: ' + fmt.words(res.superlinear) if res.superlinear else 'no stage grows faster than linearly (no exponent above ' + f(SUPERLINEAR, 2) + ')'}. "
            f"Training reads a seeded sample of whole flows (at most {cap} packets), so its cost stops growing past it. Carried to {n(PROJECT_TO)} packets (each stage by its last "
            f"exponent, the data's memory at least linearly): about {n(res.projected_s / 60)} min and "
            f"{f(res.projected_gib, 1)} GiB, which {'fits' if res.projected_gib <= MACHINE_GIB else 'does not fit'} "
            f"this machine's {n(MACHINE_GIB)} GiB."
            f"\n\n![time per stage and peak memory against dataset size]({fig})")


@block("coalesced")
def coalesced(b: Book) -> str:
    """The quickstart on the real application set on a testbed beside the reference: every frame sent (the
    coalesced ones cut to the replay snap) and the same F1."""
    where = on_dataset("suricata-zeek-apps")
    tb = b.runs.latest("quickstart", lambda r: where(r) and on_testbed(r))
    ref = b.runs.latest("quickstart", lambda r: where(r) and r.target == TRUTH)
    if tb is None or ref is None:
        return "No quickstart on the real application set is published on both a testbed and the reference."
    t, rf = tb.table(ABLATION).set_index("variant"), ref.table(ABLATION).set_index("variant")
    same = [v for v in t.index if v in rf.index and t.at[v, "macro_f1"] == rf.at[v, "macro_f1"]]
    return (f"On the real application set (suricata-zeek-apps, small; {tb.target}, {tb.cite()}): "
            f"{n(int(t['replayed'].iloc[0]))} frames replayed per variant, {n(int(t['cut_frames'].iloc[0]))} of them "
            f"longer than the replay snap and sent cut, {n(int(t['not_sent'].sum()))} not sent, "
            f"{n(int(t['lost'].sum()))} lost, {n(int(t['reference_mismatches'].sum()))} verdicts different from the "
            f"reference. Macro-F1 " + fmt.words([f"{v} {f(t.at[v, 'macro_f1'], 4)}" for v in t.index]) +
            f"; on the reference target ({ref.cite()}) " + fmt.words([f"{v} {f(rf.at[v, 'macro_f1'], 4)}"
                                                                       for v in rf.index]) +
            f": {'equal, variant for variant' if len(same) == len(t.index) else 'NOT equal'}.")


@block("shards")
def shards(b: Book) -> str:
    """The aggregate 0-loss rate of K testbeds at once, per target, and the scaling efficiency."""
    r = b.runs.latest("bench-shards")
    if r is None:
        return "No shards bench is published."
    t = r.csv("shards.csv")
    rows = [[x.target, n(x.shards), f"{'at least ' if bool(x.lower_bound) else ''}{n(x.aggregate_zero_loss_pps)}",
             f(x.efficiency, 2)] for x in t.itertuples()]
    missing = not_run_here(r)
    return (f"`invoke bench --what shards` ({r.cite()}): the rate the senders of K testbeds put on the wire together "
            "with 0 frames lost and every verdict the sharded reference's, on this project's 2-core machine:\n\n"
            + fmt.table(["target", "K", "aggregate 0-loss rate (pps)", "efficiency"], rows) +
            "\n\nEfficiency is agg(K) / (K x agg(1)); \"at least\": every step of the ladder held, so the limit lies "
            "above it (the senders' own rate, not the switches')."
            + (f" Not measured here: {missing}." if missing else ""))


# ------------------------------------------------------------------------------------------------ fuzz, mutation
@block("fuzz")
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


@block("mutation")
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


@block("bmv2-quickstart")
def bmv2_quickstart(b: Book) -> str:
    night, m = b.night()
    card = by_rank(Capability.TESTBED)[0]     # the card's switch: the testbed --target auto prefers
    q = m.experiments.get(f"quickstart@{card.name}")
    if q is None or q.error or q.run is None:
        return f"The latest published night ({night.cite()}) did not run the quickstart on {card.title}."
    sub = next((x for x in night.nested() if x.rel.endswith(q.run.split("runs/", 1)[-1])), None)
    tab = sub.table(ABLATION) if sub is not None else None
    got = (f"{n(tab['verdicts'].iloc[0])}/{n(tab['replayed'].iloc[0])} packets per variant classified, "
           if tab is not None and "verdicts" in tab else "")
    return (f"`invoke run-experiment --name quickstart --target {card.name}` in the latest published night "
            f"({night.cite(q.run)}): {got}{n(sum(v or 0 for v in (q.lost or {}).values()))} lost, "
            f"{n(sum(v or 0 for v in (q.reference_mismatches or {}).values()))} verdicts and "
            f"{n(sum(v or 0 for v in (q.register_mismatches or {}).values()))} registers different from the reference.")



@block("fidelity-seeds")
def fidelity_seeds(b: Book) -> str:
    """Every seed's row, each kind of data from the newest fidelity run that has it: what the means hide."""
    from chimera.bench.fidelity import with_sets
    rows, cites = [], []
    for r, kinds in fidelity_runs(b):
        t = with_sets(r.csv("fidelity.csv"))
        cites.append(r.cite())
        rows += [[str(x["data"]), f"{int(x['seed'])} ({x['seed_set']})", n(x["test_packets"]),
                  f(x["chimera_int_f1"], 3), f(x["tree_f1"], 3), f(x["forest_f1"], 3), f(x["tree_quantized_f1"], 3),
                  f(x["chimera_w1_f1"], 3), "met" if bool(x["goal_met"]) else "not met"]
                 for _, x in t[t["data"].isin(kinds)].iterrows()]
    return (f"From {fmt.words(cites)}:\n\n" +
            fmt.table(["data", "seed", "test packets", "Chimera", "tree", "forest", "tree, quantized inputs",
                       "Chimera, window 1", "goal"], rows))


@block("bmv2-diet-runs")
def bmv2_diet_runs(b: Book) -> str:
    """Every published BMv2 rate run, oldest first: file mode (shipped against a baseline), the 0-loss ladder,
    the ratio to plain forwarding."""
    rows = []
    for r in b.runs.all("bench-bmv2files"):
        res = r.manifest.get("result", Bmv2FilesResult)
        par = params_of(r)
        if res is None:
            continue
        rows.append([r.cite(), "file mode", f"{f(res.shipped_fps.median, 1)} frames/s (IQR "
                     f"{f(res.shipped_fps.iqr, 1)}) against {f(res.baseline_fps.median, 1)} at "
                     f"`{par.baseline}` ({signed(100 * (res.ratio - 1), 1)}%)",
                     "0 / 0" if res.conformant else "differences"])
    for r in b.runs.all("bench-zeroloss"):
        d = r.csv("zeroloss.csv")
        rows.append([r.cite(), "0-loss ladder", "; ".join(f"{x['target']} {_zero_loss_words(x)}"
                                                          for _, x in d.iterrows()), "—"])
    for r in b.runs.all("bench-bmv2ratio"):
        ratio = r.manifest.get("result", Bmv2RatioResult)
        if ratio is None:
            continue
        rows.append([r.cite(), "ratio to forwarding", ratio.words or (
            f"chimera.p4 {n(ratio.chimera_zero_loss_pps)} pps, forwarding {n(ratio.forward_zero_loss_pps)} pps: "
            f"{'<= ' if ratio.ratio_is_upper_bound else ''}{f(ratio.ratio, 3)} (one ladder each)"), "—"])
    return fmt.table(["run", "bench", "measured", "verdict / register differences"], rows)


# ------------------------------------------------------------------------------------------------ the budget
@block("baselines-budget")
def baselines_budget(b: Book) -> str:
    """What every method of a comparison gets, from the definitions the code trains with
    (chimera.baselines.budget, zoo, neural, yardsticks): the page cannot disagree with the code."""
    from chimera.baselines import budget as B
    from chimera.baselines.neural import ARCHITECTURES
    from chimera.baselines.yardsticks import FOREST_TREES
    from chimera.baselines.zoo import BASELINES
    what = {name: info.paper for name, info in BASELINES.items()}
    what["Chimera"] = "linearized attention over centroid tokens, hard-veto/soft-blend fusion with the rules"
    for name, a in ARCHITECTURES.items():
        what[name] += f": {a.get('hidden') or a.get('channels')}"
    what["Forest (yardstick)"] = f"random forest, {FOREST_TREES} trees"
    rows = []
    for name, s in B.SEARCHES.items():
        grid = s.describe()
        rows.append([name, what.get(name, name), grid, "patience" if s.trained_in_epochs else "—", s.also or "—"])
    return (f"Rendered from `chimera/baselines/budget.py` (the code trains with these definitions). Every method "
            f"tries **{B.CONFIGS} configurations**, trained on the training split, and keeps the one with the best "
            f"{B.SELECTION}; the test split is read once, by the kept model. Class weights: **{B.CLASS_WEIGHT}** "
            f"for every method. Methods trained in epochs stop after **{B.PATIENCE}** epochs without a better "
            f"validation score and keep their best epoch; the cap of **{B.EPOCH_CAP}** epochs is a guard, and a "
            "run that reaches it says so (`stopped_by: cap`). Every method reads Chimera's inputs over Chimera's "
            "window (`chimera.baselines.features.fair_inputs`), Leo included.\n\n" +
            fmt.table(["method", "model", f"search ({B.CONFIGS} configurations)", "early stopping",
                       "chosen without retraining"], rows))


def _paragraph(doc: str | None, i: int = 0) -> str:
    """Paragraph ``i`` of a docstring, on one line (the page quotes the code's own words)."""
    paras = [" ".join(x.split()) for x in (doc or "").split("\n\n") if x.strip()]
    return paras[i] if i < len(paras) else ""


@block("baselines-inputs")
def baselines_inputs(b: Book) -> str:
    """What each method reads and how it is realized, in the words of the code that does it (its docstrings):
    no sentence on the page describes the code except the code's own (issue 53)."""
    import inspect
    from chimera.baselines import features, leo, neural, zoo
    soft = [n for n, i in zoo.BASELINES.items() if i.where == "software"]
    anomaly = [n for n, i in zoo.BASELINES.items() if i.task != "classification"]
    items = [
        ("What every method reads", "chimera.baselines.features", _paragraph(features.__doc__, 1) + " " +
         _paragraph(inspect.getdoc(features.fair_inputs))),
        ("How the neural baselines encode it", "chimera.baselines.neural", _paragraph(neural.__doc__, 1)),
        ("Leo", "chimera.baselines.leo", _paragraph(leo.__doc__, 0) + " " + _paragraph(leo.__doc__, 1)),
        ("The AutoEncoder", "chimera.baselines.zoo._autoencoder",
         _paragraph(inspect.getdoc(zoo._autoencoder)) +
         f" Its quantile: {zoo.BaselineSettings().autoencoder_quantile}."),
        ("The training rows", "chimera.baselines.zoo.SplitFeatures.build",
         _paragraph(inspect.getdoc(zoo.SplitFeatures.build))),
    ]
    lines = [f"- **{t}** (`{where}`): {text}" for t, where, text in items]
    lines.append(f"- **Where the verdicts come from** (`chimera.baselines.zoo.BASELINES`): in software †: "
                 f"{fmt.words(soft)}; the anomaly task (benign vs attack) ‡: {fmt.words(anomaly)}; every other "
                 "method in integer tables on the reference.")
    return "Quoted from the code's docstrings by `invoke book`:\n\n" + "\n".join(lines)


@block("baselines-measured")
def baselines_measured(b: Book) -> str:
    """How each size in Table 1 and Table 2 is measured, in the words of the functions that measure it."""
    import inspect
    from chimera.baselines import features, leo, neural, zoo
    from chimera.experiments.kinds import yardstick_common
    items = [
        ("input scale", "chimera.baselines.features.input_bits", inspect.getdoc(features.input_bits)),
        ("model size", "chimera.baselines.neural.model_bits", inspect.getdoc(neural.model_bits)),
        ("per-flow bits, Chimera", "chimera.experiments.kinds.yardstick_common.per_flow_bits",
         inspect.getdoc(yardstick_common.per_flow_bits)),
        ("per-flow bits, Leo", "chimera.baselines.leo.IntegerTree.per_flow_bits",
         inspect.getdoc(leo.IntegerTree.per_flow_bits)),
        ("per-flow bits, the window models", "chimera.baselines.zoo.stored_bits", inspect.getdoc(zoo.stored_bits)),
    ]
    return "Measured, never asserted (quoted from the code by `invoke book`):\n\n" + "\n".join(
        f"- **{t}** (`{where}`): {_paragraph(text)}" for t, where, text in items)


@block("yardstick-experiments")
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
        doc = _paragraph(importlib.import_module(f"chimera.experiments.kinds.{kind.name}").__doc__)
        data = fmt.words([f"{k} ({next(iter(v.model_dump(exclude_none=True)))})"
                          for k, v in cfg.named_datasets().items()])
        rows.append([f"`{name}`", kind.name, doc, data])
    return ("Rendered from `experiments/*.yaml` and each kind's package docstring:\n\n" +
            fmt.table(["name", "kind", "what", "default data"], rows) +
            "\n\n`--dataset DIR --adapter ciciot2022|peerrush|iscxvpn2016` replaces the list of datasets with one "
            "real dataset.")


@block("tuning-table")
def tuning_table(b: Book) -> str:
    """What a run's tuning section shows, in the words of the function that writes it."""
    import inspect
    from chimera.experiments.kinds.accuracy import render as accuracy_render
    return ("A run's `## Tuning` section (`chimera.experiments.kinds.accuracy.render.tuning_lines`): " +
            _paragraph(inspect.getdoc(accuracy_render.tuning_lines)))


@block("preflight-limits")
def preflight_limits(b: Book) -> str:
    """Each target's compiled-in maxima, from its record, and what the check before training does, in its own
    words."""
    import inspect
    from chimera.experiments.stages import preflight as P
    from chimera.targets.registry import classes
    limited = [c for c in classes() if c.limits()]
    keys = sorted({k for c in limited for k in c.limits()})
    rows = [[f"`{k}`", P.CONSTANT_SOURCE.get(k, k), *[n(c.limits()[k]) if k in c.limits() else "—" for c in limited]]
            for k in keys]
    return (f"`chimera.experiments.stages.preflight.preflight`: {_paragraph(inspect.getdoc(P.preflight))} The "
            "maxima, from each target's record (`limits()`; a target without any has no row here):\n\n" +
            fmt.table(["constant", "set by", *[c.title for c in limited]], rows))


@block("baselines-failures")
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
            f"`chimera.experiments.stages.dataset.prepare`: {_paragraph(inspect.getdoc(D.prepare))}")


@block("baselines-intro")
def baselines_intro(b: Book) -> str:
    """What the baselines are and how they are compared, in the words of the package that trains them."""
    import chimera.baselines as B
    from chimera.metrics import classification as cm
    return (f"Quoted from `chimera.baselines`: {_paragraph(B.__doc__)} The score (`chimera.metrics.classification."
            f"macro_f1`): {_paragraph(cm.macro_f1.__doc__)}")


@block("test-partition")
def test_partition(b: Book) -> str:
    """The split every method is scored on, in the words of the rule that makes it."""
    import inspect
    from chimera.data import flows
    return ("The split (`chimera.data.flows.frozen_split`): " + " ".join(
        _paragraph(inspect.getdoc(flows.frozen_split), i) for i in (0, 1)))


@block("integer-autoencoder")
def integer_autoencoder(b: Book) -> str:
    """The roc kind's detectors, in the words of the module that builds them."""
    from chimera.baselines import anomaly
    return "Quoted from `chimera.baselines.anomaly`:\n\n" + "\n\n".join(
        _paragraph(anomaly.__doc__, i) for i in (1, 2))


@block("directions")
def directions(b: Book) -> str:
    """The newest published measurement of the two named directions, with its decision (docs/fidelity.md)."""
    from chimera.bench.directions import report
    r = b.runs.latest("bench-directions")
    if r is None:
        return "No measurement of the two directions is published yet (`invoke bench --what directions`)."
    return report(r.path, r.rel) + (f"\n{r.freshness.mark().strip()}\n" if not r.freshness.fresh else "")


@block("p4c-matrix")
def p4c_matrix(b: Book) -> str:
    """The p4c/BMv2 version matrix: the newest published toolchain run of each p4c and BMv2 pair."""
    from chimera.bench.toolchain import ToolchainResult
    newest: dict[tuple[str, str], tuple[Run, ToolchainResult]] = {}
    for r in b.runs.all("bench-toolchain"):
        res = r.manifest.get("result", ToolchainResult)
        if res is not None:
            newest[res.p4c_version, res.bmv2_version] = (r, res)
    if not newest:
        return ("No toolchain run is published yet (`invoke bench --what toolchain --p4c DIR`, one per p4c "
                "build).")
    rows = []
    for (version, switch), (r, res) in sorted(newest.items()):
        rows.append([version, switch, "yes" if res.compiles else "**no**",
                     "—" if res.p4info_matches is None else "equal" if res.p4info_matches else "**differs**",
                     f"{res.tests_passed} passed, {res.tests_failed} failed, {res.tests_skipped} skipped",
                     r.cite()])
    return ("Each row is one p4c and BMv2 pair checked here (`invoke bench --what toolchain --p4c DIR "
            "[--switch DIR]`): chimera.p4 compiled for the quickstart model, p4c's P4Info against the committed one, "
            "and the BMv2 conformance tests (every verdict and register equal to the reference's) on that pair:\n\n" +
            fmt.table(["p4c", "BMv2", "compiles", "P4Info", "BMv2 conformance tests", "run"], rows))


@block("verifier-matrix")
def verifier_matrix(b: Book) -> str:
    """The kernel x program matrix: the newest published verifier run of each kernel, one column per kernel."""
    from chimera.bench.verifier import VerifierResult
    newest: dict[str, tuple[Run, VerifierResult]] = {}
    for r in b.runs.all("bench-verifier"):
        res = r.manifest.get("result", VerifierResult)
        if res is not None:
            newest[res.kernel] = (r, res)
    if not newest:
        return ("No verifier run is published yet (`invoke bench --what verifier` on each kernel: the host, and "
                "Debian 12's 6.1 and Debian 13's 6.12 in a VM as `scripts/vm-boot` builds one).")
    kernels = sorted(newest)
    variants = list(dict.fromkeys(v.variant for k in kernels for v in newest[k][1].rows))

    def cell(k: str, name: str) -> str:
        row = next((x for x in newest[k][1].rows if x.variant == name), None)
        if row is None:
            return "not run"
        if row.loaded is None:
            return "— (" + row.why.split(";")[0].split(":")[0] + ")"
        if not row.loaded:
            return "**refused**" + (f" (processed {n(row.verified_insns)}, {row.verified_insns / row.limit:.0%})"
                                    if row.verified_insns else "")
        return f"{n(row.verified_insns)} ({row.verified_insns / row.limit:.1%})" if row.verified_insns else "loaded"
    rows = [[name, *(cell(k, name) for k in kernels)] for name in variants]
    cites = "; ".join(f"{k}: {newest[k][0].cite()} ({newest[k][1].clang.splitlines()[0]})"
                      for k in kernels)
    return ("Each column is one kernel's newest `invoke bench --what verifier` run: every variant of the "
            f"{newest[kernels[0]][1].experiment} experiment trained for one epoch, compiled as a run does and "
            "loaded into that kernel. A cell is the instructions the verifier processed and their share of its "
            "limit (1,000,000); — is a variant with no eBPF program, with the reason. Runs: " + cites + ".\n\n" +
            fmt.table(["variant", *(f"kernel {k}" for k in kernels)], rows))
