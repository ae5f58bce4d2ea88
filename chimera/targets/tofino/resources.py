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
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from chimera.errors import ResultsError

#: the schema major version this reader follows (the backend's resources_schema.py, major_version)
SCHEMA_MAJOR = 2
#: where a compile's output directory keeps the report
REPORT = Path("pipe") / "logs" / "resources.json"


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


class Resources(_Model):
    mau: Mau


class Report(_Model):
    program_name: str
    compiler_version: str
    schema_version: str
    resources: Resources


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

    def row(self) -> dict[str, float | int | str]:
        """The flat columns a resources table carries (shares as fractions of the whole pipeline)."""
        out: dict[str, float | int | str] = {"program": self.program, "stages_used": self.stages_used,
                                             "stages_available": self.stages_available}
        for name in SHARES:
            s: Share = getattr(self, name)
            out[f"{name}_used"] = s.used
            out[f"{name}_share"] = s.fraction
        return out


def _by_table(units: tuple[Unit, ...]) -> Counter[str]:
    return Counter(name for u in units for name in {x.used_by for x in u.usages})


def parse(text: str, source: str = "resources.json") -> Allocation:
    """The allocation in a resources.json's text; a file of another schema major version, or one missing what
    this reader needs, is refused with the reason."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{source} is not JSON ({e})", "compile again: the compiler writes it whole") from None
    version = str(raw.get("schema_version", "")) if isinstance(raw, dict) else ""
    if version.split(".")[0] != str(SCHEMA_MAJOR):
        raise ResultsError(f"{source} has resources schema {version or 'none'}; this reader follows "
                           f"{SCHEMA_MAJOR}.x", "use the compiler scripts/build-tofino-compiler builds")
    try:
        rep = Report.model_validate(raw)
    except ValidationError as e:
        raise ResultsError(f"{source} does not hold what a resource report needs: {e.errors()[0]['loc']} "
                           f"{e.errors()[0]['msg']}", "compile again; a compile that failed leaves no report") from None
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
    )


def p4_name(used_by: str) -> str:
    """The P4 table a report's ``used_by`` names: the backend qualifies it with its control
    ("ChimeraIngress.len_range") and marks the parts it splits a table into ("len_range$tind"); the program's own
    name is what is left."""
    return used_by.split("$", 1)[0].rsplit(".", 1)[-1]


def read(out_dir: Path) -> Allocation:
    """The allocation of the compile whose output directory is ``out_dir``."""
    path = out_dir / REPORT
    if not path.is_file():
        raise ResultsError(f"no resource report at {path}", "the compile failed or did not finish: its log says "
                           "why (a refusal is a result: chimera.targets.tofino.compiler.try_compile)")
    return parse(path.read_text(), str(path))
