"""The nightly dashboard: one static page, ``results/nightly/site/index.html``, in the spirit of asv's published
pages. It opens from the file system with no network: the charts are inline SVG (seaborn/matplotlib), the style
is inline CSS, and there is no script.

The page shows the latest night's verdict and its checks (failing ones highlighted), one trend chart per tracked
metric with the golden as a dashed line and the band it is judged against as a shaded box, and a table of the
nights (time, commit, status, links to each night's summary and to the reports of the runs it made). Every point
of a chart is a link to its night's summary and is labelled with its commit.
"""

from __future__ import annotations

import hashlib
import html
import json
import io
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from chimera import paths
from chimera.errors import ResultsError  # noqa: E402
from chimera.formats.rundir import Manifest  # noqa: E402
from chimera.nightly.checks import (BAND_FLOOR, BAND_K, F1_TOLERANCE, FAILING, STATUSES, CheckKind, Status,
                                    band)  # noqa: E402
from chimera.nightly.golden import Golden  # noqa: E402
from chimera.report.sections import NightMeasured, section  # noqa: E402
from chimera.nightly.history import load_history, with_published  # noqa: E402

log = logging.getLogger(__name__)
SITE = "site"
PUBLISHED_NIGHTS = paths.PUBLISHED / "nightly"
#: row colours of the checks table, by status (the failing ones stand out)
STATUS_COLOURS = {Status.REGRESSED: "#f4c7c3", Status.FAILED_TO_RUN: "#f9e0b0", Status.IMPROVED: "#d4edda",
                  Status.NO_VERDICT: "#eeeeee", Status.ALLOWED_SKIP: "#e2e3f3", Status.PASS: "#ffffff"}


@dataclass
class Night:
    """One nightly run as the page shows it."""
    run_id: str
    time: str
    git: str
    status: str
    path: Path | None          # its run directory, where it still exists
    runs: dict[str, str] = field(default_factory=dict)  # experiment@target -> run directory (relative to path)


def _nights(history: pd.DataFrame, nightly_root: Path, published: Path | None = None) -> list[Night]:
    out = []
    for rid, g in history.groupby("run_id", sort=False):
        d = nightly_root / str(rid)
        path = d if d.is_dir() else (published / str(rid) if published and (published / str(rid)).is_dir() else None)
        runs: dict[str, str] = {}
        if path is not None and (path / "manifest.json").is_file():
            try:
                measured = section(Manifest.read(path / "manifest.json"), "measured", NightMeasured)
                runs = {k: m.run for k, m in (measured.experiments if measured else {}).items() if m.run}
            except (ResultsError, AttributeError):  # a damaged night still gets its row, without run links
                runs = {}
        status = str(g["night_status"].iloc[0]) if "night_status" in g and pd.notna(g["night_status"].iloc[0]) \
            else "unknown"
        out.append(Night(str(rid), str(g["time"].iloc[0]), str(g["git"].iloc[0]), status, path, runs))
    return sorted(out, key=lambda n: n.time)


def golden_value(golden: Golden | None, metric: str) -> float | None:
    """The golden's value of a history metric (``<experiment>@<target>/<variant>`` is an F1, else a bench)."""
    if golden is None:
        return None
    if metric in golden.benches:
        return golden.benches[metric].median
    if "/" in metric:
        run, variant = metric.split("/", 1)
        return golden.experiments[run].f1.get(variant) if run in golden.experiments else None
    return None


def judged_band(metric: str, history: pd.DataFrame, host: str, gold: float | None) -> tuple[float, float, str] | None:
    """The band tonight's value of ``metric`` is judged against: the F1 tolerance around the golden, a bench's
    band from this machine's passing nights, none for a count that must be 0."""
    if "/" in metric and "@" in metric:
        return None if gold is None else (gold - F1_TOLERANCE, gold + F1_TOLERANCE, f"golden ± {F1_TOLERANCE}")
    if metric.startswith(("fuzz/", "mutation/")):
        return None
    b = band(metric, history, host)
    return None if isinstance(b, int) else b


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start)).as_posix()


