"""What every task shares: logging, and ChimeraError turned into a message and an exit code."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from invoke import Context, Exit

from chimera.paths import ROOT

VENV_PY = ROOT / ".venv" / "bin" / "python"


def python() -> str:
    """The project's interpreter: .venv's where it exists, else this one."""
    return str(VENV_PY if VENV_PY.exists() else sys.executable)


def _logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", datefmt="%H:%M:%S")


def cli(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ChimeraError into a clean message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(c: Context, *args: Any, **kwargs: Any) -> Any:
        _logging(bool(kwargs.get("verbose", False)))
        from chimera.errors import ChimeraError
        try:
            return fn(c, *args, **kwargs)
        except ChimeraError as e:
            raise Exit(f"error: {e}", code=2) from None
        except KeyboardInterrupt:
            raise Exit("interrupted", code=130) from None

    return wrapper
