"""The replay snap: the longest frame a testbed sends, and how a longer one is cut. The one definition.

Real captures hold frames that the capturing host's NIC or kernel coalesced (GRO/LRO on receive, TSO/GSO on
send): one IPv4 packet of up to 65,535 bytes, a 65,549-byte Ethernet frame. No testbed path carries one whole:
a veth's MTU stops at 65,535 (ETH_MAX_MTU), below such a frame plus the trace-time shim, and every byte past
the headers costs BMv2 time for nothing.

The pipeline never reads a frame's length or payload (docs/pipeline.md, step 0 and "Frame length"): it reads
the headers and the IP total length. So a frame longer than ``REPLAY_SNAP`` is cut to ``REPLAY_SNAP`` bytes
at replay, its headers and its IP total length kept, and every target (the reference on the frames as
replayed included) classifies it exactly as it classifies the whole frame. The cut is counted in every
replay's accounting (``cut_frames``), never silent.
"""

from __future__ import annotations

import numpy as np

from chimera.formats.shim import SHIM_LEN

ETH_HLEN = 14
#: the sender's MTU: a 9000-byte L3 packet plus the trace-time shim
SENDER_MTU = 9000 + SHIM_LEN
#: the longest frame sent, shim excluded: it fits the sender's MTU under either clock (a shimmed frame is
#: SHIM_LEN longer); a longer frame is cut to this length
REPLAY_SNAP = SENDER_MTU - SHIM_LEN + ETH_HLEN


def snap(frames: list[bytes], limit: int = REPLAY_SNAP) -> tuple[list[bytes], np.ndarray]:
    """``frames`` with every frame longer than ``limit`` cut to ``limit`` bytes, and which were cut."""
    cut = np.fromiter((len(f) > limit for f in frames), bool, len(frames))
    return [f[:limit] if c else f for f, c in zip(frames, cut.tolist())], cut