def chart_svg(g: pd.DataFrame, metric: str, gold: float | None, bnd: tuple[float, float, str] | None,
              links: list[str]) -> str:
    """One metric's trend as inline SVG: a point per night (a link to its summary), its commit under it."""
    sns.set_theme(style="whitegrid")
    g = g.reset_index(drop=True)
    vals = pd.to_numeric(g["value"], errors="coerce")
    x = list(range(len(g)))
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    ax.plot(x, vals, color="#4c72b0", lw=1.2, zorder=2)
    iqr = pd.to_numeric(g["iqr"], errors="coerce").fillna(0)
    if (iqr > 0).any():
        ax.fill_between(x, vals - iqr / 2, vals + iqr / 2, color="#4c72b0", alpha=0.15, lw=0, label="IQR")
    statuses = g.get("night_status", pd.Series([Status.PASS.value] * len(g)))
    colours = ["crimson" if s in FAILING else "#4c72b0" for s in statuses]
    pts = ax.scatter(x, vals, c=colours, s=28, zorder=3, label="night (red: failed)")
    pts.set_urls(links)
    if bnd is not None:
        ax.axhspan(bnd[0], bnd[1], color="seagreen", alpha=0.15, label=f"band ({bnd[2]})")
    if gold is not None:
        ax.axhline(gold, color="black", ls="--", lw=1, label="golden")
    ax.set_xticks(x)
    ax.set_xticklabels([str(c)[:8] for c in g["git"]], rotation=45, ha="right", fontsize=7, family="monospace")
    ax.set_xlabel("commit", fontsize=8)
    ax.set_ylabel("value", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=6, loc="best", framealpha=0.8)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight",  # no RDF block, no date: the same night draws the same
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]  # inline: drop the XML prologue and doctype


#: charts already drawn in this process, by what they draw: a night redraws only the metrics whose history moved
#: (the published nights' charts, the same at every call, are drawn once)
_CHARTS: dict[str, str] = {}
CHART_COLUMNS = ("value", "iqr", "night_status", "git")


def cached_chart(g: pd.DataFrame, metric: str, gold: float | None, bnd: tuple[float, float, str] | None,
                 links: list[str]) -> str:
    """``chart_svg``, drawn once per distinct input in this process."""
    cols = [c for c in CHART_COLUMNS if c in g]
    key = hashlib.sha256(json.dumps([metric, gold, bnd, links, cols, g[cols].astype(str).values.tolist()],
                                    default=str).encode()).hexdigest()
    if key not in _CHARTS:
        if len(_CHARTS) > 512:
            _CHARTS.clear()
        _CHARTS[key] = chart_svg(g, metric, gold, bnd, links)
    return _CHARTS[key]


def night_verdict(checks: pd.DataFrame) -> str:
    """REGRESSED where a check failed; NO VERDICT where none failed but an exact check could not be judged (the
    code moved since the golden, say): such a night proves nothing bit for bit; PASS only where every exact
    check passed."""
    if checks["status"].isin(FAILING).any():
        return "REGRESSED"
    if ((checks["kind"] == CheckKind.EXACT) & (checks["status"] == Status.NO_VERDICT)).any():
        return "NO VERDICT"
    return "PASS"


def code_moved(night: Night, root: Path = paths.ROOT) -> str:
    """A sentence where the code has moved on since ``night`` was made ("" where it has not, or cannot say)."""
    from chimera.report.provenance import TreeCode, changed_since, fingerprint_at
    try:
        tree = TreeCode(root)
        if fingerprint_at(night.git, root) == tree.fingerprint():
            return ""
        since = tree.code_commits(night.git)
    except ResultsError:
        return ""
    return f"The code has moved on since this night ({changed_since(since)}): its checks speak of older code."


def _checks_table(night: Night | None) -> tuple[str, str]:
    """(the verdict line, the checks table) of a night, failing checks first and highlighted."""
    if night is None or night.path is None or not (night.path / "checks.csv").is_file():
        return "no checks recorded for the latest night", ""
    df = pd.read_csv(night.path / "checks.csv", dtype=str, keep_default_na=False)
    order = {s: i for i, s in enumerate(STATUSES)}
    df = df.sort_values("status", key=lambda s: s.map(order), kind="stable")
    counts = df["status"].value_counts().to_dict()
    verdict = night_verdict(df)
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
    rows = "\n".join(
        f'<tr class="check {html.escape(str(r.status))}"><td>{html.escape(str(r.status))}</td>'
        f"<td>{html.escape(str(r.name))}</td><td>{html.escape(str(r.kind))}</td>"
        f"<td>{html.escape(str(r.value))}</td><td>{html.escape(str(r.expected))}</td>"
        f"<td>{html.escape(str(r.detail))}</td></tr>" for r in df.itertuples())
    table = ("<table class=\"checks\"><thead><tr><th>status</th><th>check</th><th>kind</th><th>value</th>"
             f"<th>expected</th><th>detail</th></tr></thead><tbody>\n{rows}\n</tbody></table>")
    cls = "bad" if verdict != "PASS" else "good"
    moved = code_moved(night)
    return (f'<p class="verdict {cls}">{verdict}</p><p>{html.escape(summary)}</p>' +
            (f'<p class="moved">{html.escape(moved)}</p>' if moved else "")), table


