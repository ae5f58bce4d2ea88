"""``invoke replay --pcap FILE``: a user's own capture through a fresh testbed (or the reference) with a
trained model; one verdict per packet.

The model is a finished run's artifact (``--model RUN_DIR``, its first switch variant unless ``--variant``
names one) or, without one, the quickstart model trained here. Testbed targets also check conformance:
every verdict is compared with the reference pipeline on the same frames. Output:
``results/replay/<run>/verdicts.csv`` (per packet: time, addresses, ports, the verdict header's fields,
the class name) and a report with the class counts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from chimera import paths
from chimera.data.pcap import format_addresses, read_pcap
from chimera.controlplane.schedule import ScriptedInstall, ScriptedInstalls
from chimera.errors import ConfigError, ResultsError
from chimera.experiments.load import build_artifact
from chimera.experiments.stages.compile import slug
from chimera.formats.artifact import Artifact
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.registry import environment
from chimera.formats.verdict import NO_LABEL, VerdictFlag
from chimera.report.run import RunView
from chimera.targets.registry import select_target
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.replay import Clock, ReplayConfig
from chimera.targets.registry import TRUTH

log = logging.getLogger(__name__)
ROOT = paths.ROOT



class ReplayRecord(BaseModel):
    """Section ``replay``: what was replayed, with which model."""

    model_config = ConfigDict(extra="allow")
    pcap: str
    packets: int
    model: str
    artifact_sha256: str
    corrupt: list[str] = Field(default_factory=list)


class ReplayResult(BaseModel):
    """Section ``replay_result``: verdicts per class, and what the replay did (loss, conformance)."""

    model_config = ConfigDict(extra="allow")
    counts: dict[str, int]
    outcome: dict[str, Any] = Field(default_factory=dict)  # JSON out: the replay's outcome columns in the manifest

def model_artifact(model: Path | None, variant: str = "") -> tuple[Artifact, str]:
    """(artifact, where it came from)."""
    if model is None:
        built = build_artifact("quickstart")
        return built.art, "the quickstart model, trained here"
    run = RunView.open(model)  # refuses partial and failed runs
    arts = sorted(p for p in (run.path / "artifacts").glob("*.json") if not p.name.endswith(".software.json"))
    if variant:
        arts = [p for p in arts if p.stem == slug(variant)]
    if not arts:
        raise ResultsError(f"{run.path}: no switch artifact{f' for variant {variant!r}' if variant else ''} in "
                           "artifacts/", "pass a run of a switch variant (--variant NAME), or omit --model")
    return Artifact.load(arts[0]), f"{run.path}/artifacts/{arts[0].name}"


def load_installs(path: Path, base: Artifact) -> ScriptedInstalls:
    """A scripted install list (a fuzz failure's ``failure-N.installs.json``): ``[{before, artifact,
    fail_after}]``, artifact paths relative to the file."""
    try:
        rows = json.loads(path.read_text())
        script = [ScriptedInstall(int(r["before"]), Artifact.load(path.parent / r["artifact"]),
                                  None if r.get("fail_after") is None else int(r["fail_after"])) for r in rows]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not an install list ({e})",
                          "give the failure-N.installs.json a fuzz run wrote beside its pcap") from None
    return ScriptedInstalls(base, script)


def replay_pcap(pcap: Path, target: str = TRUTH, model: Path | None = None, variant: str = "",
                results_root: str | Path = "results", clock: Clock = "trace", pps: int | None = None,
                max_replay_s: float | None = None, artifact: Path | None = None, installs: Path | None = None,
                frames: str = "normalized", coverage: bool = False) -> Path:
    """``artifact``: an artifact file instead of a run's model (a fuzz failure's); ``installs``: Map installs
    between given packets (trace clock); ``frames``: as-captured sends the pcap's frames byte for byte;
    ``coverage``: build the dataplane with its decision-point counters (compared with the reference's)."""
    table = read_pcap(pcap)  # a corrupt or missing capture is named here, before any testbed exists
    art, source = (Artifact.load(artifact), str(artifact)) if artifact else model_artifact(model, variant)
    script = load_installs(installs, art) if installs else None
    if script is not None and clock != "trace":
        raise ConfigError("scripted installs sit between given packets: they need the trace clock", "drop --clock")
    sel = select_target(target, build=BuildOptions(coverage=coverage))
    replay = ReplayConfig(clock=clock, pps=pps, frames=frames,
                          **({"max_replay_s": max_replay_s} if max_replay_s else {}))
    with sel.target as tgt, RunDir(results_root, "replay", tgt.name) as run:
        run.manifest.record(kind="replay", git=git_state(ROOT), environment=environment(),
                            target_detail=tgt.describe(), target_requested=sel.requested, target_reason=sel.reason,
                            clock=tgt.clock(clock))
        run.manifest.put("replay", ReplayRecord(pcap=str(pcap), packets=len(table), model=source,
                                                artifact_sha256=art.sha256, corrupt=list(table.corrupt)))
        why = tgt.unsupported(art)
        if why:
            raise ResultsError(f"the {tgt.name} target cannot run this model: {why}", "use --target reference")
        res = tgt.run(art, table, run.path, "replay", replay=replay, control=script)
        v = res.verdicts
        names = np.array([*art.classes, "(unparsed)"])
        lab = np.where(v.label == NO_LABEL, len(art.classes), np.minimum(v.label, len(art.classes)))
        n = len(v)
        df = pd.DataFrame({"packet": np.arange(n), "ts_ns": table.ts_ns[:n], "src": format_addresses(table.src[:n]),
                           "dst": format_addresses(table.dst[:n]), "sport": table.sport[:n],
                           "dport": table.dport[:n], "proto": table.proto[:n],
                           "class": names[lab], **{f: getattr(v, f) for f in v.HEADER_FIELDS},
                           "hard_veto": (v.flags & VerdictFlag.HARD_VETO) > 0})
        df.to_csv(run.path / "verdicts.csv", index=False)
        counts = df["class"].value_counts().rename_axis("class").reset_index(name="packets")
        extra = res.columns()
        result = ReplayResult(counts={str(k): int(v) for k, v in zip(counts["class"], counts["packets"])},
                              outcome=extra)
        run.manifest.put("replay_result", result)
        lines = [f"Target **{tgt.name}** ({sel.reason}) · clock **{run.manifest.clock}**", "",
                 f"# Replay of {pcap.name}", "", f"- model: {source}",
                 f"- {len(table)} packets read; {len(df)} verdicts", ""]
        if table.corrupt:
            lines += [f"- the capture is corrupt past a point: {'; '.join(table.corrupt)} (read up to there)", ""]
        for k in ("lost", "reference_mismatches", "register_mismatches"):
            if extra.get(k) is not None:
                lines.append(f"- {k}: {extra[k]}")
        lines += ["", counts.to_markdown(index=False), "", "Per packet: `verdicts.csv`."]
        (run.path / "report.md").write_text("\n".join(lines) + "\n")
        (run.path / "summary.json").write_text(json.dumps({"counts": result.counts}))
    return run.final
