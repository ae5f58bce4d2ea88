"""BMv2's Thrift interface through simple_switch_CLI: table writes in file mode, register reads.

BMv2's P4Runtime server neither writes nor reads registers, so register reads
(counters, EMA) go through Thrift on every BMv2 target; the file-mode
conformance harness also installs tables through it.
"""

from __future__ import annotations

import re
import subprocess
from typing import Callable

from chimera.errors import TargetError

THRIFT_PORT = 9090
CLI = "simple_switch_CLI"


def run_cli(commands: list[str], port: int = THRIFT_PORT, runner: Callable[[str], str] | None = None) -> str:
    """Feed commands to simple_switch_CLI; ``runner`` runs a shell line elsewhere (e.g. in a node's namespace)."""
    text = "\n".join(commands) + "\n"
    if runner is not None:
        return runner(f"printf '%s' {_quote(text)} | {CLI} --thrift-port {port}")
    r = subprocess.run([CLI, "--thrift-port", str(port)], input=text, capture_output=True, text=True)
    if r.returncode != 0:
        raise TargetError(f"{CLI} failed ({r.returncode}): {r.stderr[-300:]}", "check that BMv2's Thrift server runs")
    return r.stdout


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def parse_register(out: str, qualified_name: str) -> list[int]:
    """Values of ``register_read NAME`` output ("NAME= 1, 2, 3")."""
    m = re.search(re.escape(qualified_name) + r"\s*=\s*([-\d,\s]+)", out)
    if m is None:
        raise TargetError(f"could not read register {qualified_name} over Thrift: {out[-300:]}",
                          f"check that {CLI} is installed beside simple_switch_grpc")
    return [int(x) for x in m.group(1).replace(",", " ").split()]
