"""The slow loop's decisions and their record: every T_cp, read, propose, install when Δmap > τ_map.

The loop talks to a switch through ``SwitchControl`` (registers in, one versioned
install out); the eBPF and BMv2 switch nodes and the offline reference provide
it. Each step is one row of the run's control log. A failed install (an entry
rejected, a P4Runtime or map-update error) leaves the old version active: the
switches write the inactive version and flip only after every write succeeded,
so a half-written version is never active. The loop records the failure and
goes on, or stops the run if the configuration says so.

On the trace's clock (``run_schedule``, ``SlowLoop.drive``) the trace's timestamps are
the clock: every T_cp (trace time) the loop reads the registers as they are after every
packet before that instant and decides; an install takes effect ``install_delay_ns``
later, at the first packet at or after that instant, exactly as a flip between two
packets does on a switch (chimera.controlplane.schedule).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.prior import PriorEstimate, PriorShift, TokenPosterior
from chimera.controlplane.recluster import MapVersion, Proposal, Reclusterer, churn
from chimera.controlplane.schedule import Segments
from chimera.errors import ChimeraError, ConfigError, TargetError
from chimera.formats.artifact import Artifact
from chimera.formats.registers import IntArray, Registers
from chimera.formats.rows import Cells
from chimera.testbed.outcome import InstallReport

log = logging.getLogger(__name__)


class SwitchControl(Protocol):
    """What the slow loop needs of a switch."""

    def registers(self) -> Registers: ...

    def install_map(self, art: Artifact) -> InstallReport: ...


@dataclass
class ControlStep:
    """One tick of the slow loop (a row of control.csv)."""

    step: int
    t_trace_s: float             # since the replay began (the trace's clock)
    t_day_s: float               # simulated time of day
    version: int                 # map version active before the step
    samples: int = 0             # sampled tokens the proposal used
    new_samples: int = 0         # samples taken since the previous step
    occupancy_shift: float = math.nan  # total-variation distance of the centroid EMA from the last install's
    delta: float = math.nan      # Δmap
    decision: str = ""           # few-samples | hold | install | failed
    installed_version: int | None = None
    install_ms: float = math.nan          # the Δt_install the schedule used (see install_simulated)
    install_simulated: bool = False       # install_ms is control.reference_install_ms, not measured on a switch
    install_ms_measured: float = math.nan  # a switch under the trace clock: the install's own wall time
    entries_written: int = 0
    churn: int = 0
    churn_map: int = 0
    churn_bins: int = 0
    churn_prior: int = 0
    prior_shift: float = math.nan  # the largest change of a class bias (logits) the EM estimate asks for
    prior_estimate: str = ""       # the EM's class priors, space-separated
    prior_clipped: int = 0         # classes whose bias the reserved range could not hold
    prior_em_iterations: int = 0   # the EM's iterations this tick (0: no EM)
    prior_em_converged: bool = True  # False: the EM hit its cap; the prior was held, not installed
    prior_truth: str = ""          # the traffic's true class shares over the last T_cp (where the harness knows them)
    prior_error: float = math.nan  # the largest |estimated share - true share| over the classes
    prior_held: int = 0            # classes whose bias was held: too few of their tokens in the sample
    propose_ms: float = math.nan
    error: str = ""


def occupancy(ema: IntArray) -> np.ndarray:
    e = np.maximum(np.asarray(ema, np.float64), 0)
    return e / e.sum() if e.sum() > 0 else e


@dataclass
class SlowLoop:
    """The decisions of one run; ``artifacts`` holds every version ever made active (for conformance)."""

    base: Artifact
    cfg: ControlPlaneConfig
    compression: float = 1.0
    day_offset_s: float = 0.0
    prior_model: TokenPosterior | None = None   # control.prior: em reads the sample through it
    #: the traffic's true class shares between two times of day (simulated seconds): the harness's (the generator
    #: knows them, no switch does); control.prior: truth installs those of the last T_cp, em is scored against them
    true_prior: Callable[[float, float], np.ndarray] | None = None
    steps: list[ControlStep] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reset()

    @property
    def enabled(self) -> bool:
        return self.cfg.enabled

    def drive(self, ts_ns: np.ndarray, base: Artifact, backend: Segments) -> list[InstallReport]:
        """The loop on the trace's clock (``run_schedule``): a TraceControl."""
        return run_schedule(ts_ns, base, self, backend)

    def reset(self) -> None:
        """Back to the base map with no decisions (a replay that starts over from a clean switch)."""
        self.steps = []
        self.current = MapVersion.of(self.base)
        self.artifacts: dict[int, Artifact] = {self.current.version: self.base}
        self.fitter = Reclusterer(self.base, self.cfg)
        self.prior: PriorShift | None = None
        if self.cfg.enabled and self.cfg.prior != "off":
            if self.prior_model is None:
                raise ConfigError(f"control.prior is {self.cfg.prior} but the loop was given no token posterior",
                                  "build the loop with prior_model (chimera.controlplane.prior.TokenPosterior)")
            if self.cfg.prior == "truth" and self.true_prior is None:
                raise ConfigError("control.prior is truth but the loop was given no true class shares",
                                  "truth is a measuring arm of a generated day: run it from the stability kind")
            self.prior = PriorShift.of(self.base, self.prior_model, self.cfg.prior_base, self.cfg.prior == "truth")
        self._count = 0
        self._occ: np.ndarray | None = None

    @property
    def period_trace_s(self) -> float:
        """T_cp on the trace's clock (the wall clock of a replay)."""
        return self.cfg.t_cp_s / self.compression

    def propose(self, regs: Registers, t_trace_s: float) -> tuple[ControlStep, Proposal | None]:
        """Read the registers and decide; returns the step and the proposal to install (None: hold)."""
        st = ControlStep(len(self.steps), t_trace_s, self.day_offset_s + t_trace_s * self.compression,
                         self.current.version)
        self.steps.append(st)
        count = int(regs.get("sample_count", 0))
        words = np.asarray(regs.get("sample", []), np.int64)[: min(count, len(regs.get("sample", [])))]
        st.new_samples, self._count = count - self._count, count
        occ = occupancy(regs.get("ema", []))
        if self._occ is None:
            self._occ = occ
        st.occupancy_shift = float(0.5 * np.abs(occ - self._occ).sum()) if occ.size == self._occ.size else math.nan
        p = self.fitter.propose(self.current, words)
        if p is None:
            st.decision = "few-samples"
            return st, None
        st.samples, st.delta, st.propose_ms = p.samples, p.delta, p.seconds * 1e3
        map_moves = p.delta > self.cfg.tau_map
        prior_moves = False
        if self.prior is not None:
            t0 = time.perf_counter()
            cur = self.current.prior
            assert cur is not None  # PriorShift.of refused an artifact without a prior rule
            est = self._prior_estimate(st, words, cur)
            st.prior_shift = float(np.abs(est.bias - self.prior.bias_of(cur)).max())
            st.prior_estimate = " ".join(f"{x:.4f}" for x in est.priors)
            st.prior_clipped = est.clipped
            st.prior_em_iterations, st.prior_em_converged = est.iterations, est.converged
            st.propose_ms += (time.perf_counter() - t0) * 1e3
            if not est.converged:
                log.warning("prior EM did not converge in %d iterations: the prior is held", est.iterations)
            prior_moves = est.converged and st.prior_shift > self.cfg.tau_prior and bool(np.any(est.weights != cur))
            if prior_moves:
                mapv = p.mapv if map_moves else self.current.successor()
                p = dataclasses.replace(p, mapv=dataclasses.replace(mapv, prior=est.weights),
                                        centers=p.centers if map_moves else self.fitter.centers)
                p.churn = churn(self.current, p.mapv)
        st.churn, st.churn_map = p.churn["total"], p.churn["map_exact"]
        st.churn_bins = p.churn["len_range"] + p.churn["len_fine_range"]
        st.churn_prior = p.churn["prior"]
        if not (map_moves or prior_moves):
            st.decision = "hold"
            return st, None
        return st, p

    def _prior_estimate(self, st: ControlStep, words: np.ndarray, current: np.ndarray) -> PriorEstimate:
        """This tick's class mix (the EM's, or the true one under ``prior: truth``) and the weights it asks for,
        with the classes too rare in the sample held; scored against the true mix where the harness knows it."""
        assert self.prior is not None
        truth = (self.true_prior(st.t_day_s - self.cfg.t_cp_s, st.t_day_s) if self.true_prior is not None
                 else None)
        if truth is not None:
            st.prior_truth = " ".join(f"{x:.4f}" for x in truth)
        if self.cfg.prior == "truth":
            assert truth is not None   # reset() refused a truth arm without true shares
            est = self.prior.weights_for(truth)
        else:
            est = self.prior.estimate(words, self.cfg.prior_em_iterations)
        if truth is not None:
            st.prior_error = float(np.abs(est.priors - truth).max())
        if self.cfg.prior_min_class_samples > 0:
            hold = est.priors * len(words) < self.cfg.prior_min_class_samples
            st.prior_held = int(hold.sum())
            est = self.prior.weights_for(est.priors, est.iterations, est.converged, hold, current)
        return est

    def artifact_for(self, p: Proposal) -> Artifact:
        return p.mapv.apply(self.base)

    def installed(self, st: ControlStep, p: Proposal, art: Artifact, rep: InstallReport,
                  occ: np.ndarray | None = None) -> None:
        st.decision, st.installed_version = "install", p.mapv.version
        st.install_ms, st.entries_written = rep.seconds * 1e3, rep.entries_written
        st.install_simulated = rep.simulated
        if not rep.simulated:
            st.install_ms_measured = st.install_ms
        self.current = p.mapv
        self.artifacts[p.mapv.version] = art
        self.fitter.accept(p)
        if occ is not None:
            self._occ = occ

    def failed(self, st: ControlStep, err: BaseException) -> None:
        st.decision, st.error = "failed", str(err).splitlines()[0][:300]
        log.warning("control plane: install of map version %d failed (the old version %d stays active): %s",
                    (self.current.version + 1) & 0xFFFF, self.current.version, st.error)
        if self.cfg.on_install_failure == "stop":
            raise TargetError(f"control plane: an install failed and the experiment says stop: {st.error}",
                              "fix the failure, or set control.on_install_failure: continue")

    def run_step(self, switch: SwitchControl, t_trace_s: float) -> ControlStep:
        """One tick against a switch: read, decide, install (the switch flips only after every write)."""
        regs = switch.registers()
        st, p = self.propose(regs, t_trace_s)
        if p is None:
            return st
        art = self.artifact_for(p)
        try:
            rep = switch.install_map(art)
        except ChimeraError as e:
            self.failed(st, e)
            return st
        self.installed(st, p, art, rep, occupancy(regs.get("ema", [])))
        log.debug("control plane: t=%.1fs (day %.0fs): Δmap %.3f > τ %.3f: map version %d installed in %.2f ms, "
                 "%d entries changed", st.t_trace_s, st.t_day_s, st.delta, self.cfg.tau_map, p.mapv.version,
                 st.install_ms, st.churn)
        return st

    def log_rows(self) -> list[Cells]:
        return [asdict(s) for s in self.steps]


