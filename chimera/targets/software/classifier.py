"""The software classifier host: float-model verdicts for configurations a switch cannot run (†).

Exact softmax and dense attention run here, on host ``sc`` behind s1: the
switch redirects each frame to sc, this process classifies it with the float
model (the same math as chimera.model.train.TrainedModel.scores plus the
float fusion and hard veto of the runner), inserts the verdict header and
sends the frame back to s1, which forwards it to h2. So their latency and
throughput are measured through the network, not asserted.

``SoftwareClassifier.on_wire`` is the single per-packet function: the daemon
calls it on live frames, and the conformance check calls it offline on the
same frames with the daemon's own timestamps, which must give the same verdicts.
Its clock is the switch's rule (chimera.formats.shim): a frame carrying the
trace-time shim is classified on the shim's trace time, the shim removed and its
index returned as the verdict's ``seq``; any other frame on the host's own clock.
So under the trace clock a † verdict depends on the trace alone, not on the pace
or the host's scheduling, as a switch's verdict does.

    python -m chimera.targets.software.classifier --model MODEL.json --intf sc-eth0
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, parse_frames
from chimera.data.tokens import IAT_BUCKETS, IAT_SHIFT, TS_UNIT_MASK
from chimera.errors import ConfigError
from chimera.formats import shim, verdict
from chimera.formats.verdict import ETH_P_VERDICT, NO_LABEL, NO_RULE, NO_SEQ, SCORE_MAX, VerdictFlag
from chimera.model.config import FusionConfig
from chimera.model.tokenizer import flag_class
from chimera.model.train import TrainedModel
from chimera.formats.artifact import RuleTable
from chimera.rules.spec import KEY_FIELDS, Rules
from chimera.rules.ternary import fires_by_group, first_match

log = logging.getLogger(__name__)
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SCORE_SCALE = 1_000_000  # float margin -> verdict score (fixed point, saturating)


def export_model(model: TrainedModel, rules: Rules, W: np.ndarray, fusion: FusionConfig, beta: float,
                 path: Path) -> Path:
    """Write everything the classifier needs as one JSON file: the float tables, not the integer ones."""
    if model.decay is not None:
        raise ConfigError("the model has the recency term, which the software classifier host does not implement",
                          "it is measured offline only (invoke bench --what directions)")
    cfg = model.config
    a, b = fusion.coefficients(beta)
    G, Gz = model.global_scores()
    mp = model.map
    body = {
        "classes": model.classes, "keys": cfg.keys, "window": cfg.window, "uses_window": cfg.uses_window,
        "uses_global": cfg.uses_global, "kernel": model.kernel.tolist(),
        "values": [v.tolist() for v in model.values], "w_out": model.w_out.tolist(),
        "global": G.tolist(), "global_z": Gz.tolist(),
        "len_lo": mp.len_lo.tolist(), "len_fine_lo": mp.len_fine_lo.tolist(), "map": mp.centroid_of_key.tolist(),
        "port_vocab": mp.port_vocab.tolist(),
        "hard": rules.hard_table(model.classes).stored().tolist(), "soft": rules.soft_table().stored().tolist(),
        "soft_weights": np.asarray(W).tolist(), "alpha": a, "beta": b, "lambda_h": fusion.lambda_h,
    }
    path.write_text(json.dumps(body))
    return path


@dataclass
class _Flow:
    orient: int
    last: int
    pkts: int
    ring: deque  # (centroid, u [Y]) of the attended tokens


class SoftwareClassifier:
    """Per-flow state (exact canonical 5-tuples: no slots, no collisions) and the float model."""

    def __init__(self, model: dict[str, Any]) -> None:  # JSON in: the exported float model
        self.m = model
        self.K = np.asarray(model["kernel"])
        self.values = [np.asarray(v) for v in model["values"]]
        self.w_out = np.asarray(model["w_out"])
        self.G, self.Gz = np.asarray(model["global"]), np.asarray(model["global_z"])
        self.len_lo, self.len_fine_lo = np.asarray(model["len_lo"]), np.asarray(model["len_fine_lo"])
        self.cmap = np.asarray(model["map"])
        self.port_id = {int(p): i + 1 for i, p in enumerate(model["port_vocab"])}
        self.hard = RuleTable.of(np.asarray(model["hard"], np.int64).reshape(-1, 2 * len(KEY_FIELDS) + 2), labelled=True)
        self.soft = RuleTable.of(np.asarray(model["soft"], np.int64).reshape(-1, 2 * len(KEY_FIELDS) + 1), labelled=False)
        self.W = np.asarray(model["soft_weights"], np.float64).reshape(-1, len(model["classes"]))
        self.fclass = flag_class(np.arange(256))
        self.dense = model["keys"] == "dense"
        self.flows: dict[tuple, _Flow] = {}

    def pair_id(self, sport: int, dport: int) -> int:
        """The port id (docs/pipeline.md step 3b): the higher-ranked vocabulary id of the two ports."""
        sid, did = self.port_id.get(sport, 0), self.port_id.get(dport, 0)
        return did if sid == 0 or (did != 0 and did < sid) else sid

    def on_wire(self, frame: bytes, t_in: int) -> tuple[bytes, tuple[int, int, int, int, int], int]:
        """(the frame without any shim, its verdict, its seq) for a frame as it arrives at ``t_in`` ns:
        a shimmed frame on the shim's trace time (seq = its index), any other on ``t_in`` (seq = NO_SEQ)."""
        try:
            fields, orig = shim.strip(frame)
        except ValueError:
            return frame, self.classify(frame, t_in), NO_SEQ
        return orig, self.classify(orig, int(fields["trace_ns"])), int(fields["index"])

    def classify(self, frame: bytes, ts_ns: int) -> tuple[int, int, int, int, int]:
        """(flags, label, rule_id, score, centroid) for one untagged Ethernet frame."""
        buf = np.frombuffer(frame, np.uint8)
        cols = parse_frames(buf, np.zeros(1, np.int64), np.array([len(frame)], np.uint32),
                            np.array([LINKTYPE_ETHERNET], np.uint16))
        if not (cols["status"][0] == 0 and cols["ip_version"][0] == 4 and not cols["vlan"][0]
                and cols["ethertype"][0] == 0x0800):
            return int(VerdictFlag.UNPARSED), NO_LABEL, NO_RULE, 0, 0
        src, dst = int(cols["src4"][0]), int(cols["dst4"][0])
        sp, dp, proto = int(cols["sport"][0]), int(cols["dport"][0]), int(cols["proto"][0])
        ip_len, tflags = int(cols["ip_len"][0]), int(cols["tcp_flags"][0])
        swap = int((src, sp) > (dst, dp))
        key = (min((src, sp), (dst, dp)), max((src, sp), (dst, dp)), proto)
        tsu = (ts_ns >> IAT_SHIFT) & TS_UNIT_MASK
        flags = 0
        f = self.flows.get(key)
        if f is None:
            f = self.flows[key] = _Flow(swap, tsu, 0, deque(maxlen=None if self.dense else self.m["window"]))
            flags |= int(VerdictFlag.NEW_FLOW)
            iat_b = 0
        else:
            iat_b = 1 + min(((tsu - f.last) & TS_UNIT_MASK).bit_length(), IAT_BUCKETS - 2)
        d = swap ^ f.orient
        f.pkts = min(f.pkts + 1, 0xFFFF)
        f.last = tsu
        lbin = int(np.searchsorted(self.len_lo, ip_len, side="right") - 1)
        fbin = int(np.searchsorted(self.len_fine_lo, ip_len, side="right") - 1)
        pclass = {6: 1, 17: 2, 1: 3}.get(proto, 0)
        fc = int(self.fclass[tflags])
        c = int(self.cmap[(((lbin * IAT_BUCKETS + iat_b) * 2 + d) * 8 + fc) * 4 + pclass])
        sub = (fbin * 2 + d, iat_b * 2 + d, fc * 4 + pclass, self.pair_id(sp, dp) * 2 + d,
               min(f.pkts.bit_length(), 15))
        f.ring.append((c, sum(self.values[t][sub[t]] for t in range(5)) @ self.w_out))
        a, z = self.G[c, pclass].copy(), float(self.Gz[c, pclass])
        if self.m["uses_global"]:
            flags |= int(VerdictFlag.GLOBAL_HIT)
        if self.m["uses_window"]:
            for ci, u in f.ring:
                a += self.K[c, ci] * u
                z += self.K[c, ci]
        s_nn = a / max(z, 1e-6)
        rk = np.array([[proto, tflags, d, min(f.pkts, 255), sp, dp, ip_len]], np.int64)
        fires = fires_by_group(rk, self.soft.value, self.soft.mask, self.soft.rule, self.W.shape[0])[0]
        fused = self.m["alpha"] * s_nn + self.m["beta"] * (fires @ self.W if self.W.size else 0)
        label = int(np.argmax(fused))
        top2 = np.sort(fused)[-2:]
        score = min(int((top2[1] - top2[0]) * SCORE_SCALE), SCORE_MAX)
        rule = NO_RULE
        hit = int(first_match(rk, self.hard.value, self.hard.mask)[0])
        if hit >= 0:
            rule = int(self.hard.rule[hit])
            if self.m["lambda_h"]:
                assert self.hard.label is not None
                label, score, flags = int(self.hard.label[hit]), SCORE_MAX, flags | int(VerdictFlag.HARD_VETO)
        return flags, label, rule, score, c


