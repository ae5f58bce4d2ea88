"""The pseudo_grid kind's configuration: the confidence gate x churn cap grid, and which role the run plays."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chimera.controlplane.pseudo import PseudoLabelConfig
from chimera.experiments.kinds.stability.config import ADAPTATIONS, StabilityExperiment, StabilitySection
from chimera.experiments.kinds.stability.run import COMPARISONS

_DEFAULT = PseudoLabelConfig()


def control_of(arm: str) -> str:
    """The configuration a pseudo-label arm is paired with: the stability kind's own comparison of it (Pseudo-Label
    against Static-Map, Chimera+Pseudo against Chimera), so a cell's difference is the one the day reports."""
    for a, b, _ in COMPARISONS:
        if a == arm:
            return b
    raise ValueError(f"{arm} has no comparison in the stability kind's COMPARISONS")


class PseudoGridSpec(BaseModel):
    """The grid: every (gate_quantile, max_entries) cell, or the explicit ``cells`` (a held-out run: the default
    and what validation chose). ``role`` says which data the run is: ``validation`` days choose, ``held-out`` days
    only report; the choice rule is ``chimera.experiments.kinds.pseudo_grid.run.choose``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["validation", "held-out"]
    gate_quantile: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        [0.0, 0.25, 0.5, 0.75, 0.9], min_length=1, description="the confidence gate's quantile of the calibration "
        "scores (PseudoLabelConfig.gate_quantile)")
    max_entries: list[Annotated[int, Field(ge=1)]] = Field(
        [1, 4, 16, 64, 256], min_length=1, description="the churn cap: global entries changed per install "
        "(PseudoLabelConfig.max_entries)")
    cells: list[tuple[float, int]] | None = Field(None, min_length=1, description="explicit (gate_quantile, "
                                                  "max_entries) cells instead of the grid")

    @property
    def grid(self) -> list[tuple[float, int]]:
        """The cells run, in order; the loop's default cell (PseudoLabelConfig's) among them."""
        out = list(self.cells) if self.cells is not None else \
            [(q, c) for q in self.gate_quantile for c in self.max_entries]
        if len(set(out)) != len(out):
            raise ValueError(f"pseudo_grid repeats a cell: {out}")
        return out

    @model_validator(mode="after")
    def _has_default(self) -> "PseudoGridSpec":
        if default_cell() not in self.grid:
            raise ValueError(f"the grid must hold the loop's default cell {default_cell()} "
                             "(chimera.controlplane.pseudo.PseudoLabelConfig): the choice is judged against it")
        return self


def default_cell() -> tuple[float, int]:
    """(gate_quantile, max_entries) of the loop as the stability days run it."""
    return (_DEFAULT.gate_quantile, _DEFAULT.max_entries)


class PseudoGridExperiment(StabilityExperiment):
    kind: Literal["pseudo_grid"] = "pseudo_grid"  # type: ignore[assignment]
    pseudo_grid: PseudoGridSpec

    @model_validator(mode="after")
    def _arms_and_controls(self) -> "PseudoGridExperiment":
        confs = self.stability.configurations
        if not self.arms:
            raise ValueError(f"stability.configurations {confs} names no pseudo-label arm "
                             f"({[c for c, a in ADAPTATIONS.items() if a.pseudo is not None]})")
        missing = [control_of(a) for a in self.arms if control_of(a) not in confs]
        if missing:
            raise ValueError(f"stability.configurations must also list each arm's control: add {missing}")
        if [c for c in confs if ADAPTATIONS[c].oracle]:
            raise ValueError("the oracle is no pseudo-label arm nor a control: leave it to the stability days")
        return self

    @property
    def arms(self) -> list[str]:
        """The pseudo-label configurations swept (each cell runs each of them)."""
        return [c for c in self.stability.configurations if ADAPTATIONS[c].pseudo is not None]

    @property
    def controls(self) -> list[str]:
        """Each arm's control, run once per training seed and day."""
        return list(dict.fromkeys(control_of(a) for a in self.arms))


class PseudoGridSection(StabilitySection):
    """Manifest section ``stability`` of a pseudo_grid run: the day as run, the role and the default cell."""

    role: str = ""
    default_gate_quantile: float | None = None
    default_max_entries: int | None = None
    global_entries: int | None = None
