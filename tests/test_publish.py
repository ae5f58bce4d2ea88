"""Published runs (issue 21): only runs made from committed code are published, and only their light files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chimera.errors import ResultsError
from chimera.report.publish import publish

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp: Path, commit: str | None, dirty: bool = False, status: str = "complete") -> Path:
    d = tmp / "exp" / "20260101-000000-reference"
    (d / "figures").mkdir(parents=True)
    (d / "replay").mkdir()
    (d / "manifest.json").write_text(json.dumps({"experiment": "exp", "run_id": d.name, "target": "reference",
                                                 "status": status, "git": {"commit": commit, "dirty": dirty}}))
    (d / "ablation.csv").write_text("variant,macro_f1\nChimera,0.8968\n")
    (d / "packets.csv.gz").write_bytes(b"\x1f\x8b")
    (d / "replay" / "replay-trace-0.pcap").write_bytes(b"x")
    (d / "figures" / "f1.png").write_bytes(b"png")
    (d / "report.md").write_text("# r")
    return d


def test_publish_copies_light_files_of_committed_runs_only(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    run = _run(tmp_path, head)
    dest = publish(run, tmp_path / "published")
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["ablation.csv", "figures/f1.png", "manifest.json", "report.md"]
    with pytest.raises(ResultsError, match="uncommitted changes"):
        publish(_run(tmp_path / "d", head, dirty=True), tmp_path / "published")
    with pytest.raises(ResultsError, match="HEAD does not contain"):
        publish(_run(tmp_path / "a", "0" * 40), tmp_path / "published")
    with pytest.raises(ResultsError, match="running, not complete"):
        publish(_run(tmp_path / "s", head, status="running"), tmp_path / "published")
