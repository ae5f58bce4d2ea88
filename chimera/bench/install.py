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

import numpy as np
import pandas as pd
from typing_extensions import TypedDict  # pydantic takes a TypedDict from here on Python < 3.12 (InstallResult)

from chimera.bench.results import BenchParams, BenchResult, bench_run, summary
from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import ControlStep, SlowLoop
from chimera.controlplane.recluster import VERSION_MASK, MapVersion, Proposal, churn
from chimera.errors import ConfigError
from chimera.experiments.load import build_artifact
from chimera.formats.registers import Registers
from chimera.formats.rows import Cells
from chimera.targets.base import BenchProfile, Capability
from chimera.targets.registry import TRUTH, describe_all, select_target, target_class, with_capability
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)


def benched() -> tuple[str, ...]:
    """The testbeds the switch benches hold to goals (their record's ``bench``), in registry order."""
    return tuple(c.name for c in with_capability(Capability.TESTBED) if c.bench is not None)


def runnable_switches(targets: tuple[str, ...] | None, bench: str) -> tuple[list[str], dict[str, str]]:
    """The switch targets a bench measures here (default: every benched one), and why each other cannot run; none
    runnable is an error naming each one's reason."""
    targets = targets or benched()
    why = describe_all()
    runnable = [t for t in targets if why.get(t) is None]
    if not runnable:
        raise ConfigError("no switch target can run here: " + "; ".join(f"{t}: {why[t]}" for t in targets),
                          f"run the {bench} bench as root where the eBPF testbed works (see README)")
    return runnable, {t: str(why[t]) for t in targets if t not in runnable}


def profile(name: str) -> BenchProfile:
    """A target's goals and settings: the replay pace (one forced install per tick), T_cp, packets replayed."""
    p = target_class(name).bench
    if p is None:
        raise ConfigError(f"the {name} target states no bench goals", f"bench one of: {', '.join(benched())}")
    return p


class EveryEntryLoop(SlowLoop):
    """Each tick proposes a version whose every Map entry differs (centroid ids rotated by one)."""

    def propose(self, regs: Registers, t_trace_s: float) -> tuple[ControlStep, Proposal | None]:
        st, _ = super().propose(regs, t_trace_s)
        cur = self.current
        cand = MapVersion((cur.version + 1) & VERSION_MASK, cur.len_lo, cur.len_fine_lo,
                          (cur.map + 1) % self.base.c("NUM_CENTROIDS"))
        p = Proposal(cand, 1.0, st.samples, churn(cur, cand), self.fitter.centers, 0.0)
        st.delta, st.churn, st.churn_map = 1.0, p.churn["total"], p.churn["map_exact"]
        return st, p


class LiveStats(TypedDict):
    """The live installs' times (ms) of one target."""
    n: int
    median_ms: float
    iqr_ms: float
    p99_ms: float
    max_ms: float


class TargetInstalls(TypedDict):
    """One target's installs: the static full install, the live ones' stats, the goal, and conformance."""
    static_full_install_ms: float | None
    live: LiveStats
    failed_installs: int
    goal_ms: float
    lost: int | None
    reference_mismatches: int | None
    register_mismatches: int | None
    conformance_checked: int | None


def _summary(ms: np.ndarray) -> LiveStats:
    if not ms.size:
        return {"n": 0, "median_ms": np.nan, "iqr_ms": np.nan, "p99_ms": np.nan, "max_ms": np.nan}
    s = summary(ms.tolist())
    return {"n": int(s["n"]), "median_ms": s["median"], "iqr_ms": s["iqr"], "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": s["max"]}


class InstallResult(BenchResult):
    summary: dict[str, TargetInstalls]


def main(targets: tuple[str, ...] | None = None) -> dict[str, TargetInstalls]:
    runnable, skipped = runnable_switches(targets, "install")
    built = build_artifact("quickstart")
    art = built.art
    with bench_run("install", {"targets": runnable, "skipped": skipped,
                               "settings": {t: (profile(t).install_pace, profile(t).install_t_cp_s,
                                                profile(t).install_max_packets) for t in runnable}, "model": "quickstart"}) as run:
        rows: list[Cells] = []
        summary: dict[str, TargetInstalls] = {}
        for name in runnable:
            prof = profile(name)
            pace, t_cp, n = prof.install_pace, prof.install_t_cp_s, prof.install_max_packets
            table = built.data.ds.table.take(built.data.replay_rows[:n]) if n else built.data.replay_table
            loop = EveryEntryLoop(art, ControlPlaneConfig(t_cp_s=t_cp, tau_map=0.0, min_samples=16))
            (run.path / name).mkdir()
            with select_target(name).target as target:  # under traffic, on the switch's clock: live installs
                res = target.run(art, table, run.path / name, "install", replay=ReplayConfig.model_validate({"clock": "switch", **pace}),
                                 control=loop)
            out = res.outcome
            conf = out.conformance if out is not None else None
            steps = [st for st in loop.steps if st.decision == "install"]
            for st in steps:
                rows.append({"target": name, "kind": "live map update", "step": st.step, "install_ms": st.install_ms,
                             "entries_written": st.entries_written, "map_entries_changed": st.churn_map})
            rows.append({"target": name, "kind": "static full install", "step": -1,
                         "install_ms": out.install_ms if out is not None else None,
                         "entries_written": np.nan, "map_entries_changed": np.nan})
            live = np.array([st.install_ms for st in steps])
            summary[name] = {"static_full_install_ms": out.install_ms if out is not None else None,
                             "live": _summary(live),
                             "failed_installs": sum(st.decision == "failed" for st in loop.steps),
                             "goal_ms": prof.install_goal_ms, "lost": out.accounting.lost if out is not None else None,
                             "reference_mismatches": conf.reference_mismatches if conf else None,
                             "register_mismatches": conf.register_mismatches if conf else None,
                             "conformance_checked": conf.checked if conf else None}
            s = summary[name]
            log.info("[%s] static full install %.1f ms; live full-Map update + flip under traffic: %d installs, "
                     "median %.2f ms (IQR %.2f, p99 %.2f; goal <= %.0f ms); %d lost, %d verdicts differ from %s",
                     name, s["static_full_install_ms"], s["live"]["n"], s["live"]["median_ms"],
                     s["live"]["iqr_ms"], s["live"]["p99_ms"], prof.install_goal_ms, s["lost"], s["reference_mismatches"],
                     target_class(TRUTH).title)
        pd.DataFrame(rows).to_csv(run.path / "installs.csv", index=False)
        run.manifest.put("result", InstallResult(summary=summary))
        lines = ["# Δt_install", "", "Live update = every Map entry rewritten + parameters + flip, timed from the first "
                 "write to the acknowledged flip, while the quickstart test split is replayed.", "",
                 "| target | static full install (ms) | live installs | median (ms) | IQR (ms) | p99 (ms) | goal (ms) "
                 "| lost | verdicts ≠ reference |", "|---|---|---|---|---|---|---|---|---|"]
        for name, s in summary.items():
            lv = s["live"]
            lines.append(f"| {name} | {s['static_full_install_ms']:.1f} | {lv['n']} | {lv['median_ms']:.2f} | "
                         f"{lv['iqr_ms']:.2f} | {lv['p99_ms']:.2f} | {s['goal_ms']:.0f} | {s['lost']} | "
                         f"{s['reference_mismatches']} |")
        params = run.manifest.get("params", BenchParams)
        for t, w in (params.skipped if params is not None else {}).items():
            lines.append(f"\n{t} not measured: {w}")
        (run.path / "report.md").write_text("\n".join(lines) + "\n")
    log.info("install bench results: %s", run.final)
    return summary
