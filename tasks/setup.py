"""Set-up: the system packages and the project into .venv (what and where from: chimera.provision)."""

from __future__ import annotations

import logging
import os

from invoke import Context, Exit, task

from tasks._common import python
from chimera.paths import ROOT
from chimera.provision import LOCK_FILE, OPTIONAL_PACKAGES, installed, missing_packages, torch_install


@task
def setup(c: Context) -> None:
    """Install system packages (apt) and the project into .venv; idempotent (needs root)."""
    missing = missing_packages()
    if missing:
        if os.geteuid() != 0:
            raise Exit(f"setup: system packages missing ({' '.join(missing)}); run scripts/bootstrap as root (or under sudo)")
        c.run("apt-get update -q", pty=False)
        c.run("DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends " + " ".join(missing))
    for pkg, why in OPTIONAL_PACKAGES.items():
        if installed(pkg) or os.geteuid() != 0:
            continue
        r = c.run(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {pkg}", warn=True)
        if not r or r.failed:
            logging.getLogger("tasks").warning("setup: optional %s not installed (used by %s); its tests will skip",
                                               pkg, why)
    py = python()
    from chimera.errors import ChimeraError
    try:
        torch_install(c.run, py)
    except ChimeraError as e:
        raise Exit(f"error: {e}", code=2) from None
    # under the lock: the versions the published runs computed with, on every supported Python
    c.run(f"{py} -m pip install -q --disable-pip-version-check -c '{ROOT / LOCK_FILE}' -e '{ROOT}[test]'")
    c.run(f"{py} -c 'import mininet.net, torch, numba; print(\"setup ok: torch\", torch.__version__)'")
