"""The eBPF target: the Mininet testbed (chimera.testbed.target) with the tc program in s1."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from chimera.compile.artifact import Artifact
from chimera.errors import TargetError, ToolMissingError
from chimera.testbed.target import TestbedTarget

log = logging.getLogger(__name__)
TOOLS = {"clang": "clang", "tcpreplay": "tcpreplay", "tcpdump": "tcpdump", "mnexec": "mininet",
         "ethtool": "ethtool", "taskset": "util-linux", "ip": "iproute2"}


def unavailable_reason(need_clang: bool = True) -> str | None:
    """Why the testbed (with the eBPF switch unless ``need_clang`` is False) cannot run here, or None."""
    if os.geteuid() != 0:
        return "not running as root (the testbed creates network namespaces and loads BPF programs)"
    missing = [f"{t} (apt-get install {p})" for t, p in TOOLS.items()
               if shutil.which(t) is None and (need_clang or t != "clang")]
    if missing:
        return "missing tools: " + ", ".join(missing)
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet's Python package is not importable (apt-get install mininet; use the .venv from bootstrap)"
    try:
        from chimera.targets.ebpf.libbpf import lib
        lib()
    except ToolMissingError as e:
        return e.problem
    return None


def require_available() -> None:
    why = unavailable_reason()
    if why is not None:
        raise ToolMissingError(f"the eBPF target cannot run: {why}",
                               "run as root after scripts/bootstrap, or use --target reference")


class EbpfTarget(TestbedTarget):
    """s1 is the eBPF/tc switch."""

    name = "ebpf"

    def __init__(self, cfg: Any = None, build_dir: Path | None = None) -> None:
        from chimera.testbed.nodes import EbpfSwitch
        super().__init__(cfg, build_dir)
        self.switch_cls = EbpfSwitch

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clock": "switch ingress (CLOCK_MONOTONIC)"}

    def run_software(self, model_json: Path, table: Any, run_dir: Path, slug: str) -> Any:
        """A † configuration: s1 redirects to the software classifier host sc, which marks and returns."""
        import subprocess
        import sys
        import time

        import numpy as np

        from chimera.targets import TargetResult
        from chimera.testbed.classifier import SoftwareClassifier
        from chimera.testbed.collect import collect, latency_summary
        from chimera.testbed.replay import replay
        self._ensure_testbed(run_dir)
        pcap, frames, _ = self._replay_pcap(table, run_dir)
        tb = self.testbed
        s = tb.s1.name
        tb.s1.load_redirect([(f"{s}-eth1", f"{s}-eth3"), (f"{s}-eth3", f"{s}-eth2")])
        ready = run_dir / "replay" / f"{slug}.sc-ready"
        ready.unlink(missing_ok=True)
        log_f = open(run_dir / "replay" / f"{slug}.sc.log", "wb")
        daemon = tb.sc.popen([sys.executable, "-m", "chimera.testbed.classifier", "--model", str(model_json),
                              "--intf", "sc-eth0", "--ready-file", str(ready)], stdout=log_f, stderr=subprocess.STDOUT)
        try:
            t0 = time.monotonic()
            while not ready.exists():
                if daemon.poll() is not None or time.monotonic() - t0 > 30:
                    raise TargetError(f"the software classifier on sc did not start (see {log_f.name})",
                                      "check that the model file is valid and python can import chimera there")
                time.sleep(0.1)
            files = replay(tb.h1, tb.h2, pcap, self.replay_cfg, run_dir / "replay", slug)
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
            log_f.close()
            tb.s1.unload()
        got = collect(frames, files.sent, files.received)
        # conformance of the software path: the same function, offline, on the same frames and clock
        clf = SoftwareClassifier(json.loads(model_json.read_text()))
        rows = np.flatnonzero(got.received)
        mism = 0
        for i in rows:
            f, lab, rule, score, c = clf.classify(frames[i], int(got.ts_in[i]))
            v = got.verdicts
            mism += (f, lab, rule, score, c) != (int(v.flags[i]), int(v.label[i]), int(v.rule_id[i]),
                                                 int(v.score[i]), int(v.centroid[i]))
        if mism:
            log.error("software classifier: %d verdicts differ from the offline re-run", mism)
        extra = {"lost": got.lost, "foreign_frames": got.foreign, "unmarked_frames": got.unmarked,
                 "reference_mismatches": mism, "conformance_checked": int(rows.size), **latency_summary(got)}
        log.info("[ebpf+sc] %s: %d/%d packets classified by the software classifier host, %d lost", slug,
                 rows.size, len(table), got.lost)
        return TargetResult(got.verdicts, 0, extra)

    def unsupported(self, art: Artifact) -> str | None:
        """Why this artifact cannot run in the eBPF dataplane, or None."""
        if art.incremental is not None:
            return "incremental S_t/Z_t accumulators are not in the eBPF dataplane (batch only)"
        if art.c("NUM_CLASSES") > 16:
            return "more than 16 classes (eBPF stack budget)"
        if art.c("SOFT_RULES") > 32:
            return "more than 32 soft rules"
        return None
