"""Where the repository's own files are: one definition, read by every stage.

The package runs from its checkout (``pip install -e``): the experiment YAMLs,
``p4/``, ``pcaps/``, ``docs/`` and ``results/published/`` sit beside it.
"""

from __future__ import annotations

from pathlib import Path

#: the package directory (chimera/)
PACKAGE = Path(__file__).resolve().parent
#: the repository root: tasks.py, pyproject.toml, experiments/, p4/, results/
ROOT = PACKAGE.parent
EXPERIMENTS = ROOT / "experiments"
P4 = ROOT / "p4"
PCAPS = ROOT / "pcaps"
DOCS = ROOT / "docs"
BUILD = ROOT / "build"
RESULTS = ROOT / "results"
PUBLISHED = RESULTS / "published"
