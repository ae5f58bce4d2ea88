"""A finished run directory, read back: manifest, configuration and tidy tables.

Reports and figures are rendered from this alone (never from objects of the
run that made it), so ``invoke report RUN_DIR`` re-renders any run, and a report
can only show what the run directory records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from chimera.errors import ResultsError

NOT_FINISHED = {"running": "it is still running, or was killed (status 'running')",
                "failed": "it failed (status 'failed'); its partial output is for debugging, not a result"}


@dataclass
class RunView:
    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @staticmethod
    def open(path: str | Path, allow_unfinished: bool = False) -> "RunView":
        """Read a run directory; a partial or failed one is refused (with why) unless ``allow_unfinished``."""
        p = Path(path)
        if not (p / "manifest.json").is_file():
            raise ResultsError(f"{p}: no manifest.json: not a run directory",
                               "pass results/<experiment>/<run-id> (invoke run-experiment prints it)")
        try:
            m = json.loads((p / "manifest.json").read_text())
        except json.JSONDecodeError as e:
            raise ResultsError(f"{p / 'manifest.json'}: not valid JSON ({e})", "the run directory is damaged") from None
        status = m.get("status")
        if not allow_unfinished and (status != "complete" or p.name.endswith(".partial") or ".failed" in p.parts):
            why = NOT_FINISHED.get(str(status), f"its status is {status!r}")
            raise ResultsError(f"{p}: refusing to report on this run: {why}",
                               "report on a complete run (results/<experiment>/<run-id>), or rerun the experiment")
        cfg_path = p / "config.yaml"
        cfg = yaml.safe_load(cfg_path.read_text()) if cfg_path.is_file() else m.get("config") or {}
        return RunView(p, m, cfg or {})

    @property
    def kind(self) -> str:
        return str(self.config.get("kind", "variants"))

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def table(self, name: str) -> pd.DataFrame:
        """A CSV of the run (cached)."""
        if name not in self._tables:
            f = self.path / name
            if not f.is_file():
                raise ResultsError(f"{self.path}: {name} is missing", "the run directory is incomplete; rerun it")
            self._tables[name] = pd.read_csv(f)
        return self._tables[name]

    @property
    def figures_dir(self) -> Path:
        d = self.path / "figures"
        d.mkdir(exist_ok=True)
        return d

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.path))
