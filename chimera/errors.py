"""Error types that carry the problem and the fix.

Library code raises these; only the CLI/tasks turn them into exit codes. Every
message names what went wrong (file, field, value) and what to do about it.
"""

from __future__ import annotations

from typing import Any


class ChimeraError(Exception):
    """Base class: ``problem`` says what is wrong, ``fix`` what to do."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}" + (f"\n  fix: {fix}" if fix else ""))


class PcapError(ChimeraError):
    """A capture file cannot be read (missing, empty, corrupt, unknown link type)."""


class DatasetError(ChimeraError):
    """A dataset directory or labels file cannot be turned into a dataset."""


class ConfigError(ChimeraError):
    """An experiment/model/rule configuration is invalid."""


class BudgetError(ChimeraError):
    """A compiled model breaks one of the dataplane budgets of the paper."""

    def __init__(self, budget: str, value: float, limit: float, fix: str) -> None:
        self.budget, self.value, self.limit = budget, value, limit
        super().__init__(f"budget '{budget}' exceeded: {value:g} > limit {limit:g}", fix)


class ToolMissingError(ChimeraError):
    """A required external tool (clang, bpftool, tcpreplay, simple_switch_grpc...) is absent."""


class TargetError(ChimeraError):
    """A dataplane target failed to build, load or run."""


class ResultsError(ChimeraError):
    """A run's results cannot be written (disk full, permissions, a name that escapes results/)."""


def disk_full_message(path: str, needed_bytes: int | None = None) -> tuple[str, str]:
    """(problem, fix) for a full disk under ``path``: names the directory, what is free and what is needed."""
    import shutil
    from pathlib import Path

    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    free = shutil.disk_usage(p).free
    need = f"; it needs about {needed_bytes / 2**20:.1f} MiB more" if needed_bytes else ""
    return (f"no space left on the disk of {path} ({free / 2**20:.1f} MiB free){need}",
            f"free space there (df -h {p}) or write somewhere else (--results / --out / --data-root)")


def validation_problems(e: Any) -> str:
    """A pydantic ValidationError as one line: ``field.sub: what is wrong; ...`` (every error, not the first)."""
    return "; ".join(f"{'.'.join(str(x) for x in er['loc']) or '(top)'}: {er['msg']}" for er in e.errors())
