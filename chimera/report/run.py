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
from chimera.formats.rundir import Manifest
from chimera.formats.tables import TableSchema
from chimera.report.publish import table_file

NOT_FINISHED = {"running": "it is still running, or was killed (status 'running')",
                "failed": "it failed (status 'failed'); its partial output is for debugging, not a result"}


@dataclass
class RunView:
    path: Path
    manifest: Manifest
    config: dict[str, Any]  # YAML in: the run's config as the manifest stores it
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @staticmethod
    def open(path: str | Path, allow_unfinished: bool = False) -> "RunView":
        """Read a run directory; a partial or failed one is refused (with why) unless ``allow_unfinished``."""
        p = Path(path)
        if not (p / "manifest.json").is_file():
            raise ResultsError(f"{p}: no manifest.json: not a run directory",
                               "pass results/<experiment>/<run-id> (invoke run-experiment prints it)")
        try:
            status = json.loads((p / "manifest.json").read_text()).get("status")
        except (json.JSONDecodeError, AttributeError):
            status = None
        if not allow_unfinished and (status != "complete" or p.name.endswith(".partial") or ".failed" in p.parts):
            why = NOT_FINISHED.get(str(status), f"its status is {status!r}")
            raise ResultsError(f"{p}: refusing to report on this run: {why}",
                               "report on a complete run (results/<experiment>/<run-id>), or rerun the experiment")
        m = Manifest.read(p / "manifest.json")
        cfg_path = p / "config.yaml"
        cfg = yaml.safe_load(cfg_path.read_text()) if cfg_path.is_file() else m.config
        return RunView(p, m, cfg or {})

    @property
    def kind(self) -> str:
        return str(self.config.get("kind", "variants"))

    def has(self, t: TableSchema) -> bool:
        return table_file(self.path, t.name) is not None

    def table(self, t: TableSchema) -> pd.DataFrame:
        """One of the run's tables (cached); a published run may hold it gzipped (``publish.GZIP_FROM_BYTES``)."""
        if t.name not in self._tables:
            p = table_file(self.path, t.name)
            if p is None or p.name == t.name:
                self._tables[t.name] = t.read(self.path)   # as written (or missing: read says so)
            else:   # gzipped: TableSchema.read's key check, here (formats/tables.py is in every run's code)
                df = pd.read_csv(p)
                missing = [k for k in t.keys if k not in df.columns]
                if missing:
                    raise ResultsError(f"{p}: key columns {missing} missing",
                                       "the table was written by another version")
                self._tables[t.name] = df
        return self._tables[t.name]

    @property
    def figures_dir(self) -> Path:
        d = self.path / "figures"
        d.mkdir(exist_ok=True)
        return d

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.path))
