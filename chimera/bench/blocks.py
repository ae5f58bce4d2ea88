"""The benches' book blocks: the benches table, the BMv2 rates, scale, shards, fidelity, the toolchain and
verifier matrices, the suite timed here.

Presentation (``chimera.report.provenance.PRESENTATION_FILES``): nothing a bench measures reads this module, so
editing it stales no run.
"""

from __future__ import annotations

import statistics

import pandas as pd

from chimera.bench import BENCHES
from chimera.bench.bmv2files import Bmv2FilesResult
from chimera.bench.bmv2ratio import Bmv2RatioResult
from chimera.bench.results import BenchParams
from chimera.bench.scale import GOAL_GIB, GOAL_S, MACHINE_GIB, PROJECT_TO, SUPERLINEAR, ScaleResult
from chimera.bench.suite import SuiteResult
from chimera.errors import ResultsError
from chimera.report import fmt
from chimera.report.archive import MEDIAN_OF, python_of
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, n, signed
from chimera.report.runs import Run

BLOCKS = Blocks()


def params_of(r: Run) -> BenchParams:
    """A bench run's parameters (defaults where an old run recorded none)."""
    return r.manifest.get("params", BenchParams) or BenchParams()


def not_run_here(r: Run) -> str:
    """The targets a bench could not measure where it ran, each with its reason ("" where it measured them all)."""
    par = params_of(r)
    return fmt.words([f"{k} ({v})" for k, v in par.skipped.items()]) if par.skipped else ""


@BLOCKS("suite-here")
def suite_here(b: Book) -> str:
    """The test command timed on this machine with every tool it has (BMv2 included where built): the newest
    record on each Python it was run on, the project's own (3.11) first."""
    newest: dict[str, Run] = {}
    for r in b.runs.all("bench-suite"):
        newest[python_of(r.manifest)] = r
    if not newest:
        return "No suite bench is published (`invoke bench --what suite` times the test command here)."
    out = []
    for py in sorted(newest, key=lambda v: [int(x) if x.isdigit() else 0 for x in v.split(".")]):
        r = newest[py]
        res = r.manifest.get("result", SuiteResult)
        assert res is not None, f"{r.rel}: a suite bench without its result"
        skips = r.csv("skips.csv")
        absent = not_run_here(r)
        out.append(f"On Python {r.manifest.environment.get('python', py)}, on the same machine with every tool it has "
                   f"(targets that could run: {fmt.words(res.targets)}), `{res.command}` took {n(res.wall_s)} s at "
                   f"`{(r.manifest.git.commit or '')[:7]}` ({r.cite()}): {n(res.passed)} passed, {n(res.skipped)} "
                   f"skipped" + (" (each with its reason in `skips.csv`)" if len(skips) else "") + "."
                   + (f" Absent here: {absent}." if absent else ""))
    return " ".join(out)


@BLOCKS("suite-newer-python")
def suite_newer_python(b: Book) -> str:
    """Whether the test suite has run on a Python newer than the project's own (3.11), and on what: the Python,
    the platform (its C library names the distribution) and the torch build the record's manifest names."""
    newer = [r for r in b.runs.all("bench-suite") if python_of(r.manifest) not in ("3.11", "?")]
    if not newer:
        return "The test suite has not been run on Python 3.12."
    r = newer[-1]
    res = r.manifest.get("result", SuiteResult)
    env = r.manifest.environment
    torch = (env.get("packages") or {}).get("torch", "?")
    return (f"The test suite has run on Python {env.get('python')} only on this project's machine ({env.get('platform')}"
            f", torch {torch}; {r.cite()}: {n(res.passed) if res else '?'} passed), not on Ubuntu 24.04 with its own "
            f"Python and packages, which this machine cannot reach.")


@BLOCKS("suite-newer-python-limit")
def suite_newer_python_limit(b: Book) -> str:
    """The same sentence as a line of the README's limits list."""
    return "- " + suite_newer_python(b)


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


@BLOCKS("fidelity")
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


@BLOCKS("fidelity-history")
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


@BLOCKS("fidelity-tables")
def fidelity_tables(b: Book) -> str:
    """docs/fidelity.md's tables: each contributing run's, for the kinds of data it is the newest run of."""
    from chimera.bench.fidelity import tables_markdown
    parts = []
    for r, kinds in fidelity_runs(b):
        parts.append(tables_markdown(r.path, r.rel, kinds) +
                     (f"\n{r.freshness.mark().strip()}\n" if not r.freshness.fresh else ""))
    return "\n\n".join(parts)


