"""What `invoke setup` installs and where from: the system packages, the pinned torch build and the lock.

Planning only (which packages are missing, which torch source to use); the task runs the commands. Nothing here
imports beyond the standard library: it runs before the project's own dependencies are installed.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from chimera.errors import ConfigError

log = logging.getLogger(__name__)

SYSTEM_PACKAGES = (
    "mininet", "tcpreplay", "tcpdump", "clang", "llvm", "libbpf-dev", "libbpf1", "bpftool", "iproute2",
    "ethtool", "python3-venv", "python3-pip", "gcc", "libc6-dev",
)
#: installed where the distribution has them; their tests skip with the reason where absent
OPTIONAL_PACKAGES = {"chromium": "the nightly dashboard's browser test (tests/test_nightly.py)"}
TORCH = "torch==2.13.0"  # the pin in pyproject.toml
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: local | cpu-index | index | an index URL: overrides where `invoke setup` takes torch from
TORCH_ENV = "CHIMERA_TORCH"
#: every Python distribution the project needs, at one version each (`pip install -c`): pyproject.toml states
#: ranges, and a newer Python would take newer numbers (numpy 2.5 and scipy 1.18 on 3.12 where 3.11 has 2.4 and
#: 1.17): the floats behind every F1 agree across machines only where the libraries computing them do.
#: scripts/check-wheels writes it from .venv and checks each pin has a wheel for every supported Python.
LOCK_FILE = "constraints.txt"


def lock_pins(text: str) -> dict[str, str]:
    """The lock's ``name==version`` lines (comments and blank lines skipped), by normalized name."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            if not sep:
                raise ConfigError(f"{LOCK_FILE}: {line!r} is not name==version",
                                  "regenerate it: .venv/bin/python scripts/check-wheels --lock")
            out[normalized(name)] = version.strip()
    return out


def normalized(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(package: str) -> bool:
    """Whether dpkg has ``package`` installed."""
    return subprocess.run(["dpkg", "-s", package], capture_output=True, check=False).returncode == 0


def missing_packages() -> list[str]:
    """The system packages still to install."""
    return [p for p in SYSTEM_PACKAGES if not installed(p)]


@dataclass(frozen=True)
class TorchPlan:
    """Where torch comes from: the CPU build unless nothing else is reachable (the CUDA one is gigabytes)."""

    source: str
    pip_args: tuple[str, ...]
    warning: str = ""


def torch_plan(override: str, local_cpu_wheel: bool, cpu_index_reachable: bool) -> TorchPlan:
    """Local CPU wheel > the CPU wheel index > the plain index (with a warning); ``override`` ($CHIMERA_TORCH) wins."""
    choice = override or ("local" if local_cpu_wheel else "cpu-index" if cpu_index_reachable else "index")
    if choice == "local":
        # torch alone from find-links; its dependencies come with the project's install, from the index
        return TorchPlan("a local CPU wheel (pip's find-links)", ("--no-index", "--no-deps", TORCH))
    if choice == "cpu-index":
        return TorchPlan(TORCH_CPU_INDEX, ("--index-url", TORCH_CPU_INDEX, "--extra-index-url",
                                           "https://pypi.org/simple", TORCH))
    if choice == "index":
        return TorchPlan("the configured package index", (TORCH,),
                         "no CPU build of torch is reachable: the index's Linux wheel pulls CUDA (several GB). "
                         f"Point {TORCH_ENV} at a CPU wheel index, or put a CPU wheel in pip's find-links")
    if "://" in choice:
        return TorchPlan(choice, ("--index-url", choice, TORCH))
    raise ConfigError(f"setup: {TORCH_ENV}={choice!r} is not one of local, cpu-index, index or an index URL",
                      f"unset {TORCH_ENV}, or set it to one of those")


def torch_install(run: Callable[[str], object], py: str) -> None:
    """Install the pinned torch from the source torch_plan picks (``run`` runs a shell command), unless it is
    already there."""
    have = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                          check=False)
    if have.returncode == 0 and have.stdout.strip().split("+")[0] == TORCH.split("==")[1]:
        return
    local = subprocess.run([py, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-q", TORCH],
                           capture_output=True, check=False).returncode == 0
    reachable = False
    if not local:
        try:
            with urllib.request.urlopen(TORCH_CPU_INDEX + "/torch/", timeout=10):
                reachable = True
        except OSError:
            pass
    plan = torch_plan(os.environ.get(TORCH_ENV, ""), local, reachable)
    if plan.warning:
        log.warning("setup: %s", plan.warning)
    log.info("setup: torch from %s", plan.source)
    run(f"{py} -m pip install -q --disable-pip-version-check " + " ".join(plan.pip_args))
