"""Compile configuration: table widths, flow slots, EMA parameters and the budgets."""

from __future__ import annotations

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
    fuse_bits: int = Field(16, ge=2, le=24, description="width of the fusion coefficients alpha, beta, gamma")
    flow_slots: int = Field(65536, ge=2, le=2**24)
    ema_eta: float = Field(0.0625, ge=2**-16, le=0.75, description="eta: the dataplane EMA step (fast timescale; "
                           "memory ~1/eta packets), realized as 2^-a or 2^-a + 2^-b (shifts only)")
    ema_frac: int = Field(16, ge=1, le=24, description="F: fixed-point fraction bits of the EMA registers")
    map_version: int = Field(1, ge=0, le=0xFFFF)
    sample_shift: int = Field(4, ge=0, le=16, description="the token sample buffer takes every 2^k-th parsed packet")
    sample_slots: int = Field(4096, ge=16, le=65536, description="slots of the token sample buffer (power of two)")
    prior_logits: float = Field(0.0, ge=0, le=8, description="reserve a control-plane class bias of up to this "
                                "many logits: an extra soft rule that matches every packet, weights 0 at compile "
                                "time, set live by the slow loop's prior-shift correction (0: no such rule)")
    budgets: Budgets = Budgets()

    @field_validator("flow_slots", "sample_slots")
    @classmethod
    def _pow2(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"must be a power of two (the index is a mask: slot = hash & (F-1)), got {v}")
        return v


def ema_shifts(eta: float) -> tuple[int, int]:
    """(a, b) with 2^-a + 2^-b (b = 0: no second term) closest to ``eta``; a single shift wins ties."""
    best = (abs(eta - 2.0**-1), 1, 0)
    for a in range(1, 17):
        best = min(best, (abs(eta - 2.0**-a), a, 0))
        for b in range(a + 1, 17):
            best = min(best, (abs(eta - 2.0**-a - 2.0**-b), a, b))
    return best[1], best[2]


def ema_eta_effective(a: int, b: int) -> float:
    return 2.0**-a + (2.0**-b if b else 0.0)
