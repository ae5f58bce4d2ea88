"""What the Mininet testbed needs on the host, checked once with a fix-it message (Mininet's pathCheck style)."""

from __future__ import annotations

import os
import shutil

from chimera.errors import ToolMissingError

#: tool -> Debian package that provides it
TESTBED_TOOLS = {"tcpreplay": "tcpreplay", "tcpdump": "tcpdump", "mnexec": "mininet", "ethtool": "ethtool",
                 "taskset": "util-linux", "ip": "iproute2"}


def testbed_unavailable_reason() -> str | None:
    """Why the Mininet testbed (any switch) cannot run here, or None if it can."""
    if os.geteuid() != 0:
        return "not running as root (the testbed creates network namespaces and loads dataplanes)"
    missing = [f"{t} (apt-get install {p})" for t, p in TESTBED_TOOLS.items() if shutil.which(t) is None]
    if missing:
        return "missing tools: " + ", ".join(missing)
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet's Python package is not importable (apt-get install mininet; use the .venv from bootstrap)"
    return None


def require_testbed() -> None:
    why = testbed_unavailable_reason()
    if why is not None:
        raise ToolMissingError(f"the testbed cannot run: {why}", "run as root after scripts/bootstrap")
