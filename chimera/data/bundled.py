"""The small captures bundled in ``pcaps/``, and how to regenerate them (``scripts/make-pcaps``).

- ``stress.pcap``: the conformance stress capture (chimera.data.stress): many flows,
  slot collisions at small slot counts, and malformed frames of every kind.
- ``coalesced.pcap``: frames a capturing host coalesced (GRO/TSO), up to the 65,535-byte IPv4 packet
  (chimera.data.coalesced): every frame of a real capture must be replayed and classified as the reference
  classifies it.
- ``tiny-multiclass/<CLASS>/*.pcap``: a tiny labelled three-class capture set in the
  class-folder layout of CICIoT2022/PeerRush (synthetic, chimera.data.synthetic),
  so the adapters and their error paths run on a clean clone.

Both are deterministic: the generator arguments below reproduce them byte for byte.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from chimera import paths
from chimera.data.coalesced import write_coalesced_pcap
from chimera.data.stress import write_stress_pcap
from chimera.data.synthetic import SyntheticSpec, write_class_folders

PCAPS = paths.PCAPS
STRESS_ARGS = {"seed": 3, "flows": 400, "packets": 1500}
COALESCED_ARGS = {"seed": 7, "flows": 8}
TINY_SPEC = SyntheticSpec(profile="peerrush", flows=36, seed=5, duration_s=8.0, max_packets_per_flow=8,
                          class_weights={"Frostwire": 0.0, "Skype": 0.0})


def write_bundled(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stress = write_stress_pcap(out / "stress.pcap", **STRESS_ARGS)
    coalesced = write_coalesced_pcap(out / "coalesced.pcap", **COALESCED_ARGS)
    tiny = out / "tiny-multiclass"
    shutil.rmtree(tiny, ignore_errors=True)
    write_class_folders(TINY_SPEC, tiny)
    return [stress, coalesced, *sorted(tiny.rglob("*.pcap"))]


def main() -> None:
    ap = argparse.ArgumentParser(description="regenerate the bundled captures")
    ap.add_argument("out", type=Path, nargs="?", default=PCAPS)
    for p in write_bundled(ap.parse_args().out):
        print(p, p.stat().st_size)


if __name__ == "__main__":
    main()
