"""BMv2's Thrift interface through simple_switch_CLI: table writes in file mode, register reads.

BMv2's P4Runtime server neither writes nor reads registers, so register reads
(counters, EMA) go through Thrift on every BMv2 target; the file-mode
conformance harness also installs tables through it.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
from typing import Callable

from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.formats.coverage import N_POINTS
from chimera.formats.registers import Registers
from chimera.targets.bmv2.schema import COUNTER_SLOTS, REGISTER_BY_NAME, qualified

THRIFT_PORT = 9090
EMA_BITS = REGISTER_BY_NAME["reg_ema"].bitwidth
CLI = "simple_switch_CLI"


@functools.lru_cache(maxsize=1)
def cli_argv() -> tuple[str, ...]:
    """How to start simple_switch_CLI. It is a Python script that needs the ``thrift`` module; a
    ``python3`` first on PATH (pyenv, a venv) often lacks it, so it runs with the first interpreter that has
    it (the system's first: Debian's python3-thrift)."""
    path = shutil.which(CLI)
    if path is None:
        return (CLI,)
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except OSError:
        return (path,)
    if b"python" not in first:
        return (path,)
    for py in ("/usr/bin/python3", shutil.which("python3") or ""):
        if py and subprocess.run([py, "-c", "import thrift"], capture_output=True).returncode == 0:
            return (py, path)
    return (path,)


def run_cli(commands: list[str], port: int = THRIFT_PORT, runner: Callable[[str], str] | None = None) -> str:
    """Feed commands to simple_switch_CLI; ``runner`` runs a shell line elsewhere (e.g. in a node's namespace)."""
    text = "\n".join(commands) + "\n"
    argv = [*cli_argv(), "--thrift-port", str(port)]
    if runner is not None:
        return runner(f"printf '%s' {_quote(text)} | {shlex.join(argv)}")
    r = subprocess.run(argv, input=text, capture_output=True, text=True)
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


def signed(values: list[int], bits: int) -> list[int]:
    """Register values read as unsigned ``bits``-bit two's complement, as signed integers. The EMA registers are
    63 bits wide: BMv2's Thrift read saturates values of 2^63 and above (chimera.p4 says why)."""
    return [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in values]


def read_state(art: Artifact | None, port: int = THRIFT_PORT,
               runner: Callable[[str], str] | None = None, coverage: bool = False) -> Registers:
    """Counters and the state registers conformance compares (centroid and class EMA, token samples, the
    clock, and with ``coverage`` the decision-point counters), in the same shape as the eBPF switch's
    ``registers()``. One CLI session reads them all (one snapshot, not one process per register)."""
    names = ["reg_counters"] + (["reg_ema", "reg_class_ema", "reg_sample", "reg_clock"] if art is not None else [])
    names += ["reg_cov"] if coverage and art is not None else []
    out_text = run_cli([f"register_read {qualified(n)}" for n in names], port, runner)
    regs = {n: parse_register(out_text, qualified(n)) for n in names}
    c = regs["reg_counters"]
    out: Registers = {"counters": dict(zip(COUNTER_SLOTS, c))}
    if art is not None:
        out.update({"ema": signed(regs["reg_ema"], EMA_BITS)[: art.c("NUM_CENTROIDS")],
                    "class_ema": signed(regs["reg_class_ema"], EMA_BITS)[: art.c("NUM_CLASSES")],
                    "sample": regs["reg_sample"][: art.c("SAMPLE_SLOTS")],
                    "sample_count": c[COUNTER_SLOTS.index("samples")], "clock": regs["reg_clock"][0]})
        if coverage:
            out["coverage"] = regs["reg_cov"][: N_POINTS]
    return out
