"""Model and fusion configuration (validated at load: unknown keys and variant names are errors)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Attention = Literal["prf", "rff", "softmax"]
Keys = Literal["hybrid", "local", "global", "dense"]
Aggregation = Literal["batch", "incremental"]


class ModelConfig(BaseModel):
    """Linearized-attention classifier over centroid tokens.

    attention: prf = positive random features (Performer, default), rff =
    random Fourier features, softmax = exact softmax kernel (control-plane
    only). keys: hybrid = local window + global tokens (default), local,
    global, dense = the whole flow prefix (control-plane only). aggregation:
    incremental = running S_t/Z_t accumulators per flow (m x d_v registers; what
    the dataplanes run), batch = re-sum the window per packet (the reference's
    cross-check: the same integers by construction).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    centroids: int = Field(32, ge=2, le=256)
    window: int = Field(8, ge=1, le=64)
    window_choices: tuple[int, ...] = Field((), description="windows (powers of two, each <= window) to train; "
                                            "the one with the best validation macro-F1 is compiled. Empty: window")
    d_model: int = Field(16, ge=2, le=256)
    d_k: int = Field(8, ge=1, le=128)
    d_v: int = Field(8, ge=1, le=128)
    features: int = Field(8, ge=2, le=512, description="m, random features")
    n_global: int = Field(4, ge=0, le=64, description="learned global tokens per protocol class")
    len_fine: int = Field(256, ge=2, le=256, description="fine length bins of the value sub-token")
    attention: Attention = "prf"
    keys: Keys = "hybrid"
    aggregation: Aggregation = "incremental"
    epochs: int = Field(40, ge=1, le=500)
    patience: int = Field(8, ge=1, le=500, description="stop after this many epochs without a better val macro-F1")
    batch_size: int = Field(2048, ge=16)
    lr: float = Field(0.02, gt=0)
    class_weight_power: float = Field(1.0, ge=0, le=1, description="0 = none, 1 = inverse frequency (balanced)")
    max_train_packets: int = Field(0, ge=0, description="0 = every training packet; else a seeded sample of "
                                   "whole training flows up to this many packets (large datasets)")

    @field_validator("window")
    @classmethod
    def _pow2(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"window must be a power of two (the ring index is a mask), got {v}")
        return v

    @model_validator(mode="after")
    def _choices_within_window(self) -> "ModelConfig":
        bad = [w for w in self.window_choices if w < 1 or w > self.window or w & (w - 1)]
        if bad:
            raise ValueError(f"window_choices {list(self.window_choices)}: {bad} not a power of two in 1..window "
                             f"({self.window}); the window is the per-flow state the budget is checked against")
        return self

    @model_validator(mode="after")
    def _dense_needs_prf(self) -> "ModelConfig":
        if self.keys == "dense" and self.attention != "prf":
            raise ValueError("keys=dense needs attention=prf (prefix sums need a factorized kernel)")
        return self

    @property
    def software_only(self) -> bool:
        """Configurations a switch cannot run: evaluated by the software classifier (marked †)."""
        return self.attention == "softmax" or self.keys == "dense"

    @property
    def uses_window(self) -> bool:
        return self.keys in ("hybrid", "local", "dense")

    @property
    def uses_global(self) -> bool:
        return self.keys in ("hybrid", "global") and self.n_global > 0


FusionMode = Literal["cascade", "soft", "neural", "symbolic"]


class FusionConfig(BaseModel):
    """cascade: hard veto then alpha*A + beta*S*Z (default); soft: no veto (lambda_h = 0);
    neural: attention only; symbolic: rules only (hard veto + soft scores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: FusionMode = "cascade"
    alpha: float = Field(1.0, ge=0)
    beta: float = Field(0.5, ge=0)
    gamma: float = Field(0.0, ge=0, description="weight of the fast-path class prior (the per-class verdict EMA); "
                         "0 = off")
    tune_beta: bool = Field(True, description="pick beta on the validation split from beta_grid")
    beta_grid: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)

    @property
    def lambda_h(self) -> int:
        return 1 if self.mode in ("cascade", "symbolic") else 0

    def coefficients(self, beta: float | None = None) -> tuple[float, float]:
        b = self.beta if beta is None else beta
        return {"cascade": (self.alpha, b), "soft": (self.alpha, b), "neural": (1.0, 0.0),
                "symbolic": (0.0, 1.0)}[self.mode]