def mark(frame: bytes, v: tuple[int, int, int, int, int], t_in: int, t_out: int, seq: int = NO_SEQ) -> bytes:
    """The frame with the verdict header inserted after Ethernet."""
    flags, label, rule, score, c = v
    orig_type = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= 14 else 0
    hdr = verdict.pack(flags=flags, label=label, rule_id=rule, score=score, centroid=c, ts_in=t_in, ts_out=t_out,
                       orig_type=orig_type, seq=seq)
    return frame[:12] + struct.pack("!H", ETH_P_VERDICT) + hdr + frame[14:]


def serve(model_path: Path, intf: str, ready_file: Path | None = None) -> None:
    """Classify every frame arriving on ``intf`` and send it back out, marked."""
    clf = SoftwareClassifier(json.loads(model_path.read_text()))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((intf, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    if ready_file is not None:
        ready_file.write_text(str(os.getpid()))
    log.info("software classifier on %s (%s)", intf, model_path)
    while True:
        frame, addr = s.recvfrom(65535)
        if addr[2] == PACKET_OUTGOING:
            continue
        t_in = time.monotonic_ns()
        out, v, seq = clf.on_wire(frame, t_in)
        s.send(mark(out, v, t_in, time.monotonic_ns(), seq))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--intf", required=True)
    ap.add_argument("--ready-file", type=Path)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    serve(a.model, a.intf, a.ready_file)


if __name__ == "__main__":
    main()
