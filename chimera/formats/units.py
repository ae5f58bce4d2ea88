"""Durations as people type and read them: ``--budget 10m``, ``max_replay_s: 30m``, "53.0 h"."""

from __future__ import annotations

import re

from chimera.errors import ConfigError

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d)?\s*")


def parse_duration(text: str | float | int, what: str = "duration") -> float:
    """Seconds from ``90``, ``90s``, ``10m``, ``1.5h`` or ``2d``; a clear error for anything else."""
    if isinstance(text, (int, float)):
        if text < 0:
            raise ConfigError(f"{what} {text} is negative", "give a duration such as 90s, 10m or 1h")
        return float(text)
    m = _RE.fullmatch(str(text))
    if not m:
        raise ConfigError(f"{what} {text!r} is not a duration", "give a number with s, m, h or d, e.g. 10m or 90s")
    return float(m.group(1)) * _UNITS[m.group(2) or ""]


def human_s(s: float) -> str:
    """A duration for a log line or an error: seconds below two minutes, minutes below two hours, else hours."""
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
