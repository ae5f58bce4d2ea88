"""The mutation triage (``docs/mutants.yaml``): every survivor any mutation run has drawn, and what became of it.

Each entry is one of

- ``equivalent``: argued, in ``reason``, to change no observable; ``invoke mutate`` does not run it;
- ``killed``: killed since it survived, by the test or corpus entry named in ``by``; a night on which it
  survives again has lost that kill: a real regression;
- ``untriaged``: drawn, survived, and not yet looked at; ``first_drawn`` is the night that drew it. The nightly
  writes such entries itself, and fails once one is older than its suite allows.

The nightly's verdict on a mutation run (``verdict``) reads only the outcomes, this file and the night's date, so
running the same night twice gives the same verdict; the score is reported over every mutant drawn so far
(``cumulative``), with its interval, and never judged against a floor (a sampled score would fail by chance).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from chimera import paths
from chimera.errors import ConfigError, validation_problems

TRIAGE = paths.DOCS / "mutants.yaml"
Status = Literal["equivalent", "killed", "untriaged"]


class Entry(BaseModel):
    """One survivor and what became of it."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    mutant: str
    status: Status
    reason: str | None = None       # equivalent: the argument
    by: str | None = None           # killed: the test or corpus entry that kills it now
    first_drawn: dt.date | None = None   # untriaged: the night that drew it

    @model_validator(mode="after")
    def _complete(self) -> "Entry":
        need = {"equivalent": "reason", "killed": "by", "untriaged": "first_drawn"}[self.status]
        if getattr(self, need) in (None, ""):
            raise ValueError(f"a {self.status} mutant needs `{need}`")
        return self


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k kills in n mutants (small n, a score near 1)."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def load(path: Path = TRIAGE) -> dict[str, Entry]:
    """Mutant id -> its entry; a malformed file is named with the fix (never read as empty)."""
    if not path.is_file():
        raise ConfigError(f"no mutation triage at {path}", "restore docs/mutants.yaml from git")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: not a mapping of mutant ids", "fix the YAML: ID: {mutant: ..., status: ...}")
        return {str(k): Entry.model_validate(v) for k, v in raw.items()}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})", "fix the YAML: ID: {mutant: ..., status: ...}") from None
    except ValidationError as e:
        raise ConfigError(f"{path}: an entry is incomplete: {validation_problems(e)}",
                          "give an equivalent mutant its reason, a killed one its `by`, an untriaged one its "
                          "first_drawn date") from None


def equivalents(path: Path = TRIAGE) -> dict[str, str]:
    """Mutant id -> the argued reason it cannot change any observable."""
    return {k: e.reason or "" for k, e in load(path).items() if e.status == "equivalent"}


def record_new(survivors: pd.DataFrame, night: dt.date, path: Path = TRIAGE) -> list[str]:
    """Append the survivors the file does not hold yet as untriaged, first drawn ``night``; returns their ids.
    Appends text only: the comments and arguments already there are kept as written."""
    have = load(path)
    new = survivors[~survivors["id"].astype(str).isin(have)].drop_duplicates("id")
    if not len(new):
        return []
    lines = []
    for _, r in new.iterrows():
        what = f"{r['file']}:{int(r['line'])}: {r['operator']} `{r['original']}` -> `{r['replacement']}`"
        # quoted: an id of hex digits can read as a YAML number (01234567 octal, 0b1010 binary, 9993748544)
        lines += ["", f'"{r["id"]}":', f"  mutant: {yaml.safe_dump(what, width=10_000).splitlines()[0]}",
                  "  status: untriaged", f"  first_drawn: {night.isoformat()}"]
    text = path.read_text()
    path.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    load(path)  # what was written reads back
    return [str(x) for x in new["id"]]


@dataclass(frozen=True)
class Finding:
    """One judged fact of a mutation run against the triage."""
    file: str
    regressed: bool
    what: str


def verdict(outcomes: pd.DataFrame, triage: dict[str, Entry], night: dt.date, untriaged_days: int,
            files: list[str]) -> list[Finding]:
    """Per file, a kill lost (a mutant triaged as killed survived); and, over the whole file, survivors left
    untriaged past their days. A pure function of its arguments: the same outcomes, triage and night give the same
    findings, however long each mutant took."""
    out = []
    for f in files:
        mine = outcomes[outcomes["file"] == f] if len(outcomes) else outcomes
        surv = set(mine[mine["status"] == "survived"]["id"].astype(str)) if len(mine) else set()
        lost = sorted(i for i in surv if i in triage and triage[i].status == "killed")
        new = sorted(i for i in surv if i not in triage)
        if lost:
            out.append(Finding(f, True, "a kill lost: " + ", ".join(f"{i} (killed by {triage[i].by})" for i in lost)))
        else:
            out.append(Finding(f, False, f"{len(mine)} drawn, {len(surv)} survived, no kill lost" + (
                f"; new survivors, recorded as untriaged: {', '.join(new)}" if new else "")))
    overdue = sorted(i for i, e in triage.items() if e.status == "untriaged" and e.first_drawn is not None
                     and (night - e.first_drawn).days > untriaged_days)
    waiting = sorted(i for i, e in triage.items() if e.status == "untriaged")
    out.append(Finding("triage", bool(overdue), (f"untriaged for more than {untriaged_days} days: " + ", ".join(
        f"{i} (first drawn {triage[i].first_drawn})" for i in overdue)) if overdue else
        f"{len(waiting)} survivors await triage, none for more than {untriaged_days} days"))
    return out


def cumulative(outcomes: pd.DataFrame, triage: dict[str, Entry]) -> dict[str, dict[str, float | int]]:
    """The score over every mutant drawn so far (rows of every run's mutants.csv, oldest first): each mutant once,
    its newest outcome, a survivor triaged as killed since counted killed, equivalents and invalid ones left
    out; with a 95% Wilson interval."""
    out: dict[str, dict[str, float | int]] = {}
    if not len(outcomes):
        return out
    last = outcomes.drop_duplicates("id", keep="last")
    for f, g in last.groupby("file"):
        ids = g["id"].astype(str)
        st = g["status"].where(~ids.isin([i for i, e in triage.items() if e.status == "equivalent"]), "equivalent")
        st = st.where(~(ids.isin([i for i, e in triage.items() if e.status == "killed"]) & (st == "survived")),
                      "killed")
        killed = int(st.isin(["killed", "timeout"]).sum())
        survived = int((st == "survived").sum())
        lo, hi = wilson(killed, killed + survived)
        out[str(f)] = {"drawn": len(g), "killed": killed, "survived": survived,
                       "equivalent": int((st == "equivalent").sum()),
                       "score": killed / (killed + survived) if killed + survived else math.nan, "lo": lo, "hi": hi}
    return out


def mutation_tables(published: Path) -> list[Path]:
    """Every published mutation run's mutants.csv (standalone runs and the nights'), oldest first."""
    paths = list(published.glob("mutate/*/mutants.csv")) + list(published.glob("nightly/*/runs/mutate/*/mutants.csv"))
    return sorted(paths, key=lambda p: p.parent.name)


def every_outcome(published: Path) -> pd.DataFrame:
    """The rows of every published mutation run, oldest first (``cumulative`` keeps each mutant's newest)."""
    frames = [pd.read_csv(p, dtype={"id": str}) for p in mutation_tables(published)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["id", "file", "status"])
