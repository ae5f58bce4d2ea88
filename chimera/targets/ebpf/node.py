"""EbpfSwitch: s1 as a Mininet node whose ports run the tc (clsact ingress) Chimera program."""

from __future__ import annotations

import logging
from typing import Any

from chimera.formats.registers import Registers
from chimera.testbed.outcome import InstallReport, ProgramTime
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.targets.ebpf.build import build_object, build_redirect_object
from chimera.targets.ebpf.loader import EbpfPipeline
from chimera.testbed.nodes import Baseline, TargetSwitch

log = logging.getLogger(__name__)


class EbpfSwitch(TargetSwitch):
    """The eBPF/tc dataplane: the program is loaded from the root namespace and attached here."""

    target = "ebpf"
    baselines = {"mark_only": Baseline("the verdict header alone: parse the Ethernet type, insert the header, "
                                       "redirect (chimera.bpf.c's mark_only)", marks=True),
                 "bare": Baseline("a plain redirect from port to port (redirect.bpf.c)", marks=False)}

    def __init__(self, name: str, **params: Any) -> None:
        super().__init__(name, **params)
        self.pipeline: Any = None

    def load(self, art: Artifact) -> float:
        self.unload()
        obj = build_object(art, self.build_dir, self.build)
        self.pipeline = EbpfPipeline(obj, self.timing)
        dt, _ = self.pipeline.install(art)
        self.pipeline.attach(self.pid, self.port_pairs())
        self.artifact = art
        log.info("%s: eBPF pipeline attached to %s (tables installed in %.1f ms)", self.name,
                 ", ".join(i for i, _ in self.port_pairs()), dt * 1e3)
        return dt

    def load_baseline(self, program: str, art: Artifact) -> None:
        """mark_only from the pipeline's own object (built for ``art``), or the bare redirect, on the same ports."""
        self.unload()
        if program == "mark_only":
            obj, prog = build_object(art, self.build_dir, self.build), "mark_only"
        elif program == "bare":
            obj, prog = build_redirect_object(self.build_dir), "redirect"
        else:
            raise TargetError(f"{self.name} has no baseline program {program!r}",
                              f"choose one of {', '.join(self.baselines)}")
        self.pipeline = EbpfPipeline(obj, self.timing)
        self.pipeline.attach(self.pid, self.port_pairs(), prog=prog)
        self.artifact = None

    def program_time(self) -> ProgramTime | None:
        return self.pipeline.program_time() if self.pipeline is not None else None

    def install_map(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """A live update under traffic: write the tables that differ into the inactive version, then flip."""
        if self.pipeline is None or self.artifact is None:
            raise TargetError(f"{self.name} has no pipeline loaded", "load a model before installing updates")
        try:
            dt, rows = self.pipeline.install(art, fail_after)
        except OSError as e:
            raise TargetError(f"live install on {self.name} failed: {e}", "the old version stays active") from None
        self.artifact = art
        return InstallReport(dt, rows)

    def load_redirect(self, pairs: list[tuple[str, str]]) -> None:
        """No pipeline: a plain redirect along ``pairs`` (the software-classifier path)."""
        self.unload()
        self.pipeline = EbpfPipeline(build_redirect_object(self.build_dir))
        self.pipeline.attach(self.pid, pairs, prog="redirect")
        self.artifact = None

    def registers(self) -> Registers:
        """Counters and the state registers conformance compares: centroid and class EMA, token samples."""
        if self.pipeline is None or self.artifact is None:
            return {}
        sample, taken = self.pipeline.samples()
        out: Registers = {"counters": self.pipeline.counters(), "ema": self.pipeline.ema().tolist(),
               "class_ema": self.pipeline.class_ema().tolist(), "sample": sample.tolist(), "sample_count": taken,
               "clock": self.pipeline.clock_ns()}
        if self.build.coverage:
            out["coverage"] = self.pipeline.coverage().tolist()
        return out

    def alive(self) -> str | None:
        why = super().alive()
        if why is None and self.pipeline is None:
            why = f"{self.name} has no program attached"
        return why

    def unload(self) -> None:
        """Detach the program from every port and unload it (maps go with it)."""
        if self.pipeline is not None:
            self.pipeline.close()
            self.pipeline = None

    def stop(self, deleteIntfs: bool = True) -> None:
        self.unload()
        super().stop(deleteIntfs)
