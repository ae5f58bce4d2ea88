"""Compile and fusion configuration."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Budgets(BaseModel):
    """The paper's resource budgets, checked at compile time.

    per_flow_bits: all per-flow register state (ring, accumulators, bookkeeping).
    table_bits: M_tbl, the memory of any one match-action table (entries x entry bits).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    per_flow_bits: int = Field(32768, ge=1)   # 4 KiB/flow: the paper's bold setting
    table_bits: int = Field(8 * 2**20, ge=1)  # 1 MiB per table


class CompileConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    bits: int = Field(8, ge=2, le=15, description="b: table value width")
    fuse_bits: int = Field(8, ge=1, le=16, description="width of the fusion coefficients alpha, beta")
    flow_slots: int = Field(65536, ge=2, le=2**24)
    ema_shift: int = Field(4, ge=1, le=16, description="k: EMA step eta = 2^-k")
    ema_frac: int = Field(16, ge=1, le=24, description="F: fixed-point fraction bits of the EMA registers")
    map_version: int = Field(1, ge=0, le=0xFFFF)
    budgets: Budgets = Budgets()

    @field_validator("flow_slots")
    @classmethod
    def _pow2(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"flow_slots must be a power of two (slot = hash & (F-1)), got {v}")
        return v


FusionMode = Literal["cascade", "soft", "neural", "symbolic"]


class FusionConfig(BaseModel):
    """cascade: hard veto then alpha*A + beta*S*Z (default); soft: no veto (lambda_h = 0);
    neural: attention only; symbolic: rules only (hard veto + soft scores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: FusionMode = "cascade"
    alpha: float = Field(1.0, ge=0)
    beta: float = Field(0.5, ge=0)
    tune_beta: bool = Field(True, description="pick beta on the validation split from beta_grid")
    beta_grid: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)

    @property
    def lambda_h(self) -> int:
        return 1 if self.mode in ("cascade", "symbolic") else 0

    def coefficients(self, beta: float | None = None) -> tuple[float, float]:
        b = self.beta if beta is None else beta
        return {"cascade": (self.alpha, b), "soft": (self.alpha, b), "neural": (1.0, 0.0),
                "symbolic": (0.0, 1.0)}[self.mode]
