"""The stability kind's configuration: its YAML section, validated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chimera.controlplane.config import DAY_S
from chimera.errors import ConfigError
from chimera.experiments.config import ExperimentConfig

@dataclass(frozen=True)
class Adaptation:
    """One way to run the day: which of the adaptations act (a registry entry, ``ADAPTATIONS``)."""

    description: str
    fast_prior: bool = False                 # the class-EMA prior in the fusion (fusion.gamma)
    slow: dict[str, Any] | None = None       # the slow loop: settings over the experiment's control section
    oracle: bool = False                     # retrains on labelled recent traffic (the reference only)
    pseudo: dict[str, Any] | None = None     # the pseudo-label loop (chimera.controlplane.pseudo): its settings


#: every configuration a stability day can run, by name (the report's rows, in this order)
ADAPTATIONS: dict[str, Adaptation] = {
    "Static-Map": Adaptation("neither timescale: the compiled tables all day"),
    "Fast-Only": Adaptation("fast path (class-EMA prior), no control-plane installs", fast_prior=True),
    "Re-cluster-Only": Adaptation("slow loop re-fitting the Map tables (re-bin + re-cluster), no fast prior",
                                  slow={"prior": "off"}),
    "Prior-Only": Adaptation("slow loop's prior-shift correction alone (EM class priors installed as a class "
                             "bias), no Map re-fit, no fast prior", slow={"rebin": "off", "recluster": False,
                                                                         "prior": "em"}),
    "Chimera": Adaptation("fast path + slow loop (Map tables re-fitted and installed live)", fast_prior=True,
                          slow={"prior": "off"}),
    "Paper-Loop": Adaptation("Chimera with the paper's slow loop (its Table 5 operating point: an EMA centroid "
                             "update at rate 0.1, a memory of 10 epochs, every 60 s) instead of our k-means re-fit "
                             "every control.t_cp_s", fast_prior=True,
                             slow={"prior": "off", "centroid_update": "ema", "eta": 0.1, "t_cp_s": 60.0}),
    "Chimera+Prior": Adaptation("Chimera with the prior-shift correction in its slow loop", fast_prior=True,
                                slow={"prior": "em"}),
    "Prior-Truth": Adaptation("MEASURING ARM, not a switch configuration: Prior-Only with the traffic's true class "
                              "shares over the last T_cp installed instead of the EM's estimate (the generator "
                              "knows them; no switch does): what the correction's form gives with no estimator "
                              "error", slow={"rebin": "off", "recluster": False, "prior": "truth"}),
    "Prior-Uniform": Adaptation("Prior-Only with the bias measured from equal class shares (the implicit prior of a "
                                "class-balanced classifier) instead of the training mix",
                                slow={"rebin": "off", "recluster": False, "prior": "em", "prior_base": "uniform"}),
    "Prior-Gated": Adaptation("Prior-Only holding each class's bias while the sample holds fewer than "
                              "control.prior_min_class_samples of its tokens (default here: 32)",
                              slow={"rebin": "off", "recluster": False, "prior": "em",
                                    "prior_min_class_samples": 32}),
    "Pseudo-Label": Adaptation("slow loop re-learning the global layer from the switch's own confident verdicts "
                               "(pseudo-labels), no Map re-fit, no fast prior",
                               slow={"rebin": "off", "recluster": False, "prior": "off"}, pseudo={}),
    "Chimera+Pseudo": Adaptation("Chimera with the pseudo-label loop in its slow loop", fast_prior=True,
                                 slow={"prior": "off"}, pseudo={}),
    "Oracle": Adaptation("ORACLE, not a switch configuration: retrained on labelled recent traffic (ground truth "
                         "no switch has), on the reference; the ceiling of any unsupervised loop", oracle=True),
}


#: the compression a day gets when the YAML leaves it unset, per clock
DEFAULT_COMPRESSION = {"trace": 1.0, "switch": 576.0}


class StabilitySpec(BaseModel):
    """A simulated day replayed through the switch (stability24h, hyper_cadence).

    The day is time-compressed before anything is trained: flows arrive, drift and follow the diurnal load
    on a day of ``day_hours / compression`` real hours, while each flow keeps its own packet timing, so the
    model trains on the trace exactly as it is replayed. ``compression: 1`` is the real day.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    compression: float | None = Field(None, ge=1, le=DAY_S, description="simulated seconds per trace second; unset: "
                                      "1 under the trace clock (the real day, replayed at any pace), 576 under the "
                                      "switch clock (the day replayed in real time: 150 s)")
    day_hours: float = Field(24.0, gt=0, le=24)
    train_hours: float = Field(6.0, gt=0, description="the model trains on flows that start in these first hours")
    attack_at_hour: float | None = Field(1.0, ge=0, description="the attack burst starts here")
    drift_step_at_hour: float | None = Field(None, ge=0, description="the drift as one step here (default: linear)")
    bin_minutes: float = Field(60.0, gt=0, description="F1 time bins (simulated minutes)")
    last_hours: float = Field(6.0, gt=0, description="'the last hours', compared with the training hours")
    configurations: list[str] = Field(["Chimera", "Fast-Only", "Static-Map"], min_length=1,
                                      description="what runs the day: names of ADAPTATIONS")
    seeds: list[int] = Field([], description="training seeds (the model is trained once per seed on the same "
                             "split); empty: the experiment's seed alone")
    days: list[int] = Field([], description="day realizations: the synthetic day's generator seeds, the dataset's "
                            "own first; each day is generated, trained on and run with every training seed, and "
                            "an interval is then over the days' means (chimera.metrics.days). Empty: the "
                            "dataset's day alone")
    block_hours: float | None = Field(None, gt=0, description="block length of the bootstrap over time bins (bins "
                                      "of a day are autocorrelated: neighbours are resampled together); unset: "
                                      "chosen from each series by Politis and White's rule, with a sensitivity table")
    keep_captures: Literal["first", "all", "none"] = Field(
        "first", description="a testbed's replay captures (about 0.6 GB per replayed day): keep those of the first "
        "training seed on the first day only (every configuration), all, or none")
    oracle_every_hours: float = Field(3.0, gt=0, description="the oracle retrains this often")
    oracle_seeds: int = Field(0, ge=0, description="run the oracle with the first this many training seeds of each "
                              "day (0: every seed). Its retraining is most of a run's time on the reference; its "
                              "rows and differences then pair over the seeds it ran, and say how many")
    oracle_window_hours: float = Field(6.0, gt=0, description="the oracle trains on the training hours plus the "
                                       "labelled flows that started in the last this many hours")
    drift_knobs: bool = Field(True, description="also measure the drift each generator knob causes alone")
    bootstrap: int = Field(200, ge=0, le=10000, description="resamples of flows per bin for the 95% intervals")
    diagnose: bool = Field(True, description="also run slow-loop variants on the reference to explain the result")

    @field_validator("configurations")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        unknown = [c for c in v if c not in ADAPTATIONS]
        if unknown:
            raise ValueError(f"unknown configuration(s) {unknown}; known: {list(ADAPTATIONS)}")
        return v

    @property
    def switch_configurations(self) -> list[str]:
        """The configurations a switch runs (the oracle runs on the reference only)."""
        return [c for c in self.configurations if not ADAPTATIONS[c].oracle]

    @property
    def oracle_configurations(self) -> list[str]:
        """The oracles: run offline on the reference, reported apart from what a switch runs."""
        return [c for c in self.configurations if ADAPTATIONS[c].oracle]

    @model_validator(mode="after")
    def _inside_the_day(self) -> "StabilitySpec":
        if self.train_hours >= self.day_hours:
            raise ValueError(f"train_hours ({self.train_hours}) must be below day_hours ({self.day_hours})")
        if self.last_hours > self.day_hours - self.train_hours:
            raise ValueError(f"last_hours ({self.last_hours}) must fit after the training hours")
        for k in ("attack_at_hour", "drift_step_at_hour"):
            v = getattr(self, k)
            if v is not None and v >= self.day_hours:
                raise ValueError(f"{k} ({v}) must fall inside the day (< {self.day_hours} h)")
        return self

    @property
    def day_s(self) -> float:
        return self.day_hours * 3600.0

    @property
    def factor(self) -> float:
        """The compression (set by the runner from the clock when the YAML leaves it unset)."""
        if self.compression is None:
            raise ConfigError("stability.compression is unresolved", "the runner resolves it from the clock")
        return self.compression

    @property
    def trace_s(self) -> float:
        """The (compressed) day's length on the trace's clock."""
        return self.day_s / self.factor


