"""Load the eBPF pipeline, install an artifact's tables, flip versions, read registers.

Model tables exist in two versions; ``install`` writes the inactive one with
one batch update per table and then flips the ``active`` register in a single
map write, so a packet sees either the old or the new tables, never a mix.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
from pathlib import Path

import numpy as np

from chimera.data.tokens import PROTO_CLASSES
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact, RuleTable
from chimera.model.tokenizer import flag_class, len_bin
from chimera.reference.pipeline import global_dense
from chimera.targets.ebpf.libbpf import BpfObject, NetnsOf, enable_stats, run_stats, tc_attach, tc_detach
from chimera.testbed.outcome import ProgramTime

log = logging.getLogger(__name__)
NV = 2
COUNTERS = ("evictions", "new_flows", "parsed", "unparsed", "headroom_fail", "redirected", "samples")


def flag_dense(art: Artifact) -> np.ndarray:
    """The flag ternary table resolved for all 256 flag values (the TCAM's first match)."""
    return flag_class(np.arange(256), art.flag_ternary)


RULE_SHIFTS = (0, 8, 16, 24, 32, 48)  # proto, tcp_flags, dir, flow_pkts, sport, dport -> the 64-bit word


IP_LEN = 6  # the rule key field kept apart (hi); the others pack into the 64-bit word at RULE_SHIFTS
PROTO = 0


def _rule_rows(t: RuleTable, n_max: int) -> bytes:
    """struct rule_entry {u64 value_lo, mask_lo; u16 value_hi, mask_hi; u8 rule, label, pad[2]} x n_max.

    The 7-field rule key is packed as in the C: six fields into one 64-bit word, ip_len apart.
    """
    dt = np.dtype([("value_lo", "<u8"), ("mask_lo", "<u8"), ("value_hi", "<u2"), ("mask_hi", "<u2"),
                   ("rule", "u1"), ("label", "u1"), ("pad", "u1", 2)])
    a = np.zeros(n_max, dt)
    n = len(t)
    if n:
        for f, sh in enumerate(RULE_SHIFTS):
            a["value_lo"][:n] |= t.value[:, f].astype(np.uint64) << np.uint64(sh)
            a["mask_lo"][:n] |= t.mask[:, f].astype(np.uint64) << np.uint64(sh)
        a["value_hi"][:n] = t.value[:, IP_LEN]
        a["mask_hi"][:n] = t.mask[:, IP_LEN]
        a["rule"][:n] = t.rule
        if t.label is not None:
            a["label"][:n] = t.label
    return a.tobytes()


def soft_layout(t: RuleTable) -> tuple[RuleTable, list[int], list[int]]:
    """Order soft entries [TCP-only][any][UDP-only][other] and give each protocol its scan range.

    Soft rules fire if *any* entry matches, so order is free; an entry whose
    exact protocol differs from the packet's cannot match and need not be scanned.
    """
    proto, pmask = t.value[:, PROTO], t.mask[:, PROTO]
    exact = pmask == 0xFF
    groups = [exact & (proto == 6), ~exact, exact & (proto == 17), exact & (proto != 6) & (proto != 17)]
    order = np.concatenate([np.flatnonzero(g) for g in groups]).astype(np.int64)
    n = [int(g.sum()) for g in groups]
    tcp, wild, udp = n[0], n[1], n[2]
    lo = [0, tcp, tcp]                          # TCP, UDP, other
    hi = [tcp + wild, tcp + wild + udp, len(t)]
    return RuleTable(t.value[order], t.mask[order], t.rule[order], None), lo, hi


def table_images(art: Artifact) -> dict[str, bytes]:
    """Byte images of one version of every model table, laid out as the C structs."""
    C, Y, M = art.c("NUM_CENTROIDS"), art.c("NUM_CLASSES"), art.c("RF_FEATURES")
    if art.c("AGG_INCREMENTAL") != 1:
        raise TargetError("the eBPF dataplane runs the incremental attention form only",
                          "run batch / kernel-table variants on --target reference (the ablation marks them)")
    phi = np.zeros(C, np.dtype([("q", "<u4", M), ("k", "<u4", M)]))
    phi["q"], phi["k"] = art.phi_q, art.phi_k
    g, gz, hit = global_dense(art)
    glob = np.zeros(C * PROTO_CLASSES, np.dtype([("hit", "<u4"), ("pad", "<u4"), ("gz", "<i8"), ("g", "<i8", Y)]))
    glob["hit"] = hit.reshape(-1)
    glob["gz"] = gz.reshape(-1)
    glob["g"] = g.reshape(-1, Y)
    hmax, smax, rmax = max(art.c("HARD_ENTRIES"), 1), max(art.c("SOFT_ENTRIES"), 1), max(art.c("SOFT_RULES"), 1)
    softw = np.zeros((rmax, Y), "<i4")
    softw[: art.soft_weights.shape[0]] = art.soft_weights
    soft, lo, hi = soft_layout(art.soft_rules)
    params = struct.pack("<14I", art.c("ALPHA"), art.c("BETA"), art.c("GAMMA"), art.c("LAMBDA_H"),
                         art.c("MAP_VERSION"), art.c("HARD_ENTRIES"), art.c("SOFT_ENTRIES"), art.c("USE_WINDOW"),
                         *lo, *hi)
    ports = np.zeros(65536, np.uint8)
    ports[art.port_vocab] = np.arange(1, art.port_vocab.size + 1)
    lens = np.arange(65536)
    return {
        "len_tbl": len_bin(lens, art.len_lo).astype(np.uint8).tobytes(),
        "fine_tbl": len_bin(lens, art.len_fine_lo).astype(np.uint8).tobytes(),
        "flag_tbl": flag_dense(art).tobytes(),
        "map_tbl": art.map.astype(np.uint8).tobytes(),
        "port_tbl": ports.tobytes(),
        "val_tbl": np.concatenate(art.values).astype("<i4").tobytes(),
        "phi_tbl": phi.tobytes(),
        "wout_tbl": art.w_out.astype("<i4").tobytes(),
        "glob_tbl": glob.tobytes(),
        "hard_tbl": _rule_rows(art.hard_rules, hmax), "soft_tbl": _rule_rows(soft, smax),
        "softw_tbl": softw.tobytes(), "params_tbl": params,
    }


class EbpfPipeline:
    """One loaded BPF object (built for one artifact's sizes)."""

    def __init__(self, obj_path: Path, timing: bool = False) -> None:
        """``timing``: the kernel counts the attached program's run time while this pipeline lives."""
        self.obj = BpfObject(str(obj_path))
        self.attached: list[tuple[int, int]] = []  # (netns pid, ifindex)
        self.version: int | None = None
        self.prog_fd: int | None = None
        self._stats_fd = enable_stats() if timing else None

    def install(self, art: Artifact, fail_after: int | None = None) -> tuple[float, int]:
        """Write the inactive version and flip; returns (seconds from the first write to the flip, rows written).

        Only tables whose image differs from what the inactive version already holds are written, so a
        live Map update (docs/pipeline.md, "State and versions") writes the Map tables and the parameters,
        and a fresh object gets everything. Every write lands before the one flip: if one fails, the
        active version is untouched and the half-written one is never flipped to.
        ``fail_after``: fault injection (the fuzzer): after that many table writes, fail as a write would.
        """
        images = table_images(art)
        act = self.obj.map("active")
        cur = struct.unpack("<I", act.lookup(0))[0] & 1 if self.version is not None else 1
        new = 1 - cur
        rows = 0
        t0 = time.perf_counter()
        for name, img in images.items():
            m = self.obj.map(name)
            per = m.max_entries // NV  # entries per version (1 for the single-value soft tables)
            if len(img) != per * m.value_size:
                raise TargetError(f"table {name}: image of {len(img)} bytes, map holds {per}x{m.value_size}",
                                  "the eBPF object was built for another artifact; rebuild it")
            held = np.frombuffer(m.read_rows(new * per, per), np.uint8).reshape(per, m.value_size)
            changed = np.any(held != np.frombuffer(img, np.uint8).reshape(per, m.value_size), axis=1)
            if changed.any():
                if fail_after is not None and fail_after <= 0:
                    raise OSError(5, f"injected failure before writing table {name} (fuzzer fault injection)")
                m.write_rows(new * per, img)  # the inactive version, through the mapping
                rows += int(changed.sum())
                fail_after = None if fail_after is None else fail_after - 1
        if fail_after is not None:
            raise OSError(5, "injected failure before the flip (fuzzer fault injection)")
        act.update(0, struct.pack("<I", new))  # the flip: one syscall, after every write
        dt = time.perf_counter() - t0
        self.version = new
        return dt, rows

    def active_slot(self) -> int:
        """Which of the two table slots packets read now."""
        return struct.unpack("<I", self.obj.map("active").lookup(0))[0] & 1

    def attach(self, netns_pid: int, ports: list[tuple[str, str]], prog: str = "chimera_ingress") -> None:
        """Attach to clsact ingress of each in-port and redirect it to its out-port (names in the netns)."""
        fd = self.prog_fd = self.obj.prog_fd(prog)
        pm = self.obj.map("ports")
        with NetnsOf(netns_pid):
            for i_name, o_name in ports:
                try:
                    i_idx, o_idx = socket.if_nametoindex(i_name), socket.if_nametoindex(o_name)
                except OSError:
                    raise TargetError(f"interface {i_name} or {o_name} not found in the switch namespace",
                                      "the topology did not come up; see the log above") from None
                pm.update(i_idx, struct.pack("<I", o_idx))
                tc_attach(i_idx, fd)
                self.attached.append((netns_pid, i_idx))

    def counters(self) -> dict[str, int]:
        raw = np.frombuffer(self.obj.map("counters").read_rows(0, len(COUNTERS)), "<u8")
        return {n: int(v) for n, v in zip(COUNTERS, raw)}

    def ema(self) -> np.ndarray:
        return np.frombuffer(self.obj.map("ema").read_rows(0, 1), "<i8").copy()

    def class_ema(self) -> np.ndarray:
        return np.frombuffer(self.obj.map("class_ema").read_rows(0, 1), "<i8").copy()

    def coverage(self) -> np.ndarray:
        """The decision-point counters (chimera.formats.coverage; counted in -DCHIMERA_COVERAGE builds)."""
        m = self.obj.map("coverage")
        return np.frombuffer(m.read_rows(0, m.max_entries), "<u8").astype(np.int64)

    def clock_ns(self) -> int:
        """The last ``now`` a classified packet used (the shim's trace time, or the switch's own clock)."""
        return int(np.frombuffer(self.obj.map("clock").read_rows(0, 1), "<u8")[0])

    def samples(self) -> tuple[np.ndarray, int]:
        """(the token sample buffer, how many samples were taken in all)."""
        m = self.obj.map("sample")
        return np.frombuffer(m.read_rows(0, m.max_entries), "<u4").astype(np.int64), self.counters()["samples"]

    def program_time(self) -> ProgramTime | None:
        """The attached program's run time and runs since it was loaded (None: not timed, or not attached)."""
        if self._stats_fd is None or self.prog_fd is None:
            return None
        ns, runs = run_stats(self.prog_fd)
        return ProgramTime(ns, runs)

    def close(self) -> None:
        """Detach from every port this object was attached to, then unload."""
        for pid, idx in self.attached:
            try:
                with NetnsOf(pid):
                    tc_detach(idx)
            except (TargetError, OSError) as e:  # the namespace may already be gone: then so is the hook
                log.debug("detach ifindex %d in netns of %d: %s", idx, pid, e)
        self.attached.clear()
        self.obj.close()
        if self._stats_fd is not None:
            os.close(self._stats_fd)
            self._stats_fd = None
