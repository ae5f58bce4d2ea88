"""Benchmarks (``invoke bench --what ...``): rates and ratios measured in one run, never asserted in tests."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from chimera.errors import ConfigError

log = logging.getLogger(__name__)
BENCHES = {"ingest": "chimera.bench.ingest", "reference": "chimera.bench.reference", "install": "chimera.bench.install",
           "switch": "chimera.bench.switch", "fidelity": "chimera.bench.fidelity", "scale": "chimera.bench.scale",
           "sweep": "chimera.bench.sweep", "zeroloss": "chimera.bench.zeroloss",
           "bmv2ratio": "chimera.bench.bmv2ratio", "bmv2files": "chimera.bench.bmv2files"}


def dispatch(what: str, **options: Any) -> None:
    """Run bench ``what``; ``options`` are its own keyword arguments (only those given on the command line)."""
    if what not in BENCHES:
        raise ConfigError(f"unknown benchmark {what!r}", f"choose one of: {', '.join(BENCHES)}")
    importlib.import_module(BENCHES[what]).main(**options)
