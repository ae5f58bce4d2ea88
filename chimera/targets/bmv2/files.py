"""BMv2 conformance without a network: simple_switch reading and writing pcap files.

``simple_switch --use-files`` takes port 1's input from ``port1_in.pcap`` and writes
port 2's output to ``port2_out.pcap``; tables are installed with simple_switch_CLI
(Thrift) from the same entities the P4Runtime layer sends. The input frames carry the
trace-time shim (chimera.formats.shim), so BMv2 classifies on the trace's clock and the
result does not depend on how fast it reads its input. Every verdict is then compared
with the reference pipeline on the same clock, and so are the state registers (EMA,
class EMA, token samples, the clock) read once the last frame is out.
This needs only p4c-bm2-ss, simple_switch and simple_switch_CLI (no PI, no gRPC,
no root), so it runs wherever BMv2 is installed.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.errors import TargetError, ToolMissingError
from chimera.formats import shim
from chimera.formats.artifact import Artifact
from chimera.formats.registers import Registers
from chimera.targets.bmv2 import p4rt
from chimera.targets.bmv2.compiler import INSTALL_HINT, compile_p4
from chimera.targets.bmv2.schema import TABLE_BY_NAME, qualified
from chimera.targets.bmv2.thrift import THRIFT_PORT, read_state, run_cli
from chimera.targets.testbed import conformance
from chimera.testbed.collect import collect
from chimera.testbed.nodes import BuildOptions
from chimera.formats.snap import snap

log = logging.getLogger(__name__)
TOOLS = ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
START_WAIT_S = 30  # simple_switch waits this long before reading its input file (install takes ~4-10 s)
#: the Thrift server must answer within this long of the switch's start
THRIFT_TIMEOUT_S = 30.0
#: how often the switch's counters and output are polled while it reads its file
POLL_S = 0.5
#: after ingress has counted the last frame: its later register writes land within this long
SETTLE_S = 1.0
#: ingress has seen every frame but the output lacks some: they are taken as never coming once the output has not
#: grown for this long (on a loaded host BMv2 stalls for seconds; a fixed deadline cut slow runs short)
STALL_S = 15.0


def unavailable_reason() -> str | None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return f"{', '.join(missing)} not installed" if missing else None


def cli_commands(art: Artifact, ver: int = 1) -> list[str]:
    """simple_switch_CLI commands installing one version of the artifact, then the flip."""
    cmds = [f"table_add {qualified('port_map')} {qualified('set_egress')} 1 => 2"]
    for e in p4rt.model_entries(art, ver):
        tbl = TABLE_BY_NAME[e.table_id.split(".", 1)[1]]
        keys = []
        for k in tbl.keys:
            v = e.match.get(k.name)
            if k.match == "EXACT":
                keys.append(str(v))
            elif k.match == "TERNARY":
                keys.append("0&&&0" if v is None else f"{v[0]}&&&{v[1]}")
            else:
                keys.append(f"{v[0]}->{v[1]}")
        params = " ".join(str(int(x)) for x in e.action.args.values())
        # BMv2's native priorities: the smallest value wins (P4Runtime's are inverted by PI)
        prio = f" {p4rt.TOP_PRIORITY - e.priority + 1}" if any(k.match != "EXACT" for k in tbl.keys) else ""
        cmds.append(f"table_add {e.table_id} {e.action.name} {' '.join(keys)} => {params}{prio}")
    cmds.append(f"table_set_default {qualified('active_version')} {qualified('set_active')} {ver}")
    return cmds


@dataclass
class FileRunResult:
    sent: int
    received: int
    verdict_mismatches: int
    register_mismatches: int | None  # None: registers could not be read
    out_span_s: float = float("nan")  # first to last verdict out: simple_switch reads its file as fast as it can


def run_files(art: Artifact, table: PacketTable, work: Path, timeout_s: float = 300,
              build: BuildOptions | None = None) -> FileRunResult:
    """Run ``table``'s frames through chimera.p4 (or ``build``'s source) on simple_switch and compare with the
    reference. The output's time span is BMv2's own processing rate: the file is read without pacing."""
    why = unavailable_reason()
    if why:
        raise ToolMissingError(f"BMv2 file-mode conformance cannot run: {why}", INSTALL_HINT)
    work.mkdir(parents=True, exist_ok=True)
    js = compile_p4(art, work / "build", build)
    frames, _ = snap(normalized_frames(table, np.arange(len(table))))  # as a testbed replay sends them
    write_pcap(work / "frames.pcap", frames, table.ts_ns)
    replayed = read_pcap(work / "frames.pcap")
    clock_ns = np.asarray(table.ts_ns, np.int64) - shim.trace_origin(table.ts_ns)
    write_pcap(work / "port1_in.pcap", shim.insert_all(frames, clock_ns), table.ts_ns)
    write_pcap(work / "port2_in.pcap", [], [])
    out = work / "port2_out.pcap"
    out.unlink(missing_ok=True)
    with open(work / "switch.log", "w") as switch_log:
        sw = subprocess.Popen(["simple_switch", "--use-files", str(START_WAIT_S), "-i", f"1@{work}/port1", "-i",
                               f"2@{work}/port2", "--thrift-port", str(THRIFT_PORT), "--log-level", "off", str(js)],
                              stdout=switch_log, stderr=subprocess.STDOUT)
        regs = _drive(sw, art, len(frames), out, work, timeout_s)
    got = collect(frames, work / "port1_in.pcap", out)
    conf = conformance(art, replayed, got.verdicts, got.received, clock_ns, regs, trace_clock=True)
    ts = got_ts(out)
    return FileRunResult(len(frames), conf.checked, conf.reference_mismatches, conf.register_mismatches,
                         (int(ts.max()) - int(ts.min())) / 1e9 if ts.size > 1 else float("nan"))


def _drive(sw: subprocess.Popen[bytes], art: Artifact, frames: int, out: Path, work: Path,
           timeout_s: float) -> Registers:
    """Install the tables once Thrift answers, wait until every frame went through, read the registers; the
    switch is stopped whatever happens."""
    t0 = time.monotonic()
    try:
        while True:  # wait for the Thrift server
            try:
                if "port_map" in run_cli(["show_tables"]):
                    break
            except TargetError:
                pass
            if sw.poll() is not None or time.monotonic() - t0 > THRIFT_TIMEOUT_S:
                raise TargetError(f"simple_switch did not start within {THRIFT_TIMEOUT_S:.0f} s (see "
                                  f"{work / 'switch.log'})", "check the BMv2 install")
            time.sleep(POLL_S)
        # the input file is read unpaced, and simple_switch drops a frame that finds its egress queue full (64
        # frames by default): on a loaded host egress lags and the tail of a large capture went missing. A queue
        # that holds every frame makes the file run lossless whatever the load.
        out_text = run_cli([f"set_queue_depth {max(frames, 64)}", *cli_commands(art)])
        bad = [line for line in out_text.splitlines() if "Error" in line or "Invalid" in line]
        if bad:
            raise TargetError(f"simple_switch_CLI rejected entries: {bad[:3]}",
                              "the entities and the P4 program disagree: run tests/test_p4.py")
        if time.monotonic() - t0 > START_WAIT_S - 1:  # frames may have met half-installed tables
            raise TargetError(f"installing the tables took {time.monotonic() - t0:.0f} s, past simple_switch's "
                              f"{START_WAIT_S} s start delay", "run again on a less loaded machine")
        deadline = time.monotonic() + timeout_s
        last_n, grew = -1, time.monotonic()
        while time.monotonic() < deadline:  # until ingress has seen every frame and the output has every verdict
            time.sleep(POLL_S)
            c = read_state(None)["counters"]
            seen = c["parsed"] + c["unparsed"]  # every frame lands in exactly one of the two
            n = len(read_pcap(out)) if out.exists() and out.stat().st_size > 24 else 0
            if n != last_n:
                last_n, grew = n, time.monotonic()
            if seen >= frames and n == frames:
                break
            if seen >= frames and time.monotonic() - grew > STALL_S:
                log.warning("simple_switch: %d of %d frames in the output, none more for %.0f s", n, frames, STALL_S)
                break
        else:
            raise TargetError(f"simple_switch did not get through {frames} frames within {timeout_s:.0f} s "
                              f"(see {work / 'switch.log'})", "pass a larger timeout_s, or fewer frames")
        # Not on output growth alone: on a loaded host BMv2 can stall for seconds, and registers read
        # mid-replay differ from the reference's by the frames not yet through ingress. The counter is written
        # early in ingress, so the last frame's later register writes get a moment more.
        time.sleep(SETTLE_S)
        return read_state(art)
    finally:
        sw.terminate()
        sw.wait(timeout=10)


def got_ts(out: Path) -> np.ndarray:
    """The output frames' timestamps (ns), as simple_switch wrote them."""
    return np.asarray(read_pcap(out).ts_ns, np.int64) if out.exists() and out.stat().st_size > 24 else \
        np.zeros(0, np.int64)

