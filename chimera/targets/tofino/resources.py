"""The Tofino compiler's resource report, read into a typed allocation (issue 57).

p4c's Tofino backend writes ``<out>/pipe/logs/resources.json`` on every compile that fits. Its schema is the
backend's own (``backends/tofino/compiler_interfaces/schemas/resources_schema.py``, version 2.x): per MAU stage,
the SRAM and TCAM units used (each with the tables that use it), the map RAMs, the stateful (meter) ALUs that the
RegisterActions run on, the logical table ids, the input crossbar bytes and the action data bus bytes, each with
the stage's capacity beside it. Only that subset is modelled here (pydantic ignores the rest), so a newer minor
version of the schema still reads; a different major version is refused, naming the version.

Table 2 reports shares: what the program uses over what the pipeline has. The pipeline has ``nStages`` stages,
each with the capacity the stage's own record states, so every share here is computed from the file, not from a
constant copied from a datasheet.

Beside it the backend writes ``metrics.json`` (its metrics schema, version 1.x): the PHV containers and bits each
container class holds, and the MAU's latency per gress in clock cycles. The PHV share is those over the containers
resources.json lists (``phv_containers``: every class's units and width); the latency is kept as the compiler states
it, a cycle count, not a time.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from chimera.errors import ResultsError

#: the schema major version this reader follows (the backend's resources_schema.py, major_version)
SCHEMA_MAJOR = 2
#: where a compile's output directory keeps the report
REPORT = Path("pipe") / "logs" / "resources.json"
#: the schema major version of the backend's metrics.json this reader follows (its metrics_schema.py)
METRICS_MAJOR = 1
#: where a compile's output directory keeps its metrics (PHV occupancy, MAU latency)
METRICS = Path("pipe") / "logs" / "metrics.json"
#: where a compile's output directory keeps table placement's summary (each attempt's stage count)
PLACEMENT = Path("pipe") / "logs" / "table_summary.log"
#: the summary's line giving the longest chain of dependent tables, in stages
CRITICAL_PATH = re.compile(r"^Critical path length through the table dependency graph: (\d+)", re.M)


def critical_path(out_dir: Path) -> int | None:
    """The stages the longest chain of dependent tables needs, as table placement states it (the most of its
    attempts): the least any placement of the program can take, whatever the resources. None where the compile
    stopped before table placement."""
    path = out_dir / PLACEMENT
    found = [int(n) for n in CRITICAL_PATH.findall(path.read_text())] if path.is_file() else []
    return max(found, default=None)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Usage(_Model):
    used_by: str
    used_for: str = ""


class Unit(_Model):
    """One physical unit (an SRAM, a TCAM, a map RAM, a meter ALU) and the tables that use it."""
    usages: tuple[Usage, ...] = ()


class Grid(_Model):
    """Memory units laid out in rows and columns per stage."""
    nRows: int
    nColumns: int

    @property
    def per_stage(self) -> int:
        return self.nRows * self.nColumns


class Rams(Grid):
    srams: tuple[Unit, ...] = ()


class Tcams(Grid):
    tcams: tuple[Unit, ...] = ()


class MapRams(_Model):
    nRows: int
    nUnits: int
    maprams: tuple[Unit, ...] = ()


class MeterAlus(_Model):
    nAlus: int
    meters: tuple[Unit, ...] = ()


class LogicalId(_Model):
    id: int
    table_name: str


class LogicalTables(_Model):
    size: int
    ids: tuple[LogicalId, ...] = ()


class Sized(_Model):
    """A bus or crossbar: its size in bytes and the bytes used."""
    size: int
    bytes: tuple[dict[str, object], ...] = ()   # library boundary: only the count is read


class Stage(_Model):
    stage_number: int
    rams: Rams
    tcams: Tcams
    map_rams: MapRams | None = None
    meter_alus: MeterAlus | None = None
    logical_tables: LogicalTables | None = None
    xbar_bytes: Sized | None = None
    action_bus_bytes: Sized | None = None


class Mau(_Model):
    nStages: int
    mau_stages: tuple[Stage, ...]


class ContainerClass(_Model):
    """A PHV container class's size: ``units`` containers of ``width`` bits."""
    width: int
    units: int


