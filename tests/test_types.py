"""The type checker over chimera/ and tasks.py (pyproject's [tool.mypy]): clean, with every `type: ignore` needed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_chimera() -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed: invoke setup installs the test extras (pip install -e '.[test]')")
    r = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]
    assert "Success" in r.stdout


def test_dict_str_any_only_at_a_commented_boundary() -> None:
    """``dict[str, Any]`` appears only where data crosses an I/O boundary (JSON or YAML in or out, a library's
    keyword arguments), each with a comment saying which (on its line or the line above). Table rows are
    ``chimera.formats.rows.Cells`` or a row class, a switch's registers ``chimera.formats.registers.Registers``
    (issue 55)."""
    import re
    found: dict[str, int] = {}
    for py in sorted((ROOT / "chimera").rglob("*.py")):
        rel = py.relative_to(ROOT).as_posix()
        lines = py.read_text().splitlines()
        for i, ln in enumerate(lines):
            if "dict[str, Any]" not in ln.split("#")[0]:
                continue
            if "#" in ln or (i and re.match(r"\s*# dict\[str, Any\]: \S", lines[i - 1])):
                continue
            found[rel] = found.get(rel, 0) + ln.split("#")[0].count("dict[str, Any]")
    assert not found, f"uncommented dict[str, Any] (type it, or say which boundary it is): {found}"
