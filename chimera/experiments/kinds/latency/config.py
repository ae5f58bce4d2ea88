"""The latency kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chimera.experiments.config import ExperimentConfig


class LatencySpec(BaseModel):
    """latency: per-packet in-switch and host-to-host latency at offered loads (fixed pps, original packets),
    through the pipeline and, interleaved with it in one run, through baseline programs on the same path."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    loads: dict[str, int] = Field(default_factory=lambda: {"low": 200, "high": 20000},
                                  description="load name -> replay rate (packets/s)")
    max_packets: int = Field(1000, ge=10, description="test packets replayed per load and trial")
    packets: dict[str, int] = Field(default_factory=dict, description="load name -> test packets per trial at that "
                                    "load, in place of max_packets (a p99 needs far more than 100 packets: at 1,000 "
                                    "it is the 10th-largest value, and the tail verdict turned over between two "
                                    "runs)")
    software: bool = Field(True, description="also through the software classifier host (the † path)")
    repeats: int = Field(10, ge=1, description="trials of every path at every load, in a random order within each "
                         "repeat: what one path costs over another is judged on these paired repeats")
    baselines: tuple[str, ...] = Field(("mark_only", "bare"), description="baseline programs interleaved with "
                                       "the pipeline (the target's; one it lacks is left out and logged)")

    @model_validator(mode="after")
    def _packets_per_known_load(self) -> "LatencySpec":
        unknown = sorted(set(self.packets) - set(self.loads))
        if unknown or any(n < 10 for n in self.packets.values()):
            raise ValueError(f"packets: {self.packets} names loads {unknown} not in loads {sorted(self.loads)}, or "
                             "asks for fewer than 10 packets")
        return self

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