@BLOCKS("benches")
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


@BLOCKS("bmv2-rates")
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


@BLOCKS("scale")
def scale(b: Book) -> str:
    """Each offline stage's time and the peak memory at every published size, and how they grow."""
    r = b.runs.latest("bench-scale")
    res = r.manifest.get("result", ScaleResult) if r is not None else None
    if r is None or res is None:
        return "No scale run is published."
    goal = scale_goal(b.runs.all("bench-scale"), r, res)
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
            f"\n\n{n(top)} packets took {n(res.total_s)} s and {f(res.peak_rss_gib, 2)} GiB at the peak. {goal} "
            f"Growth from "
            f"{n(int(last['from_packets'].iloc[0]))} to {n(top)} packets (time ~ packets^b, 1 is linear): {exps}; "
            f"{'above ' + f(SUPERLINEAR, 2) + ', so faster than linear beyond the noise of one run: ' + fmt.words(res.superlinear) if res.superlinear else 'no stage grows faster than linearly (no exponent above ' + f(SUPERLINEAR, 2) + ')'}. "
            f"Training reads a seeded sample of whole flows (at most {cap} packets), so its cost stops growing past it. Carried to {n(PROJECT_TO)} packets (each stage by its last "
            f"exponent, the data's memory at least linearly): about {n(res.projected_s / 60)} min and "
            f"{f(res.projected_gib, 1)} GiB, which {'fits' if res.projected_gib <= MACHINE_GIB else 'does not fit'} "
            f"this machine's {n(MACHINE_GIB)} GiB."
            f"\n\n![time per stage and peak memory against dataset size]({fig})")


def scale_goal(records: list[Run], r: Run, res: ScaleResult) -> str:
    """The scale goal's verdict: a wall-time goal is judged by the median of MEDIAN_OF runs of one code (the run's
    own fingerprint) on one host (its kernel build), memory by the largest peak among them; with fewer such runs
    the sentence reports the draws and gives no verdict."""
    kernel = r.manifest.environment.get("kernel")
    same = [x for x in records if kernel and x.manifest.environment.get("kernel") == kernel
            and x.manifest.code_fingerprint == r.manifest.code_fingerprint]
    draws = [(x, s) for x in same if (s := x.manifest.get("result", ScaleResult)) is not None
             and max(s.sizes) == max(res.sizes)]
    rule = (f"goal <= {n(GOAL_S)} s and <= {f(GOAL_GIB, 0)} GiB at {n(max(res.sizes))} packets, judged by the "
            f"median time of {MEDIAN_OF} runs of one code on one host and the largest peak among them")
    if len(draws) < MEDIAN_OF:
        return (f"The {rule}: no verdict yet, {len(draws)} of the {MEDIAN_OF} runs are published"
                f" ({'met' if res.goal_met else 'not met'} on this one run).")
    draws = draws[-MEDIAN_OF:]
    med = statistics.median(s.total_s for _, s in draws)
    peak = max(s.peak_rss_gib for _, s in draws)
    met = med <= GOAL_S and peak <= GOAL_GIB
    return (f"The {rule}: {'met' if met else 'not met'}, median {n(med)} s of "
            f"{fmt.words([n(s.total_s) + ' s' for _, s in draws])} ({fmt.words([x.cite() for x, _ in draws])}), "
            f"largest peak {f(peak, 2)} GiB.")