class _Deferred:
    """SwitchControl for the loop: an install is queued for the schedule to flip at its instant."""

    def __init__(self, backend: Segments, active: Artifact, delay_s: float) -> None:
        self.backend, self.active, self.delay_s = backend, active, delay_s
        self.pending: Artifact | None = None

    def registers(self) -> Registers:
        return self.backend.registers()

    def install_map(self, art: Artifact) -> InstallReport:
        self.pending = art
        return InstallReport(self.delay_s, churn(MapVersion.of(self.active), MapVersion.of(art))["total"],
                             simulated=True)


def run_schedule(ts_ns: np.ndarray, base: Artifact, loop: SlowLoop, backend: Segments) -> list[InstallReport]:
    """Drive ``backend`` through the trace with the slow loop; returns the flips' install reports (as the backend
    measured them)."""
    ts = np.asarray(ts_ns, np.int64)
    n = ts.size
    installs: list[InstallReport] = []
    if n == 0:
        return installs
    sw = _Deferred(backend, base, loop.cfg.reference_install_ms / 1e3)
    period = max(1, int(round(loop.period_trace_s * 1e9)))
    delay = int(round(sw.delay_s * 1e9))
    t0, last = int(ts[0]), int(ts[-1])
    i, tick = 0, t0 + period
    pending: tuple[int, Artifact, ControlStep] | None = None

    def upto(t: int) -> None:  # every packet before instant t, on the active tables
        nonlocal i
        j = int(np.searchsorted(ts, t, side="left")) if t <= last else n
        if j > i:
            backend.run_until(j)
            i = j

    while i < n:
        if pending is not None and pending[0] <= tick:
            upto(pending[0])
            rep = backend.flip(pending[1])
            installs.append(rep)
            if not rep.simulated:
                pending[2].install_ms_measured = rep.seconds * 1e3
            sw.active, pending = pending[1], None
            continue
        upto(tick)
        if i >= n:
            break
        step = loop.run_step(sw, (tick - t0) / 1e9)
        if sw.pending is not None:
            pending, sw.pending = (tick + delay, sw.pending, step), None
        tick += period
        if tick > last and pending is None:
            upto(last + 1)
    return installs
