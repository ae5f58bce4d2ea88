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

import numpy as np
import pandas as pd

from chimera.data.pcap import format_addresses, read_pcap
from chimera.errors import ResultsError
from chimera.experiments.stages.compile import build_artifact, slug
from chimera.formats.artifact import Artifact
from chimera.formats.rundir import RunDir, environment, git_state
from chimera.formats.verdict import NO_LABEL, VerdictFlag
from chimera.report.run import RunView
from chimera.targets.select import select_target
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


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


def replay_pcap(pcap: Path, target: str = "reference", model: Path | None = None, variant: str = "",
                results_root: str | Path = "results") -> Path:
    table = read_pcap(pcap)  # a corrupt or missing capture is named here, before any testbed exists
    art, source = model_artifact(model, variant)
    tgt = select_target(target, ReplayConfig())
    with RunDir(results_root, "replay", tgt.name) as run:
        run.manifest.update({"kind": "replay", "pcap": str(pcap), "packets": len(table), "model": source,
                             "artifact_sha256": art.sha256, "git": git_state(ROOT), "environment": environment(),
                             "target_detail": tgt.describe(), "corrupt": table.corrupt})
        try:
            why = tgt.unsupported(art)
            if why:
                raise ResultsError(f"the {tgt.name} target cannot run this model: {why}", "use --target reference")
            res = tgt.run(art, table, run.path, "replay")
        finally:
            tgt.close()
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
        extra = {k: x for k, x in res.extra.items() if not isinstance(x, dict)}
        run.manifest.update({"counts": dict(zip(counts["class"], counts["packets"].astype(int))), "extra": extra})
        lines = [f"# Replay of {pcap.name}", "", f"- target **{tgt.name}**, model: {source}",
                 f"- {len(table)} packets read; {len(df)} verdicts", ""]
        if table.corrupt:
            lines += [f"- the capture is corrupt past a point: {'; '.join(table.corrupt)} (read up to there)", ""]
        for k in ("lost", "reference_mismatches", "register_mismatches"):
            if k in extra:
                lines.append(f"- {k}: {extra[k]}")
        lines += ["", counts.to_markdown(index=False), "", "Per packet: `verdicts.csv`."]
        (run.path / "report.md").write_text("\n".join(lines) + "\n")
        (run.path / "summary.json").write_text(json.dumps({"counts": run.manifest["counts"]}, default=int))
    return run.final