class StabilityExperiment(ExperimentConfig):
    kind: Literal["stability"] = "stability"
    stability: StabilitySpec

    @model_validator(mode="after")
    def _a_synthetic_day(self) -> "StabilityExperiment":
        if self.the_dataset().synthetic is None:
            raise ValueError(f"kind {self.kind} generates its own day-long trace: give dataset.synthetic "
                             "(a real capture has no compressible day)")
        return self

    @model_validator(mode="after")
    def _own_day_first(self) -> "StabilityExperiment":
        days = self.stability.days
        syn = self.the_dataset().synthetic
        if days and syn is not None and (days[0] != syn.seed or len(set(days)) != len(days)):
            raise ValueError(f"stability.days {days}: list distinct generator seeds, the dataset's own "
                             f"({syn.seed}) first (the drift and knob tables are measured on it)")
        return self

    @property
    def day_seeds(self) -> list[int]:
        """The day realizations run (``stability.days``, else the dataset's own day)."""
        syn = self.the_dataset().synthetic
        return list(self.stability.days) or [syn.seed if syn is not None else 0]

    @property
    def training_seeds(self) -> list[int]:
        """The seeds the day's model is trained with (``stability.seeds``, else the experiment's seed)."""
        return list(self.stability.seeds) or [self.seed]

    def with_compression(self, clock: str) -> Self:
        """The experiment with its compression resolved for ``clock``."""
        if self.stability.compression is not None:
            return self
        return self.model_copy(update={"stability": self.stability.model_copy(
            update={"compression": DEFAULT_COMPRESSION[clock]})})


class StabilitySection(BaseModel):
    """Manifest section ``stability``: the day as run (its compression, lengths, clock and the T_cp it used)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    compression: float = 1.0
    trace_s: float = 0.0
    day_hours: float | None = None
    t_cp_s: float | None = None
    t_cp_trace_s: float | None = None
    clock: str = "trace"
    install_ms_simulated: float | None = None
    seeds: list[int] = []
    days: list[int] = []
