"""The golden baseline (``results/baseline/golden.json``, committed): what a nightly is checked against.

One small JSON file: per experiment run (experiment x target) the variants' macro-F1 and conformance
counters, per tracked bench its median and IQR (for the record: bands come from each machine's own history),
the git commit it was taken at and each run's code fingerprint then (``code_changes`` compares them), and every
deliberate update (who, when, why, whether it
was forced past a failing night). No pcaps, no tables: the run directories stay out of git.
``invoke nightly --update-baseline`` is the only writer; it refuses a night that regressed or failed to run
unless ``--force --reason ...``; nothing moves it automatically.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chimera import paths
from chimera.errors import ResultsError
from chimera.report.provenance import Scope, TreeCode, fingerprint_at
from chimera.report.sections import BenchStat, ExperimentNight

FORMAT_VERSION = 2  # 2: the record of updates (who, when, why, forced)
GOLDEN = "golden.json"
ROOT = paths.ROOT
UPDATE = "run `invoke nightly --update-baseline` once on a trusted build to (re)create it"


def code_changes(golden: "Golden | None", scopes: Mapping[str, Scope], tree: TreeCode) -> dict[str, str | None]:
    """Per night run key, None where that run's code (its scope's fingerprint, the one the book judges
    freshness by) is the golden's, else why not. One fingerprint for both: the golden records each run's as it
    was taken (``codes``, from the tree that ran it, committed or not); a golden without one for a run is
    compared at its commit. ``tree``: the working tree, read once per night."""
    out: dict[str, str | None] = {}
    if golden is None:
        return {k: "no golden" for k in scopes}
    root = tree.root
    for key, scope in scopes.items():
        now = tree.fingerprint(scope)
        then = golden.codes.get(key)
        if then is None:
            if not golden.git:
                out[key] = "the golden records neither this run's code nor a commit to compare it with"
                continue
            try:
                then = fingerprint_at(golden.git, root, scope)
            except ResultsError as e:
                out[key] = f"the golden's commit {golden.git[:10]} cannot be read ({e.problem})"
                continue
        try:
            files = tree.changed_files(golden.git, scope) if then != now and golden.git else []
            changed = ": " + ", ".join(files[:4]) if files else ""
        except ResultsError:   # the golden's commit is not in this clone (a shallow one, or a copy): no file list
            changed = (f"; the golden's commit {str(golden.git)[:10]} is not in this clone, so the files cannot "
                       "be named")
        out[key] = None if then == now else f"this run's code changed since the golden ({then} -> {now}{changed})"
    return out


def other_floats(changes: Mapping[str, str | None], golden: "Golden | None", probe: str) -> dict[str, str | None]:
    """``changes`` with every run whose code is the golden's marked as judged on other floats, where the golden's
    float probe is not tonight's: bit-identical F1 then says nothing about the code (chimera.nightly.floats)."""
    if golden is None or golden.float_probe is None or golden.float_probe == probe:
        return dict(changes)
    why = (f"the golden's floats are another machine's (float probe {golden.float_probe} there, {probe} here): "
           "bit-identical F1 is judged only on the floats the golden was taken on; the F1 tolerance check still is")
    return {k: why if v is None else v for k, v in changes.items()}


def run_codes(scopes: Mapping[str, Scope], tree: TreeCode) -> dict[str, str]:
    """Each run's code fingerprint in the working tree (what a golden taken tonight records)."""
    return {k: tree.fingerprint(s) for k, s in scopes.items()}


class Golden(BaseModel):
    """golden.json, typed: what the checks compare a night with (the same models as a night's measured)."""
    model_config = ConfigDict(extra="allow")
    format_version: int | None = None
    git: str | None = None
    code: str | None = None
    taken: str | None = None
    from_run: str | None = None
    experiments: dict[str, ExperimentNight] = Field(default_factory=dict)
    #: the machine's float probe when it was taken (chimera.nightly.floats; None: a golden from before the probe)
    float_probe: str | None = None
    #: each run's code fingerprint when the golden was taken (the run's own: chimera.report.provenance)
    codes: dict[str, str] = Field(default_factory=dict)
    benches: dict[str, BenchStat] = Field(default_factory=dict)
    updates: list[dict[str, Any]] = Field(default_factory=list)  # JSON out: the golden file's update log, as written


def load_golden(baseline_dir: Path, any_format: bool = False) -> Golden:
    """The golden baseline; ``any_format`` (a retake with --update-baseline) accepts an older format version."""
    p = baseline_dir / GOLDEN
    if not p.is_file():
        raise ResultsError(f"no golden baseline at {p}", UPDATE)
    try:
        g = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ResultsError(f"{p} is not readable JSON ({e})", UPDATE) from None
    if not isinstance(g, dict) or (g.get("format_version") != FORMAT_VERSION  and not any_format):
        raise ResultsError(f"{p} has format version {g.get('format_version') if isinstance(g, dict) else '?'}, "
                           f"this build reads version {FORMAT_VERSION}", UPDATE)
    try:
        return Golden.model_validate(g)
    except ValidationError as e:
        raise ResultsError(f"{p} is not a golden this build reads ({str(e).splitlines()[0]})", UPDATE) from None


# dict[str, Any]: JSON out: the golden file's measured values, metadata and update entry
def save_golden(baseline_dir: Path, measured: dict[str, Any], meta: dict[str, Any], update: dict[str, Any]) -> Path:
    """Write the golden; ``update`` (who, when, why, forced, from which night) is appended to its record."""
    baseline_dir.mkdir(parents=True, exist_ok=True)
    p = baseline_dir / GOLDEN
    updates: list[dict[str, Any]] = []  # JSON in and out: the update log read from the golden file
    if p.is_file():
        try:
            updates = list(json.loads(p.read_text()).get("updates", []))
        except (OSError, json.JSONDecodeError, AttributeError):
            updates = []
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"format_version": FORMAT_VERSION, **meta, **measured, "updates": [*updates, update]},
                              indent=1, sort_keys=True))
    os.replace(tmp, p)
    return p