class PhvContainers(_Model):
    normal: tuple[ContainerClass, ...] = ()
    tagalong: tuple[ContainerClass, ...] = ()

    def classes(self) -> tuple[ContainerClass, ...]:
        return self.normal + self.tagalong


class Resources(_Model):
    mau: Mau
    phv_containers: PhvContainers | None = None


class Report(_Model):
    program_name: str
    compiler_version: str
    schema_version: str
    resources: Resources


class Occupied(_Model):
    """What one width of a PHV container class holds (metrics.json)."""
    bit_width: int
    containers_occupied: int
    bits_occupied: int


class MetricsPhv(_Model):
    normal: tuple[Occupied, ...] = ()
    tagalong: tuple[Occupied, ...] = ()


class Latency(_Model):
    gress: str
    cycles: int


class MetricsMau(_Model):
    latency: tuple[Latency, ...] = ()


class Metrics(_Model):
    schema_version: str
    phv: MetricsPhv
    mau: MetricsMau


@dataclass(frozen=True)
class Share:
    """``used`` units of ``capacity`` (over every stage of the pipeline)."""
    used: int
    capacity: int

    @property
    def fraction(self) -> float:
        return self.used / self.capacity if self.capacity else 0.0


#: the resources an allocation reports as shares of the pipe, in the order a table shows them
SHARES = ("sram", "tcam", "map_ram", "stateful_alu", "logical_tables", "xbar_bytes", "action_bus_bytes")
#: the PHV's shares, from metrics.json where the compile wrote one
PHV_SHARES = ("phv_containers", "phv_bits")


@dataclass(frozen=True)
class Allocation:
    """What the compiler allocated to one program: the stages it spans and its share of each resource, with the
    SRAM and TCAM units per table (a unit shared by two tables counts once in the totals, once for each table)."""

    program: str
    compiler_version: str
    stages_available: int
    stages_used: int
    sram: Share
    tcam: Share
    map_ram: Share
    stateful_alu: Share
    logical_tables: Share
    xbar_bytes: Share
    action_bus_bytes: Share
    sram_by_table: dict[str, int]
    tcam_by_table: dict[str, int]
    #: the PHV containers and bits the program occupies, of every container the pipe has (None: no metrics.json)
    phv_containers: Share | None = None
    phv_bits: Share | None = None
    #: the MAU's latency per gress ("ingress", "egress") in clock cycles, as the compiler estimates it
    latency_cycles: dict[str, int] | None = None

    def row(self) -> dict[str, float | int | str]:
        """The flat columns a resources table carries (shares as fractions of the whole pipeline; the latency in
        cycles, as ``<gress>_latency_cycles``)."""
        out: dict[str, float | int | str] = {"program": self.program, "stages_used": self.stages_used,
                                             "stages_available": self.stages_available}
        for name in (*SHARES, *PHV_SHARES):
            s: Share | None = getattr(self, name)
            if s is not None:
                out[f"{name}_used"] = s.used
                out[f"{name}_share"] = s.fraction
        for gress, cycles in (self.latency_cycles or {}).items():
            out[f"{gress}_latency_cycles"] = cycles
        return out


def _by_table(units: tuple[Unit, ...]) -> Counter[str]:
    return Counter(name for u in units for name in {x.used_by for x in u.usages})


M = TypeVar("M", bound=_Model)


