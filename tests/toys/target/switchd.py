"""The toy switch's dataplane: a userspace process in s1's namespace that carries frames from port 1 to port 2,
each classified by the toy program and marked with the verdict header (as BMv2 is a userspace switch).

Its clock is the switches' rule (chimera.formats.shim): a frame with the trace-time shim is classified on the
shim's trace time, the shim removed, its index the verdict's ``seq``, and TRACE_CLOCK set; any other frame on the
process's own monotonic clock, which the verdict's ``ts_in`` carries. The switch node drives it by commands
(``serve``): load a model, install a new version live, unload, read the registers (the reference state's, as
the other switches report theirs). One process serves every model a testbed loads: it starts once per program.

    python -m chimera.targets.toy.switchd --program P.py --work DIR --in s1-eth1 --out s1-eth2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, PacketTable, parse_frames
from chimera.formats import shim, verdict
from chimera.formats.artifact import Artifact
from chimera.formats.verdict import ETH_P_VERDICT, NO_SEQ, VerdictFlag
from chimera.reference.pipeline import Out, SwitchState, params_of, tables_of

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


class Loaded:
    """The artifact's tables and the switch's state, made once; ``scratch`` is one frame's output."""

    def __init__(self, art: Artifact) -> None:
        self.art = art
        self.tables, self.params = tables_of(art), params_of(art)
        self.state = SwitchState.for_artifact(art)
        self.version = art.c("MAP_VERSION")
        self.classes = art.c("NUM_CLASSES")

    def scratch(self) -> Out:
        return Out(np.full(1, verdict.NO_LABEL, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
                   np.full(1, verdict.NO_RULE, np.int64), np.zeros(1, np.int64), np.zeros((1, self.classes), np.int64))

    def install(self, art: Artifact) -> int:
        """A new version's tables, the state kept (as a switch flips its active version); returns how many table
        entries differ from the old version's."""
        tables = tables_of(art)
        written = sum(int(np.sum(np.asarray(a) != np.asarray(b))) if np.shape(a) == np.shape(b) else int(np.size(b))
                      for a, b in zip(self.tables, tables))
        self.art, self.tables, self.params, self.version = art, tables, params_of(art), art.c("MAP_VERSION")
        return written

    def registers(self) -> dict[str, Any]:
        regs = self.state.registers()
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in regs.items() if k != "coverage"}


def one_row(frame: bytes) -> PacketTable:
    buf = np.frombuffer(frame, np.uint8)
    cols = parse_frames(buf, np.zeros(1, np.int64), np.array([len(frame)], np.uint32),
                        np.array([LINKTYPE_ETHERNET], np.uint16))
    return PacketTable(ts_ns=np.zeros(1, np.int64), caplen=np.array([len(frame)], np.uint32),
                       wirelen=np.array([len(frame)], np.uint32), offset=np.zeros(1, np.int64),
                       capture=np.zeros(1, np.uint16), linktype=np.array([LINKTYPE_ETHERNET], np.uint16), **cols)


def load_program(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("chimera_toy_program", path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def marked(frame: bytes, v: tuple[int, int, int, int, int], version: int, t_in: int, seq: int) -> bytes:
    flags, label, rule, score, c = v
    orig_type = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= 14 else 0
    hdr = verdict.pack(flags=flags, label=label, rule_id=rule, score=score, centroid=c, map_version=version,
                       ts_in=t_in, ts_out=time.monotonic_ns(), orig_type=orig_type, seq=seq)
    return frame[:12] + struct.pack("!H", ETH_P_VERDICT) + hdr + frame[14:]


def serve(program: Path, port_in: str, port_out: str, work: Path) -> None:
    """Carry frames until terminated. On SIGUSR1 it runs the command in ``<work>/command`` (JSON: ``op`` one of
    ``load`` (an artifact, fresh state), ``install`` (a new version's tables, the state kept), ``unload`` (drop
    frames until the next load) or ``registers``; ``path``: the artifact) and answers in ``<work>/answer``.
    Commands are served between two frames, never inside one: a frame is classified and marked with one version.
    Without a model, frames are dropped."""
    prog = load_program(program)
    loaded: Loaded | None = None
    asked: list[int] = []
    signal.signal(signal.SIGUSR1, lambda *_: asked.append(1))

    def run(cmd: dict[str, Any]) -> Any:
        nonlocal loaded
        op = cmd["op"]
        if op in ("load", "unload"):
            loaded = Loaded(Artifact.load(Path(cmd["path"]))) if op == "load" else None
            return 0
        if loaded is None:
            raise RuntimeError(f"{op}: no model loaded")
        if op == "install":
            return loaded.install(Artifact.load(Path(cmd["path"])))
        if op == "registers":
            return loaded.registers()
        raise RuntimeError(f"unknown command {op!r}")

    def serve_asked() -> None:
        while asked:
            asked.pop()
            try:
                answer = {"ok": run(json.loads((work / "command").read_text()))}
            except Exception as e:  # noqa: BLE001 - the node raises it, with the process still serving
                answer = {"error": f"{type(e).__name__}: {e}"}
            _write(work / "answer", json.dumps(answer))

    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    rx.bind((port_in, 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    rx.settimeout(0.02)   # idle: look at what was asked
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)   # protocol 0: sends, receives nothing
    tx.bind((port_out, 0))
    _write(work / "ready", str(os.getpid()))
    while True:
        serve_asked()
        try:
            frame, addr = rx.recvfrom(65535)
        except TimeoutError:
            continue
        if addr[2] == PACKET_OUTGOING or loaded is None:
            continue
        t_in = time.monotonic_ns()
        try:
            fields, orig = shim.strip(frame)
            ts, seq, trace = int(fields["trace_ns"]), int(fields["index"]), int(VerdictFlag.TRACE_CLOCK)
        except ValueError:
            orig, ts, seq, trace = frame, t_in, NO_SEQ, 0
        flags, *rest = prog.classify(loaded, one_row(orig), ts)
        tx.send(marked(orig, (flags | trace, *rest), loaded.version, t_in, seq))


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="where its commands, answers and readiness go")
    ap.add_argument("--in", dest="port_in", required=True)
    ap.add_argument("--out", dest="port_out", required=True)
    a = ap.parse_args()
    serve(a.program, a.port_in, a.port_out, a.work)


if __name__ == "__main__":
    main()
