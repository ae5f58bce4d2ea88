"""The latency kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.experiments.config import ExperimentConfig


class LatencySpec(BaseModel):
    """latency: per-packet in-switch and host-to-host latency at offered loads (fixed pps, original packets),
    through the pipeline and, interleaved with it in one run, through baseline programs on the same path."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    loads: dict[str, int] = Field(default_factory=lambda: {"low": 200, "high": 20000},
                                  description="load name -> replay rate (packets/s)")
    max_packets: int = Field(1000, ge=10, description="test packets replayed per load and trial")
    software: bool = Field(True, description="also through the software classifier host (the † path)")
    repeats: int = Field(10, ge=1, description="trials of every path at every load, in a random order within each "
                         "repeat: what one path costs over another is judged on these paired repeats")
    baselines: tuple[str, ...] = Field(("mark_only", "bare"), description="baseline programs interleaved with "
                                       "the pipeline (the target's; one it lacks is left out and logged)")

    @field_validator("loads")
    @classmethod
    def _loads(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: x for k, x in v.items() if x < 1}
        if not v or bad:
            raise ValueError(f"give at least one load, each a rate >= 1 pps (got {v})")
        return v


class LatencyExperiment(ExperimentConfig):
    kind: Literal["latency"] = "latency"
    latency: LatencySpec = LatencySpec()
