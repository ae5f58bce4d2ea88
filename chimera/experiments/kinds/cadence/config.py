"""The cadence kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.controlplane.config import DAY_S
from chimera.experiments.kinds.stability.config import StabilityExperiment, StabilitySection


class CadenceSpec(BaseModel):
    """The eta x T_cp sweep (hyper_cadence): T_cp is the slow loop's period; eta is the dataplane EMA step
    (``eta_of: dataplane``), or the slow loop's EMA centroid rate (``eta_of: slow_loop``: the paper's Table 5 loop,
    control.centroid_update ema, its memory 1/eta epochs; the dataplane's EMA step stays the compiled one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    eta_of: Literal["dataplane", "slow_loop"] = "dataplane"
    etas: list[float] = Field([0.05, 0.1, 0.3, 0.5], min_length=1)
    t_cp_s: list[float] = Field([10.0, 60.0, 300.0, 1800.0], min_length=1)
    #: explicit (eta, T_cp) cells instead of the grid etas x t_cp_s: the paper's Table 5 is seven rows, not a grid,
    #: and on a dataplane (a day per cell and seed, live installs) the 16-cell grid does not fit a session
    rows: list[tuple[float, float]] | None = Field(None, min_length=1)

    @field_validator("etas")
    @classmethod
    def _eta_range(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 2**-16 <= x <= 0.75]
        if bad:
            raise ValueError(f"eta values {bad} are out of range [2^-16, 0.75]")
        return v

    @field_validator("t_cp_s")
    @classmethod
    def _tcp_range(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 0 < x <= DAY_S]
        if bad:
            raise ValueError(f"T_cp values {bad} are out of range (0, {DAY_S:.0f}] s")
        return v

    @field_validator("rows")
    @classmethod
    def _rows_range(cls, v: list[tuple[float, float]] | None) -> list[tuple[float, float]] | None:
        if v is not None:
            cls._eta_range([e for e, _ in v])
            cls._tcp_range([t for _, t in v])
            if len(set(v)) != len(v):
                raise ValueError(f"cadence.rows repeats a cell: {v}")
        return v

    @property
    def cells(self) -> list[tuple[float, float]]:
        """The (eta, T_cp) cells the run replays, in order: the explicit rows, else the grid."""
        return list(self.rows) if self.rows is not None else [(e, t) for e in self.etas for t in self.t_cp_s]


class CadenceExperiment(StabilityExperiment):
    kind: Literal["cadence"] = "cadence"  # type: ignore[assignment]
    cadence: CadenceSpec


class OperatingPoint(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    eta: float | None = None
    t_cp_s: float | None = None


class CadenceSection(StabilitySection):
    """Manifest section ``stability`` of a cadence run: the day as run, and the experiment's operating point."""

    packets_per_sim_s: float | None = None
    operating_point: OperatingPoint = OperatingPoint()
