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