@BLOCKS("shards")
def shards(b: Book) -> str:
    """The aggregate 0-loss rate of K testbeds at once, per target, and the scaling efficiency."""
    r = b.runs.latest("bench-shards")
    if r is None:
        return "No shards bench is published."
    t = r.csv("shards.csv")
    one = {x.target: bool(x.lower_bound) for x in t.itertuples() if int(x.shards) == 1}
    rows = [[x.target, n(x.shards), f"{'at least ' if bool(x.lower_bound) else ''}{n(x.aggregate_zero_loss_pps)}",
             efficiency_bound(float(x.efficiency), int(x.shards) > 1 and bool(x.lower_bound),
                             int(x.shards) > 1 and one.get(x.target, False))]
            for x in t.itertuples()]
    missing = not_run_here(r)
    return (f"`invoke bench --what shards` ({r.cite()}): the rate the senders of K testbeds put on the wire together "
            "with 0 frames lost and every verdict the sharded reference's, on this project's 2-core machine:\n\n"
            + fmt.table(["target", "K", "aggregate 0-loss rate (pps)", "efficiency"], rows) +
            "\n\nEfficiency is agg(K) / (K x agg(1)); \"at least\": every step of the ladder held, so the limit lies "
            "above it (the senders' own rate, not the switches'). An efficiency from a rate that is only a lower bound "
            "is a bound itself (at most, where agg(1) is one; at least, where agg(K) is), and unknown where both are."
            + (f" Not measured here: {missing}." if missing else ""))


def efficiency_bound(eff: float, k_lower: bool, one_lower: bool) -> str:
    """agg(K) / (K x agg(1)) where either rate may be only a lower bound (every step of its ladder held)."""
    if eff != eff:
        return "n/a"
    if k_lower and one_lower:
        return f"unknown (both rates lower bounds; {f(eff, 2)} as measured)"
    return f"{'at most ' if one_lower else 'at least ' if k_lower else ''}{f(eff, 2)}"


@BLOCKS("fidelity-seeds")
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


@BLOCKS("bmv2-diet-runs")
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


@BLOCKS("directions")
def directions(b: Book) -> str:
    """The newest published measurement of the two named directions, with its decision (docs/fidelity.md)."""
    from chimera.bench.directions import report
    r = b.runs.latest("bench-directions")
    if r is None:
        return "No measurement of the two directions is published yet (`invoke bench --what directions`)."
    return report(r.path, r.rel) + (f"\n{r.freshness.mark().strip()}\n" if not r.freshness.fresh else "")


@BLOCKS("p4c-matrix")
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
        t = res.tofino
        tofino = ("—" if t is None else t.verdict() if t.fits else
                  "**does not fit**: `" + t.first_reason[:160].replace("`", "'").replace("|", "\\|") + "`")
        built = "—" if res.p4c_build is None else res.p4c_build.took()
        rows.append([version, switch, "yes" if res.compiles else "**no**",
                     "—" if res.p4info_matches is None else "equal" if res.p4info_matches else "**differs**",
                     f"{res.tests_passed} passed, {res.tests_failed} failed, {res.tests_skipped} skipped",
                     tofino, built, r.cite()])
    return ("Each row is one p4c and BMv2 pair checked here (`invoke bench --what toolchain --p4c DIR "
            "[--switch DIR]`): chimera.p4 compiled for the quickstart model, p4c's P4Info against the committed one, "
            "and the BMv2 conformance tests (every verdict and register equal to the reference's) on that pair; "
            "where p4c was built with its Tofino backend, that backend's verdict on the quickstart's TNA program; "
            "and the time p4c's build took here, where its build script recorded it:\n\n" +
            fmt.table(["p4c", "BMv2", "compiles", "P4Info", "BMv2 conformance tests", "Tofino backend", "p4c built in",
                       "run"], rows))


@BLOCKS("verifier-matrix")
def verifier_matrix(b: Book) -> str:
    """The kernel x program matrix: the newest published verifier run of each kernel, one column per kernel."""
    from chimera.bench.verifier import VerifierResult
    from chimera.report.archive import target_of
    newest: dict[str, tuple[Run, VerifierResult]] = {}
    for r in b.runs.all("bench-verifier"):   # oldest first: a kernel release's newest run takes its column
        res = r.manifest.get("result", VerifierResult)
        if res is not None:
            newest[target_of(r.manifest)] = (r, res)
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
    cites = "; ".join(f"{newest[k][1].kernel}: {newest[k][0].cite()} ({newest[k][1].clang.splitlines()[0]})"
                      for k in kernels)
    return ("Each column is one kernel's newest `invoke bench --what verifier` run: every variant of the "
            f"{newest[kernels[0]][1].experiment} experiment trained for one epoch, compiled as a run does and "
            "loaded into that kernel. A cell is the instructions the verifier processed and their share of its "
            "limit (1,000,000); — is a variant with no eBPF program, with the reason. Runs: " + cites + ".\n\n" +
            fmt.table(["variant", *(f"kernel {newest[k][1].kernel}" for k in kernels)], rows))
