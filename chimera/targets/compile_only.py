"""The contract of a compile-only target: a compiler that says whether a program fits and what it allocates.

Such a target runs no traffic (``Capability.NONE``: no testbed, never ``--target auto``), so the testbed contract
in ``base.py`` is not its interesting part. What a kind may ask of it is here: ``report_resources``, one artifact's
program through the compiler, returned as the compiler's verdict. A kind asks ``isinstance(target,
CompileOnlyTarget)``, never for a target by name, so a second backend (another ASIC's compiler) is one more
subclass and no kind changes. The contract is its own module because ``base.py`` is imported by every run: a
change there would make every published run stale, while this one is imported by the runs that use it.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path

from chimera.formats.artifact import Artifact
from chimera.formats.tree import RangeTree
from chimera.targets.base import Target


@dataclass(frozen=True)
class ResourceReport:
    """A compiler's verdict on one artifact's program: whether it fits, the compiler's own words where it does
    not (a refusal is a result, not only an error), and the allocation's flat columns where it does."""

    fits: bool
    reason: str
    compiler: str
    columns: dict[str, float | int | str]


class CompileOnlyTarget(Target):
    """A target whose one measurement is its compiler's resource report."""

    @abc.abstractmethod
    def report_resources(self, art: Artifact, build_dir: Path) -> ResourceReport:
        """Compile ``art``'s program under ``build_dir`` and read what the compiler allocated (or why it refused)."""

    @abc.abstractmethod
    def report_tree(self, tree: RangeTree, art: Artifact, build_dir: Path) -> ResourceReport:
        """Compile a decision tree's tables (Leo's program) under ``build_dir`` and read what the compiler allocated;
        ``art`` gives the flow table and the clock the tree's program shares with the pipeline's."""
