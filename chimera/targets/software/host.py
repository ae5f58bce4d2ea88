"""Run a † configuration through the software classifier host ``sc`` on the testbed, and check it.

The switch (already redirecting h1 -> sc -> h2) is the caller's; this starts the
classifier daemon on sc, replays, collects, and re-runs the same classifier
offline on the same frames with the daemon's own timestamps (conformance of
the software path). Under the trace clock the frames carry the trace-time shim
and sc classifies on it (chimera.targets.software.classifier), so a † row is the
same in every run of a seed; under the switch clock it is sc's own.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from chimera.errors import TargetError
from chimera.targets.base import TargetResult
from chimera.targets.software.classifier import SoftwareClassifier
from chimera.testbed.collect import account, collect, latency_summary, per_packet_latency, rates
from chimera.testbed.outcome import Conformance, ReplayOutcome
from chimera.formats.snap import SENDER_MTU
from chimera.testbed.replay import Pace, ReplayConfig, replay

log = logging.getLogger(__name__)
DAEMON_START_TIMEOUT_S = 30.0


def host_pace(replay: ReplayConfig) -> Pace:
    """The † and forwarding paths run on their hosts' own clocks: the pace a switch-clock replay would use."""
    if replay.mode == "topspeed":
        return Pace("topspeed")
    if replay.mode == "pps" and replay.pps:
        return Pace("pps", pps=replay.pps)
    return Pace("speed", speed=replay.speed)


def run_on_classifier_host(tb: Any, model_json: Path, pcap: Path, frames: list[bytes], pace: Pace,
                           run_dir: Path, slug: str, sent: list[bytes] | None = None, overhead: int = 0
                           ) -> TargetResult:
    """``frames``: the replayed frames without a shim; ``sent``/``overhead``: the frames as ``pcap`` holds them
    and the bytes the shim adds (trace clock), else ``frames`` and 0."""
    sent = frames if sent is None else sent
    ready = run_dir / "replay" / f"{slug}.sc-ready"
    ready.unlink(missing_ok=True)
    with open(run_dir / "replay" / f"{slug}.sc.log", "wb") as log_f:
        daemon = tb.sc.popen([sys.executable, "-m", "chimera.targets.software.classifier", "--model", str(model_json),
                              "--intf", "sc-eth0", "--ready-file", str(ready)], stdout=log_f, stderr=subprocess.STDOUT)
        try:
            t0 = time.monotonic()
            while not ready.exists():
                if daemon.poll() is not None or time.monotonic() - t0 > DAEMON_START_TIMEOUT_S:
                    raise TargetError(f"the software classifier on sc did not start (see {log_f.name})",
                                      "check that the model file is valid and python can import chimera there")
                time.sleep(0.1)
            files = replay(tb.h1, tb.h2, pcap, pace, run_dir / "replay", slug, len(frames),
                           switch_alive=lambda: tb.s1.alive() or (None if daemon.poll() is None else
                                                                   f"the classifier on sc exited ({daemon.returncode})"))
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
    got = collect(frames, files.sent, files.received)
    acc, _ = account(frames, got, files.failed_to_send, files.dropped_at_receiver, SENDER_MTU, overhead)
    clf = SoftwareClassifier(json.loads(model_json.read_text()))
    rows = np.flatnonzero(got.received)
    v = got.verdicts
    mism = 0
    for i in rows:
        mism += clf.on_wire(sent[i], int(got.ts_in[i]))[1] != (int(v.flags[i]), int(v.label[i]), int(v.rule_id[i]),
                                                                int(v.score[i]), int(v.centroid[i]))
    if mism:
        log.error("software classifier: %d verdicts differ from the offline re-run", mism)
    outcome = ReplayOutcome("switch", pace.describe(), acc, rates(got), latency_summary(got), got.foreign, got.unmarked,
                            conformance=Conformance(mism, None, int(rows.size)))
    log.info("[sc] %s: %d/%d packets classified by the software classifier host, %d lost", slug, rows.size,
             len(frames), acc.lost)
    return TargetResult(got.verdicts, None, outcome, per_packet_latency(got))
