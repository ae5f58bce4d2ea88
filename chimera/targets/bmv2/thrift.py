"""BMv2's Thrift interface through simple_switch_CLI: table writes in file mode, register reads.

BMv2's P4Runtime server neither writes nor reads registers, so register reads
(counters, EMA) go through Thrift on every BMv2 target; the file-mode
conformance harness also installs tables through it.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, Callable

from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.schema import COUNTER_SLOTS, qualified

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


def read_register(name: str, port: int = THRIFT_PORT, runner: Callable[[str], str] | None = None) -> list[int]:
    """One register's values (unsigned) by its P4 name."""
    return parse_register(run_cli([f"register_read {qualified(name)}"], port, runner), qualified(name))


def _signed64(values: list[int]) -> list[int]:
    return [v - (1 << 64) if v >= 1 << 63 else v for v in values]


def read_state(art: Artifact | None, port: int = THRIFT_PORT,
               runner: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Counters and the state registers conformance compares (centroid and class EMA, token samples),
    in the same shape as the eBPF switch's ``registers()``."""
    c = read_register("reg_counters", port, runner)
    out: dict[str, Any] = {"counters": dict(zip(COUNTER_SLOTS, c))}
    if art is not None:
        out.update({"ema": _signed64(read_register("reg_ema", port, runner))[: art.c("NUM_CENTROIDS")],
                    "class_ema": _signed64(read_register("reg_class_ema", port, runner))[: art.c("NUM_CLASSES")],
                    "sample": read_register("reg_sample", port, runner)[: art.c("SAMPLE_SLOTS")],
                    "sample_count": c[COUNTER_SLOTS.index("samples")]})
    return out
