"""Datasets: generate a synthetic one, or normalize a real one."""

from __future__ import annotations

import logging

from invoke import Context, Exit, task

from tasks._common import cli


@task(help={"profile": "ciciot | peerrush | iscxvpn", "flows": "number of flows", "seed": "random seed",
            "out": "output directory (default data/<profile>-<flows>-s<seed>)",
            "attacks": "comma list of SCAN,SYN_FLOOD,UDP_DOS", "drift": "size/timing drift by the end",
            "adapter": "normalize a real dataset instead: ciciot2022 | iscxvpn2016 | peerrush | folders",
            "src": "directory of the real dataset (with --adapter)", "overwrite": "replace an existing output",
            "layout": "with --adapter: sequential (captures back to back) | overlay (all start together)",
            "max_packets_per_class": "with --adapter: keep whole flows, earliest first, up to this many per class"})
@cli
def dataset(c: Context, profile: str = "ciciot", flows: int = 2000, seed: int = 1, out: str = "",
            attacks: str = "", drift: float = 0.0, duration: float = 120.0, adapter: str = "", src: str = "",
            overwrite: bool = False, layout: str = "sequential", max_packets_per_class: int = 0,
            verbose: bool = False) -> None:
    """Generate a synthetic dataset, or normalize a real one (--adapter/--src)."""
    if adapter:
        from chimera.data.adapters import normalize
        from chimera.data.dataset import NormalizeOptions
        if not src:
            raise Exit("dataset: --adapter needs --src DIR (the unpacked dataset)", code=2)
        path = normalize(adapter, src, out or f"data/{adapter}", seed=seed, overwrite=overwrite,
                         options=NormalizeOptions(layout=layout, max_packets_per_class=max_packets_per_class))
    else:
        from chimera.data.synthetic import SyntheticSpec, generate
        spec = SyntheticSpec(profile=profile, flows=flows, seed=seed, duration_s=duration, drift=drift,
                             attacks=tuple(a for a in attacks.split(",") if a))
        path = generate(spec, out or f"data/{profile}-{flows}-s{seed}", overwrite=overwrite)
    logging.getLogger("tasks").info("dataset written: %s", path)
