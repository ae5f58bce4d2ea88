"""Compare p4c's P4Info for chimera.p4 with the committed contract (names, ids, widths, match kinds)."""

from __future__ import annotations

from typing import Any

from pathlib import Path

from google.protobuf import text_format

from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.compiler import P4C_P4INFO, compile_p4
from chimera.targets.bmv2.schema import P4INFO


def _summary(info: Any) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple] = {}
    for t in info.tables:
        out[f"table {t.preamble.name}"] = (t.preamble.id, tuple((m.id, m.name, m.bitwidth, m.match_type)
                                                                for m in t.match_fields),
                                           tuple(sorted(a.id for a in t.action_refs)), t.size)
    for a in info.actions:
        out[f"action {a.preamble.name}"] = (a.preamble.id, tuple((p.id, p.name, p.bitwidth) for p in a.params))
    for r in info.registers:
        out[f"register {r.preamble.name}"] = (r.preamble.id, r.type_spec.bitstring.bit.bitwidth, r.size)
    return out


def check_against_p4c(art: Artifact, build_dir: Path) -> list[str]:
    """Differences between p4c's P4Info (for ``art``'s build) and the committed one; [] if none."""
    from finsy.proto import p4i

    js = compile_p4(art, build_dir)
    theirs, ours = p4i.P4Info(), p4i.P4Info()
    text_format.Parse((js.parent / P4C_P4INFO).read_text(), theirs)
    text_format.Parse(P4INFO.read_text(), ours)
    a, b = _summary(theirs), _summary(ours)
    return [f"{k}: p4c {a.get(k)} != committed {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