def _nights_table(nights: list[Night], site: Path) -> str:
    rows = []
    for n in reversed(nights):
        links = []
        if n.path is not None:
            for name in ("summary.md", "checks.csv", "manifest.json"):
                if (n.path / name).is_file():
                    links.append(f'<a href="{_rel(n.path / name, site)}">{name}</a>')
            for key, run in sorted(n.runs.items()):
                rep = n.path / run / "report.md"
                if rep.is_file():
                    links.append(f'<a href="{_rel(rep, site)}">{html.escape(key)}</a>')
        rows.append(f'<tr class="night {html.escape(n.status)}"><td>{html.escape(n.time)}</td>'
                    f"<td><code>{html.escape(n.git[:10])}</code></td><td>{html.escape(n.status)}</td>"
                    f"<td>{' · '.join(links) or '(run directory gone)'}</td></tr>")
    return ("<table class=\"nights\"><thead><tr><th>time</th><th>commit</th><th>status</th><th>links</th></tr>"
            f"</thead><tbody>\n{chr(10).join(rows)}\n</tbody></table>")


CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.verdict { font-size: 1.6em; font-weight: bold; margin: .2em 0; }
.verdict.good { color: #1e7b34; } .verdict.bad { color: #b00020; }
table { border-collapse: collapse; font-size: .82em; width: 100%; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
""" + "\n".join(f"tr.{s} td {{ background: {c}; }}" for s, c in STATUS_COLOURS.items()) + """
tr.regressed td:first-child, tr.failed-to-run td:first-child { font-weight: bold; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em; }
figure.chart { margin: 0; border: 1px solid #ddd; padding: .4em; }
figure.chart svg { width: 100%; height: auto; }
figcaption { font-family: monospace; font-size: .85em; }
"""


def write_site(history_path: Path, nightly_root: Path, golden: Golden | None = None,
               host: str | None = None, published: Path | None = PUBLISHED_NIGHTS) -> Path:
    """Write ``<nightly_root>/site/index.html`` from this machine's history and the published nights (a fresh
    clone shows the project's nights before it runs one of its own), and the nights' run directories."""
    from chimera.testbed.pacing import host_key
    history = load_history(history_path)
    if published is not None:
        history = with_published(history, published)
    site = nightly_root / SITE
    site.mkdir(parents=True, exist_ok=True)
    nights = _nights(history, nightly_root, published) if len(history) else []
    latest = nights[-1] if nights else None
    host = host or (str(history["host"].dropna().iloc[-1]) if "host" in history and history["host"].notna().any()
                    else host_key())
    by_id = {n.run_id: n for n in nights}
    charts = []
    for metric, g in history.groupby("metric", sort=True):
        g = g.assign(_t=g["time"].astype(str)).sort_values("_t")
        gold = golden_value(golden, str(metric))
        bnd = judged_band(str(metric), history, host, gold)
        links = [(_rel(by_id[str(r)].path / "summary.md", site)  # type: ignore[operator]
                  if str(r) in by_id and by_id[str(r)].path is not None else "") for r in g["run_id"]]
        svg = cached_chart(g, str(metric), gold, bnd, links)
        charts.append(f'<figure class="chart" data-metric="{html.escape(str(metric))}">'
                      f"<figcaption>{html.escape(str(metric))}</figcaption>{svg}</figure>")
    verdict, checks = _checks_table(latest)
    head = (f"Latest night <code>{html.escape(latest.run_id)}</code> at commit <code>{html.escape(latest.git[:10])}"
            f"</code> ({html.escape(latest.time)})" if latest else "No nights in the history yet.")
    golden_line = (f"golden taken at <code>{html.escape(str(golden.git or '?')[:10])}</code> "
                   f"({html.escape(str(golden.taken or '?'))})" if golden else "no golden baseline given")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Chimera nightly</title>
<style>{CSS}</style></head><body>
<h1>Chimera nightly</h1>
<p>{head}; {golden_line}; bands are this machine's passing nights
(median ± max({BAND_K:g}·IQR, {BAND_FLOOR:.0%})), F1 is judged within ± {F1_TOLERANCE} of the golden.</p>
<section id="verdict"><h2>Latest verdict</h2>{verdict}{checks}</section>
<section id="trends"><h2>Trends ({len(charts)} metrics)</h2>
<p>One point per night (red: a night that failed); click a point for its summary. Dashed: the golden;
shaded green: the band.</p><div class="charts">
{chr(10).join(charts)}
</div></section>
<section id="nights"><h2>Nights</h2>{_nights_table(nights, site)}</section>
</body></html>
"""
    out = site / "index.html"
    tmp = out.with_suffix(".html.tmp")
    tmp.write_text(page)
    os.replace(tmp, out)
    log.info("dashboard: %s (%d charts, %d nights)", out, len(charts), len(nights))
    return out
