"""What the running kernel's verifier says of an eBPF object (issue 58: every ablation program on 6.1, 6.12 and
the host): loaded or refused (with the verifier's last lines), the program's size after the verifier's rewrites,
and the instructions the verifier walked against the kernel's limit (BPF_COMPLEXITY_LIMIT_INSNS, 1,000,000 since
5.2). A load, not a version string: distribution kernels backport and differ.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

from chimera.errors import TargetError
from chimera.targets.ebpf.libbpf import BpfObject, ProgInfo, check, lib

#: the verifier's limit on instructions processed per program (kernel/bpf/verifier.c, since 5.2)
COMPLEXITY_LIMIT = 1_000_000
#: the program every build of chimera.bpf.c attaches
PROGRAM = "chimera_ingress"


class ProgInfoVerified(ctypes.Structure):
    """struct bpf_prog_info up to ``verified_insns`` (5.16): the kernel fills what it has, the rest stays 0."""
    _fields_ = [*ProgInfo._fields_, ("recursion_misses", ctypes.c_uint64), ("verified_insns", ctypes.c_uint32),
                ("attach_btf_obj_id", ctypes.c_uint32), ("attach_btf_id", ctypes.c_uint32)]


@dataclass(frozen=True)
class LoadReport:
    """One object on this kernel: ``loaded``; ``insns``: the program's instructions as loaded (after the
    verifier's rewrites); ``verified_insns``: the instructions the verifier processed (0: the kernel does not
    say, before 5.16); ``jited_bytes``: its native code; ``error``: why it was refused."""

    loaded: bool
    insns: int = 0
    verified_insns: int = 0
    jited_bytes: int = 0
    error: str = ""

    @property
    def share_of_limit(self) -> float:
        return self.verified_insns / COMPLEXITY_LIMIT


def load_report(obj: Path, program: str = PROGRAM) -> LoadReport:
    """Load ``obj`` into this kernel (and unload it): what the verifier said."""
    try:
        o = BpfObject(str(obj))
    except TargetError as e:
        return LoadReport(False, error=e.problem[-2000:])
    try:
        info = ProgInfoVerified()
        n = ctypes.c_uint32(ctypes.sizeof(info))
        check(lib().bpf_obj_get_info_by_fd(o.prog_fd(program), ctypes.byref(info), ctypes.byref(n)),
              "bpf_obj_get_info_by_fd")
        return LoadReport(True, int(info.xlated_prog_len) // 8, int(info.verified_insns), int(info.jited_prog_len))
    finally:
        o.close()
