"""The throughput kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.experiments.config import ExperimentConfig


class ThroughputSpec(BaseModel):
    """throughput: pps and Gbps through s1 per frame size, Chimera vs bare forwarding vs the software host,
    and the highest fixed rate with 0 packets lost unexplained."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sizes: list[int | Literal["mix"]] = Field([64, 512, 1500, "mix"], min_length=1,
                                              description="Ethernet frame bytes; mix = the dataset's own sizes")
    max_packets: int = Field(20000, ge=100, description="frames per run (test packets, resized)")
    ladder_pps: list[int] = Field([5000, 10000, 20000, 50000, 100000, 200000],
                                  description="fixed rates tried, lowest first, for the highest 0-loss rate")
    software: bool = Field(True, description="also through the software classifier host")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[int | str]) -> list[int | str]:
        bad = [x for x in v if x != "mix" and not 64 <= int(x) <= 1514]
        if bad:
            raise ValueError(f"frame sizes {bad} outside 64..1514 bytes (or 'mix')")
        return v


class ThroughputExperiment(ExperimentConfig):
    kind: Literal["throughput"] = "throughput"
    throughput: ThroughputSpec = ThroughputSpec()


class ThroughputSection(ThroughputSpec):
    """Manifest section ``throughput``: the spec as run, and the ladder's outcome (the rate actually offered:
    tcpreplay may fall short of the one asked)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    max_zero_loss_pps: int | None = None
    max_zero_loss_requested_pps: int | None = None
    target_detail: dict[str, Any] = Field(default_factory=dict)  # JSON in: the manifest's target_detail
