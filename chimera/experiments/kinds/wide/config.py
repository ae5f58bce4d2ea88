"""The wide kind's configuration: the rows to widen, the wider learning-rate ladder, and the experiment it widens."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.experiments.config import ExperimentConfig

#: the budget's ladder (chimera.baselines.budget.LR_LADDER) is this formula at k = -2..4; the wide ladder extends
#: it on both sides, rung for rung (tests/test_wide.py checks that the budget's rungs are among the wide ones)
LOW_RATE, HIGH_RATE = 3e-3, 0.02


def rung(k: int) -> float:
    """The learning rate at rung ``k``: 3e-3 * (0.02 / 3e-3) ** (k / 2), to two significant figures."""
    return float(f"{LOW_RATE * (HIGH_RATE / LOW_RATE) ** (k / 2):.2g}")


class WideSpec(BaseModel):
    """wide: every rung from ``low`` to ``high`` trained (a grid, not a walk), at one batch size."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    low: int = Field(-6, le=-2, description="the lowest rung (the budget's ladder starts at -2): 1e-5 at -6")
    high: int = Field(6, ge=4, description="the highest rung (the budget's ladder ends at 4): 0.89 at 6")
    batch_size: int = Field(512, ge=1, description="the budget's batch size (held, as its walk holds it)")
    widens: str = Field(..., description="the experiment whose budgeted rows this run widens "
                        "(experiments/<widens>.yaml): every setting but name, kind, description, variants and "
                        "this section must equal that file's, so its runs and this one pair seed by seed")

    def rates(self) -> tuple[float, ...]:
        return tuple(rung(k) for k in range(self.low, self.high + 1))


class WideExperiment(ExperimentConfig):
    kind: Literal["wide"] = "wide"
    wide: WideSpec
