"""Δt_install on the switch targets: a static full install, and live Map updates under traffic.

For each switch target that can run here (eBPF; BMv2 where installed), the
quickstart model is loaded (the static install: every table of one version plus
the flip) and the quickstart test split is replayed while a slow loop installs,
every tick, a version whose *every* Map entry differs (the worst live update: a
full Map rewrite plus the parameters plus the flip). Δt_install is timed from the
first write to the acknowledged flip, as the experiments do. The same run checks
conformance across all those versions, so a fast but wrong install cannot pass
unnoticed. Goals (issue 11): live update ≤ 20 ms on eBPF, ≤ 1 s on BMv2.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from chimera.bench.results import bench_run, summary
from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import ControlStep, SlowLoop
from chimera.controlplane.recluster import VERSION_MASK, MapVersion, Proposal, churn
from chimera.errors import ConfigError
from chimera.experiments.load import build_artifact
from chimera.targets.registry import describe_all, select_target
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)
GOAL_MS = {"ebpf": 20.0, "bmv2": 1000.0}
# eBPF replays at the original timing, BMv2 paced below its capacity; one forced install per tick
SETTINGS: dict[str, tuple[dict[str, Any], float, int | None]] = {
    "ebpf": ({"mode": "speed"}, 0.1, None), "bmv2": ({"mode": "pps", "pps": 300}, 0.8, 3000)}


class EveryEntryLoop(SlowLoop):
    """Each tick proposes a version whose every Map entry differs (centroid ids rotated by one)."""

    def propose(self, regs: dict[str, Any], t_trace_s: float) -> tuple[ControlStep, Proposal | None]:
        st, _ = super().propose(regs, t_trace_s)
        cur = self.current
        cand = MapVersion((cur.version + 1) & VERSION_MASK, cur.len_lo, cur.len_fine_lo,
                          (cur.map + 1) % self.base.c("NUM_CENTROIDS"))
        p = Proposal(cand, 1.0, st.samples, churn(cur, cand), self.fitter.centers, 0.0)
        st.delta, st.churn, st.churn_map = 1.0, p.churn["total"], p.churn["map_exact"]
        return st, p


def _summary(ms: np.ndarray) -> dict[str, float]:
    if not ms.size:
        return {"n": 0, "median_ms": np.nan, "iqr_ms": np.nan, "p99_ms": np.nan, "max_ms": np.nan}
    s = summary(ms.tolist())
    return {"n": s["n"], "median_ms": s["median"], "iqr_ms": s["iqr"], "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": s["max"]}


def main(targets: tuple[str, ...] = ("ebpf", "bmv2")) -> dict[str, Any]:
    why = describe_all()
    runnable = [t for t in targets if why.get(t) is None]
    if not runnable:
        raise ConfigError("no switch target can run here: " + "; ".join(f"{t}: {why[t]}" for t in targets),
                          "run the install bench as root where the eBPF testbed works (see README)")
    built = build_artifact("quickstart")
    art = built.art
    with bench_run("install", {"targets": runnable, "skipped": {t: why[t] for t in targets if t not in runnable},
                               "settings": {t: SETTINGS[t] for t in runnable}, "model": "quickstart"}) as run:
        rows, summary = [], {}
        for name in runnable:
            pace, t_cp, n = SETTINGS[name]
            table = built.data.ds.table.take(built.data.replay_rows[:n]) if n else built.data.replay_table
            loop = EveryEntryLoop(art, ControlPlaneConfig(t_cp_s=t_cp, tau_map=0.0, min_samples=16))
            (run.path / name).mkdir()
            with select_target(name).target as target:  # under traffic, on the switch's clock: live installs
                res = target.run(art, table, run.path / name, "install", replay=ReplayConfig.model_validate({"clock": "switch", **pace}),
                                 control=loop)
            x = res.columns()
            steps = [st for st in loop.steps if st.decision == "install"]
            for st in steps:
                rows.append({"target": name, "kind": "live map update", "step": st.step, "install_ms": st.install_ms,
                             "entries_written": st.entries_written, "map_entries_changed": st.churn_map})
            rows.append({"target": name, "kind": "static full install", "step": -1, "install_ms": x["install_ms"],
                         "entries_written": np.nan, "map_entries_changed": np.nan})
            live = np.array([st.install_ms for st in steps])
            summary[name] = {"static_full_install_ms": x["install_ms"], "live": _summary(live),
                             "failed_installs": sum(st.decision == "failed" for st in loop.steps),
                             "goal_ms": GOAL_MS[name], "lost": x["lost"],
                             "reference_mismatches": x["reference_mismatches"],
                             "register_mismatches": x["register_mismatches"],
                             "conformance_checked": x["conformance_checked"]}
            s = summary[name]
            log.info("[%s] static full install %.1f ms; live full-Map update + flip under traffic: %d installs, "
                     "median %.2f ms (IQR %.2f, p99 %.2f; goal <= %.0f ms); %d lost, %d verdicts differ from the "
                     "reference", name, s["static_full_install_ms"], s["live"]["n"], s["live"]["median_ms"],
                     s["live"]["iqr_ms"], s["live"]["p99_ms"], GOAL_MS[name], s["lost"], s["reference_mismatches"])
        pd.DataFrame(rows).to_csv(run.path / "installs.csv", index=False)
        run.manifest.record(**{"summary": summary})
        lines = ["# Δt_install", "", "Live update = every Map entry rewritten + parameters + flip, timed from the first "
                 "write to the acknowledged flip, while the quickstart test split is replayed.", "",
                 "| target | static full install (ms) | live installs | median (ms) | IQR (ms) | p99 (ms) | goal (ms) "
                 "| lost | verdicts ≠ reference |", "|---|---|---|---|---|---|---|---|---|"]
        for name, s in summary.items():
            lv = s["live"]
            lines.append(f"| {name} | {s['static_full_install_ms']:.1f} | {lv['n']} | {lv['median_ms']:.2f} | "
                         f"{lv['iqr_ms']:.2f} | {lv['p99_ms']:.2f} | {s['goal_ms']:.0f} | {s['lost']} | "
                         f"{s['reference_mismatches']} |")
        for t, w in run.manifest.section("params", {})["skipped"].items():
            lines.append(f"\n{t} not measured: {w}")
        (run.path / "report.md").write_text("\n".join(lines) + "\n")
    log.info("install bench results: %s", run.final)
    return summary
