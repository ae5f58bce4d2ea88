"""`invoke setup`'s choice of torch build: the CPU one by default, never CUDA without a warning (issue 23).

Only the local-wheel path can be exercised on this project's machines; the plan for the others is checked here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tasks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chimera_tasks", ROOT / "tasks.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["chimera_tasks"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("override, local, reachable, source, warns", [
    ("", True, True, "local", False),          # a local CPU wheel first
    ("", False, True, "cpu", False),           # else the CPU wheel index
    ("", False, False, "index", True),         # else the plain index, with a warning about CUDA's size
    ("index", True, True, "index", True),      # the environment variable overrides
    ("cpu-index", True, False, "cpu", False),
    ("https://mirror.example/whl/cpu", True, True, "mirror.example", False),
])
def test_torch_plan_prefers_the_cpu_build(tasks: ModuleType, override: str, local: bool, reachable: bool,
                                          source: str, warns: bool) -> None:
    plan = tasks.torch_plan(override, local, reachable)
    assert source in plan.source and plan.pip_args[-1] == tasks.TORCH
    assert bool(plan.warning) == warns and (not warns or "CUDA" in plan.warning)
    if source == "cpu":
        assert tasks.TORCH_CPU_INDEX in plan.pip_args


def test_torch_plan_names_a_bad_override(tasks: ModuleType) -> None:
    from invoke import Exit
    with pytest.raises(Exit, match="CHIMERA_TORCH='cuda'.*local, cpu-index, index"):
        tasks.torch_plan("cuda", True, True)


def test_torch_pin_matches_pyproject(tasks: ModuleType) -> None:
    import tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert tasks.TORCH in deps
