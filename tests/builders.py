"""Artifacts and datasets the target tests share (quickstart model, cut to 2 epochs: conformance needs any model)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chimera.experiments.load import BuiltArtifact, build_artifact

ROOT = Path(__file__).resolve().parents[1]


#: artifacts this process built, by what they were built from (training is deterministic: the same inputs give the
#: same artifact, so a test file's cases train it once); each caller gets its own copy to change
_BUILT: dict[str, BuiltArtifact] = {}


def quickstart_artifact(data_root: Path = ROOT / "data", dataset: dict[str, Any] | None = None,
                        flow_slots: int = 65536, fusion: dict[str, Any] | None = None,
                        compile: dict[str, Any] | None = None, **model: Any) -> BuiltArtifact:
    """The quickstart variant trained for 2 epochs, optionally on another dataset or with another slot count."""
    over: dict[str, Any] = {"model": {"epochs": 2, **model}, "compile": {"flow_slots": flow_slots, **(compile or {})},
                            "fusion": fusion or {}}
    if dataset is not None:
        over["dataset"] = dataset
    key = json.dumps([str(data_root), over], sort_keys=True, default=str)
    if key not in _BUILT:
        _BUILT[key] = build_artifact("quickstart", data_root=data_root, overrides=over)
    return copy.deepcopy(_BUILT[key])


def quickstart_trained(data_root: Path = ROOT / "data", **model: Any):  # type: ignore[no-untyped-def]
    """(prepared data, learned rules, variant, trained variant) of the quickstart with model overrides."""
    from chimera.experiments.load import train_one
    return train_one("quickstart", 0, data_root, {"model": {"epochs": 2, **model}})


STRESS_PCAP = ROOT / "pcaps" / "stress.pcap"
COALESCED_PCAP = ROOT / "pcaps" / "coalesced.pcap"
TINY_MULTICLASS = ROOT / "pcaps" / "tiny-multiclass"


def long_gap_captures(out: Path, seed: int = 7, gap_min: tuple[float, float] = (20.0, 55.0),
                      every: int = 6) -> Path:
    """The bundled tiny multi-class captures with idle gaps of 20-55 minutes inserted every few packets (below
    the normalizer's one-hour jump, so they stay gaps): a real multi-capture dataset's shape, whose timeline
    spans days once its captures are laid end to end. Class folders, like the source."""
    import numpy as np

    from chimera.data.pcap import read_raw
    from chimera.data.pcapwrite import write_pcap
    rng = np.random.default_rng(seed)
    for src in sorted(TINY_MULTICLASS.rglob("*.pcap")):
        raw = read_raw(src)
        frames = [bytes(raw.data[o:o + c]) for o, c in zip(raw.offset, raw.caplen)]
        ts = np.asarray(raw.ts_ns, np.int64)
        gaps = np.zeros(ts.size, np.int64)
        at = np.arange(every, ts.size, every)
        gaps[at] = (rng.uniform(*gap_min, at.size) * 60e9).astype(np.int64)
        dst = out / src.parent.name / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        write_pcap(dst, frames, ts + np.cumsum(gaps))
    return out


def assert_conformant(res: Any, n: int) -> None:
    """A testbed run of ``n`` frames: none lost, every verdict checked against the reference and equal to it,
    every frame marked, the registers read back and equal (None would mean they were never read)."""
    out = res.outcome
    conf = out.conformance
    assert out.accounting.lost == 0, f"{out.accounting.lost} of {n} packets lost"
    assert conf.checked == n
    assert conf.reference_mismatches == 0
    assert out.unmarked_frames == 0
    assert conf.register_mismatches == 0


@contextmanager
def holding_the_testbed_lock() -> Iterator[None]:
    """The machine's testbed lock, held by this process: no other testbed (another xdist worker's) comes up or goes
    down meanwhile, so what a test finds new in the kernel's tables is its own; its subprocesses nest in it."""
    from chimera.testbed.topology import PROCESS_LOCK
    PROCESS_LOCK.acquire()
    try:
        yield
    finally:
        PROCESS_LOCK.release()