def _validated(text: str, source: str, model: type[M], major: int, what: str) -> M:
    """``text`` read as ``model``; a file of another schema major version, or one missing what this reader needs,
    is refused with the reason."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{source} is not JSON ({e})", "compile again: the compiler writes it whole") from None
    version = str(raw.get("schema_version", "")) if isinstance(raw, dict) else ""
    if version.split(".")[0] != str(major):
        raise ResultsError(f"{source} has {what} schema {version or 'none'}; this reader follows "
                           f"{major}.x", "use the compiler scripts/build-tofino-compiler builds")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise ResultsError(f"{source} does not hold what a {what} report needs: {e.errors()[0]['loc']} "
                           f"{e.errors()[0]['msg']}", "compile again; a compile that failed leaves no report") from None


def phv(containers: PhvContainers, metrics: Metrics) -> tuple[Share, Share]:
    """The PHV containers and bits ``metrics`` says the program occupies, of every container ``containers`` lists
    (normal and tagalong alike)."""
    held = metrics.phv.normal + metrics.phv.tagalong
    classes = containers.classes()
    return (Share(sum(x.containers_occupied for x in held), sum(c.units for c in classes)),
            Share(sum(x.bits_occupied for x in held), sum(c.units * c.width for c in classes)))


def parse(text: str, source: str = "resources.json", metrics: str | None = None,
          metrics_source: str = "metrics.json") -> Allocation:
    """The allocation in a resources.json's text, with the PHV and latency of the compile's metrics.json text
    where given; a file of another schema major version, or one missing what this reader needs, is refused with
    the reason."""
    rep = _validated(text, source, Report, SCHEMA_MAJOR, "resources")
    met = _validated(metrics, metrics_source, Metrics, METRICS_MAJOR, "metrics") if metrics is not None else None
    pc = rep.resources.phv_containers
    phv_containers, phv_bits = phv(pc, met) if met is not None and pc is not None else (None, None)
    mau = rep.resources.mau
    n = mau.nStages
    stages = mau.mau_stages
    first = stages[0] if stages else None

    def per_stage(units: int) -> int:   # the whole pipe's units, from one stage's
        return units * n

    used_stages = [s for s in stages if s.rams.srams or s.tcams.tcams or (s.logical_tables and s.logical_tables.ids)]
    return Allocation(
        program=rep.program_name, compiler_version=rep.compiler_version, stages_available=n,
        stages_used=len(used_stages),
        sram=Share(sum(len(s.rams.srams) for s in stages),
                   per_stage(first.rams.per_stage) if first else 0),
        tcam=Share(sum(len(s.tcams.tcams) for s in stages),
                   per_stage(first.tcams.per_stage) if first else 0),
        map_ram=Share(sum(len(s.map_rams.maprams) for s in stages if s.map_rams),
                      per_stage(first.map_rams.nRows * first.map_rams.nUnits) if first and first.map_rams else 0),
        stateful_alu=Share(sum(len(s.meter_alus.meters) for s in stages if s.meter_alus),
                           per_stage(first.meter_alus.nAlus) if first and first.meter_alus else 0),
        logical_tables=Share(sum(len(s.logical_tables.ids) for s in stages if s.logical_tables),
                             per_stage(first.logical_tables.size) if first and first.logical_tables else 0),
        xbar_bytes=Share(sum(len(s.xbar_bytes.bytes) for s in stages if s.xbar_bytes),
                         per_stage(first.xbar_bytes.size) if first and first.xbar_bytes else 0),
        action_bus_bytes=Share(sum(len(s.action_bus_bytes.bytes) for s in stages if s.action_bus_bytes),
                               per_stage(first.action_bus_bytes.size) if first and first.action_bus_bytes else 0),
        sram_by_table=dict(sum((_by_table(s.rams.srams) for s in stages), Counter())),
        tcam_by_table=dict(sum((_by_table(s.tcams.tcams) for s in stages), Counter())),
        phv_containers=phv_containers, phv_bits=phv_bits,
        latency_cycles={x.gress: x.cycles for x in met.mau.latency} if met is not None else None,
    )


def p4_name(used_by: str) -> str:
    """The P4 table a report's ``used_by`` names: the backend qualifies it with its control
    ("ChimeraIngress.len_range") and marks the parts it splits a table into ("len_range$tind"); the program's own
    name is what is left."""
    return used_by.split("$", 1)[0].rsplit(".", 1)[-1]


def read(out_dir: Path) -> Allocation:
    """The allocation of the compile whose output directory is ``out_dir`` (its PHV and latency where the compile
    wrote metrics.json)."""
    path = out_dir / REPORT
    if not path.is_file():
        raise ResultsError(f"no resource report at {path}", "the compile failed or did not finish: its log says "
                           "why (a refusal is a result: chimera.targets.tofino.compiler.try_compile)")
    m = out_dir / METRICS
    return parse(path.read_text(), str(path), m.read_text() if m.is_file() else None, str(m))
