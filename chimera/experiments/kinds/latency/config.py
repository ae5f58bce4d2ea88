"""The latency kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.experiments.config import ExperimentConfig


class LatencySpec(BaseModel):
    """latency: per-packet in-switch and host-to-host latency at offered loads (fixed pps, original packets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    loads: dict[str, int] = Field(default_factory=lambda: {"low": 200, "high": 20000},
                                  description="load name -> replay rate (packets/s)")
    max_packets: int = Field(3000, ge=10, description="test packets replayed per load")
    software: bool = Field(True, description="also through the software classifier host (the † path)")

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
