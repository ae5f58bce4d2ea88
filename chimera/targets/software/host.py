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
from chimera.testbed.replay import Pace, ReplayConfig, ReplayFiles, ReplaySession

log = logging.getLogger(__name__)
DAEMON_START_TIMEOUT_S = 30.0
#: after the send, how long the classifier may go without answering a frame before the wait for its last
#: answers ends (while it answers, the wait goes on, however late a busy machine schedules it)
ANSWER_IDLE_S = 10.0
SC_INTF = "sc-eth0"


def answered(tb: Any) -> int:
    """Frames sc has sent out of sc-eth0: the classifier sends one marked frame per frame it receives, and sc
    sends nothing else (no IPv6, chimera.testbed.nodes). Read from sc's own network namespace through procfs."""
    for line in Path(f"/proc/{tb.sc.pid}/net/dev").read_text().splitlines():
        name, _, counters = line.partition(":")
        if name.strip() == SC_INTF:
            return int(counters.split()[9])  # receive: 8 counters, then transmit: bytes, packets
    raise TargetError(f"{SC_INTF} is not in sc's network namespace", "the testbed was torn down under the run")


def wait_for_answers(tb: Any, daemon: subprocess.Popen, before: int, expected: int) -> None:
    """Wait until the classifier has answered ``expected`` frames since its counter read ``before``: the
    replay's fixed drain alone cut off a classifier that a loaded machine ran late (CI lost 329 of 600 frames
    so); its socket's buffer holds the backlog meanwhile."""
    last, since = -1, time.monotonic()
    while (done := answered(tb) - before) < expected and daemon.poll() is None:
        if done != last:
            last, since = done, time.monotonic()
        elif time.monotonic() - since > ANSWER_IDLE_S:
            log.warning("[sc] the classifier answered %d of %d frames, then none for %.0f s: the rest count as lost",
                        done, expected, ANSWER_IDLE_S)
            return
        time.sleep(0.05)


def host_pace(replay: ReplayConfig) -> Pace:
    """The † and forwarding paths run on their hosts' own clocks: the pace a switch-clock replay would use."""
    if replay.mode == "topspeed":
        return Pace("topspeed")
    if replay.mode == "pps" and replay.pps:
        return Pace("pps", pps=replay.pps)
    return Pace("speed", speed=replay.speed)


def classify_replay(tb: Any, daemon: subprocess.Popen, pcap: Path, pace: Pace, out_dir: Path, slug: str,
                    frames: int) -> ReplayFiles:
    """One replay through sc, whose captures stay open until the classifier has answered every frame sent."""
    before = answered(tb)
    with ReplaySession(tb.h1, tb.h2, out_dir, slug,
                       lambda: tb.s1.alive() or (None if daemon.poll() is None else
                                                 f"the classifier on sc exited ({daemon.returncode})")) as session:
        session.send(pcap, pace, frames, desc=slug)
        wait_for_answers(tb, daemon, before, session.sent - session.files.failed_to_send)
    return session.files


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
            files = classify_replay(tb, daemon, pcap, pace, run_dir / "replay", slug, len(frames))
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
