"""Invoke tasks: thin wrappers over the chimera package. ``invoke --list`` shows them.

Each module is one group of commands that only parse their options and call the library; the commands stay at
the top level (``invoke run-experiment``, not ``invoke run.run-experiment``). Tasks choose exit codes; the library
raises ChimeraError with the problem and the fix, which is printed without a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

# invoke loads this package by its path: the checkout's own chimera (installed, or not yet: `invoke setup` installs
# it) is importable from the checkout's root before any task module imports it
_CHECKOUT = str(Path(__file__).resolve().parents[1])
if _CHECKOUT not in sys.path:
    sys.path.insert(0, _CHECKOUT)

from invoke import Collection  # noqa: E402

from tasks.book import book, carry, prune_, publish, reproduce, republish  # noqa: E402
from tasks.checks import bench, dashboard, fuzz, mutate, nightly, test  # noqa: E402
from tasks.data import dataset  # noqa: E402
from tasks.dataplane import build, clean, p4header, p4info, topo  # noqa: E402
from tasks.run import compare, join_sweep, replay, report, run_experiment, sweep, targets  # noqa: E402
from tasks.setup import setup  # noqa: E402

ns = Collection(setup, dataset, run_experiment, sweep, join_sweep, nightly, dashboard, fuzz, mutate, publish, prune_,
                republish, carry, book, reproduce, report, compare, replay, topo, build, p4info, p4header, bench, test, clean,
                targets)
# No task reads the terminal (apt-get runs with -y), so invoke does not mirror stdin into the commands it runs. Its
# stdin mirroring asks the terminal for its foreground process group, which fails (ENOTTY) where stdin is a
# terminal the process does not control: a VM's init console (scripts/vm-boot's guest), setsid, some CI runners.
ns.configure({"run": {"in_stream": False}})
