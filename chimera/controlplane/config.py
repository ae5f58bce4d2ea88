"""Control-plane configuration (validated at load; a value out of range is an error naming the key)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DAY_S = 86400.0


class ControlPlaneConfig(BaseModel):
    """The slow loop. Times are simulated seconds (the day being replayed); a time-compressed run divides
    them by its compression factor on the wall clock."""

    @property
    def memory_epochs(self) -> float:
        """The EMA centroid update's memory in T_cp epochs (1/eta: the paper's Table 5 pairs eta 0.1 with 10
        epochs, 0.05 with 20 and 0.5 with 2); the k-means re-fit keeps none beyond the sample it reads."""
        return 1.0 / self.eta if self.centroid_update == "ema" else 0.0

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = Field(True, description="false: the switch runs the compiled tables all day (no installs)")
    t_cp_s: float = Field(900.0, gt=0, le=DAY_S, description="T_cp: the slow loop's period (simulated seconds)")
    tau_map: float = Field(0.05, ge=0, lt=1, description="install only when more than this share of the sampled "
                           "recent tokens would change centroid or length bin (Δmap > τ_map)")
    rebin: Literal["off", "coarse", "all"] = Field(
        "coarse", description="re-fit length range tables to the current quantiles: off, the coarse (centroid key) "
        "bins, or the fine (value sub-token) bins too")
    recluster: bool = Field(True, description="re-cluster the Map keys (k-means, warm-started from the installed map)")
    prior: Literal["off", "em", "truth"] = Field(
        "off", description="prior-shift correction: re-estimate the class priors of the sampled tokens by EM "
        "(Saerens et al. 2002) and install them as a class bias (needs compile.prior_logits > 0); truth installs "
        "the traffic's true class shares over the last T_cp instead, handed over by the harness (a measuring arm, "
        "not a switch configuration: it separates the estimator's error from the correction's form)")
    prior_base: Literal["trained", "uniform"] = Field(
        "trained", description="the class bias's zero: trained, the training class mix (em: the EM's own estimate "
        "on the training tokens; truth: the training's true shares); uniform, equal shares (the implicit prior of "
        "a class-balanced classifier)")
    prior_min_class_samples: float = Field(
        0, ge=0, description="hold a class's bias while the sample holds fewer than this many tokens of it (the "
        "sample size times its estimated share): a rare class's estimate is mostly noise; 0: no gate")
    tau_prior: float = Field(0.05, ge=0, le=8, description="install a new class bias only when some class's bias "
                             "moves by more than this many logits")
    prior_em_iterations: int = Field(200, ge=1, le=10_000, description="the prior EM's iteration cap: a tick whose "
                                     "EM reaches it holds the prior and says so in control.csv")
    centroid_update: Literal["kmeans", "ema"] = Field(
        "kmeans", description="how the Map keys' centroids follow the sample: kmeans re-fits them (weighted Lloyd, "
        "warm-started from the installed ones); ema moves each centroid a step eta toward the mean of the sampled "
        "keys nearest to it, once per T_cp (the paper's Table 5 loop, whose memory is 1/eta epochs)")
    eta: float = Field(0.1, gt=0, le=1, description="the EMA centroid update's rate (centroid_update: ema)")
    lloyd_iterations: int = Field(10, ge=0, le=100)
    min_samples: int = Field(256, ge=16, description="fewer sampled tokens than this: skip the step")
    reference_install_ms: float = Field(5.0, gt=0, le=60_000, description="the reference target's simulated "
                                        "Δt_install (the flip takes effect this long after the decision)")
    on_install_failure: Literal["continue", "stop"] = Field(
        "continue", description="a failed install keeps the old version; continue the run, or stop it")
