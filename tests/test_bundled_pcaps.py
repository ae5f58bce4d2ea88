"""The captures in pcaps/ are what their generators make (regenerate with scripts/make-pcaps)."""

from __future__ import annotations

from pathlib import Path

from chimera.data.bundled import PCAPS, write_bundled


def test_bundled_pcaps_are_current(tmp_path: Path) -> None:
    fresh = write_bundled(tmp_path)
    names = sorted(str(p.relative_to(tmp_path)) for p in fresh)
    committed = sorted(str(p.relative_to(PCAPS)) for p in PCAPS.rglob("*.pcap"))
    assert names == committed, "run scripts/make-pcaps"
    for p in fresh:
        assert p.read_bytes() == (PCAPS / p.relative_to(tmp_path)).read_bytes(), f"{p.name} is stale: run scripts/make-pcaps"
