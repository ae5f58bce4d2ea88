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


def portable(path: str | Path) -> str:
    """A path as a record should keep it: relative to the checkout where it lies inside it, so the same file gives
    the same record in every clone (an artifact once kept its rules file's absolute path, and so its sha256 differed
    between two checkouts of one commit); a path outside the checkout stays as given."""
    p = Path(path)
    try:
        return p.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)
