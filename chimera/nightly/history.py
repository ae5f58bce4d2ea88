"""The nightly history: one CSV row per (nightly run, tracked metric), appended only by a complete run.

A corrupt history is an error naming the file, never a silent restart; the append is atomic (a copy with
the new rows replaces the file), so an interrupted nightly leaves the history as it was. Trend figures
(one per tracked metric, in the spirit of asv) are drawn from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from chimera.errors import ResultsError  # noqa: E402
from chimera.formats.rundir import Manifest  # noqa: E402
from chimera.nightly.checks import Status  # noqa: E402
from chimera.report.sections import Flag, NightMeasured, NightRecord, section  # noqa: E402

COLUMNS = ["run_id", "time", "git", "code", "metric", "value", "iqr"]
#: added since: which machine measured it and how its night ended (bands use this machine's passing nights)
MORE = ["host", "night_status"]


def load_history(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    try:
        df = pd.read_csv(path, dtype={c: str for c in ("run_id", "time", "git", "code", "metric", "host",
                                                        "night_status")})
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise ResultsError(f"the nightly history {path} cannot be read ({e})",
                           f"repair or move {path} aside yourself (it is never restarted silently)") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing or (len(df) and pd.to_numeric(df["value"], errors="coerce").isna().any()):
        raise ResultsError(f"the nightly history {path} is corrupt (missing columns {missing} or non-numeric values)",
                           f"repair or move {path} aside yourself (it is never restarted silently)")
    return df


def history_rows(common: Mapping[str, object], m: NightMeasured) -> list[dict[str, object]]:
    """A night's rows: F1 per experiment, target and variant; bench medians; fuzz differences; the mutation
    sample's score per file. ``common`` holds run_id, time, git, code, host and night_status."""
    rows: list[dict[str, object]] = [{**common, "metric": f"{k}/{v}", "value": f1, "iqr": None}
                                     for k, e in m.experiments.items() for v, f1 in e.f1.items()]
    rows += [{**common, "metric": k, "value": s.median, "iqr": s.iqr} for k, s in m.benches.items()
             if s.median is not None]
    if m.fuzz is not None and not m.fuzz.error:
        rows.append({**common, "metric": "fuzz/differences", "value": m.fuzz.differences, "iqr": None})
    for f, sc in (m.mutate.scores if m.mutate else {}).items():
        if sc.score is not None and sc.score == sc.score:  # some mutant was judged
            rows.append({**common, "metric": f"mutation/{f}", "value": sc.score, "iqr": None})
    return rows


def published_history(published: Path, retired: Path | None = None) -> pd.DataFrame:
    """The history rows of the published nights (``results/published/nightly/*``) and of those the archive rule
    retired (their manifests under ``results/history/nightly/``: chimera.report.archive), read from their
    manifests: what a fresh clone's dashboard shows before it has run a night of its own."""
    from chimera.report.archive import HISTORY
    retired = HISTORY / "nightly" if retired is None else retired
    rows: list[dict[str, object]] = []
    files = sorted(published.glob("*/manifest.json")) + (sorted(retired.glob("*.json")) if retired.is_dir() else [])
    for mf in files:
        man = Manifest.read(mf)
        measured = section(man, "measured", NightMeasured)
        if man.status != "complete" or measured is None:
            continue
        night = man.get("nightly", NightRecord) or NightRecord()
        old = man.get("regressed", Flag)  # nights before NightRecord held it recorded it apart
        regressed = night.regressed if night.regressed is not None else bool(old.root) if old is not None else False
        common = {"run_id": man.run_id, "time": (man.finished or man.started or "").replace(" ", "T"),
                  "git": man.git.commit, "code": night.code, "host": night.host,
                  "night_status": Status.REGRESSED.value if regressed else Status.PASS.value}
        rows += history_rows(common, measured)
    return pd.DataFrame(rows, columns=[*COLUMNS, *MORE]).astype({c: str for c in ("run_id", "time", "git", "metric")})


def with_published(local: pd.DataFrame, published: Path) -> pd.DataFrame:
    """This machine's history with the published nights it lacks (a night in both is taken from the local one)."""
    pub = published_history(published) if published.is_dir() else pd.DataFrame(columns=[*COLUMNS, *MORE])
    pub = pub[~pub["run_id"].isin(set(local["run_id"].astype(str)))] if len(local) else pub
    if not len(pub):
        return local
    return pd.concat([local, pub], ignore_index=True) if len(local) else pub


def append_history(path: Path, rows: list[dict]) -> None:
    old = load_history(path)
    cols = [*COLUMNS, *MORE]
    new = pd.concat([old, pd.DataFrame(rows, columns=cols)], ignore_index=True) if len(old) else \
        pd.DataFrame(rows, columns=cols)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    new.to_csv(tmp, index=False)
    os.replace(tmp, path)


def trend_figure(g: pd.DataFrame, metric: str, golden: float | None = None,
                 band: tuple[float, float] | None = None) -> plt.Figure:
    """One metric's value per night (IQR shaded where recorded), the golden as a line, the band as a box."""
    sns.set_theme(style="whitegrid")
    g = g.reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7, 2.8))
    x = range(len(g))
    vals = pd.to_numeric(g["value"], errors="coerce")
    ax.plot(x, vals, marker="o", label="measured")
    iqr = pd.to_numeric(g["iqr"], errors="coerce").fillna(0)
    ax.fill_between(x, vals - iqr / 2, vals + iqr / 2, alpha=0.2)
    if "night_status" in g:
        bad = g["night_status"] == Status.REGRESSED
        ax.scatter([i for i in x if bad.iloc[i]], vals[bad], color="crimson", zorder=3, label="regressed night")
    if golden is not None:
        ax.axhline(golden, color="black", ls="--", lw=1, label="golden")
    if band is not None:
        ax.axhspan(band[0], band[1], color="seagreen", alpha=0.12, label="band")
    ax.set_xticks(list(x))
    ax.set_xticklabels([str(r)[:13] for r in g["run_id"]], rotation=45, ha="right", fontsize=7)
    ax.set(title=str(metric), ylabel="value")
    ax.legend(fontsize=7, loc="best")
    return fig


def trend_figures(history: pd.DataFrame, out: Path) -> list[Path]:
    """One PNG per tracked metric (the run directory's copy; the dashboard draws its own, with golden and band)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for metric, g in history.groupby("metric"):
        fig = trend_figure(g, str(metric))
        safe = "".join(c if c.isalnum() else "_" for c in str(metric))
        p = out / f"trend_{safe}.png"
        fig.savefig(p, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)
    return paths
