"""Minimal ctypes binding of Debian's libbpf1 (1.1): open/load objects, maps, tc attach.

Only what the loader needs; every failing call raises TargetError with
errno's meaning and, for loads, the kernel verifier log.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import os
from typing import Any

import numpy as np

from chimera.errors import TargetError, ToolMissingError

BPF_TC_INGRESS = 1
BPF_TC_EGRESS = 2
BPF_ANY = 0
BPF_F_MMAPABLE = 1 << 10
CLONE_NEWNET = 0x40000000
LOG_SIZE = 1 << 22


class OpenOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("object_name", ctypes.c_char_p), ("relaxed_maps", ctypes.c_bool),
                ("pin_root_path", ctypes.c_char_p), ("_stub", ctypes.c_uint32), ("kconfig", ctypes.c_char_p),
                ("btf_custom_path", ctypes.c_char_p), ("kernel_log_buf", ctypes.c_char_p),
                ("kernel_log_size", ctypes.c_size_t), ("kernel_log_level", ctypes.c_uint32)]


class TcHook(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int), ("attach_point", ctypes.c_int),
                ("parent", ctypes.c_uint32)]


class TcOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32), ("priority", ctypes.c_uint32)]


class BatchOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("elem_flags", ctypes.c_uint64), ("flags", ctypes.c_uint64)]


_U32, _U64 = ctypes.c_uint32, ctypes.c_uint64


class ProgInfo(ctypes.Structure):
    """struct bpf_prog_info (linux/bpf.h) up to the run statistics: what the kernel says a program cost."""
    _fields_ = [("type", _U32), ("id", _U32), ("tag", ctypes.c_uint8 * 8), ("jited_prog_len", _U32),
                ("xlated_prog_len", _U32), ("jited_prog_insns", _U64), ("xlated_prog_insns", _U64),
                ("load_time", _U64), ("created_by_uid", _U32), ("nr_map_ids", _U32), ("map_ids", _U64),
                ("name", ctypes.c_char * 16), ("ifindex", _U32), ("gpl_compatible", _U32), ("netns_dev", _U64),
                ("netns_ino", _U64), ("nr_jited_ksyms", _U32), ("nr_jited_func_lens", _U32),
                ("jited_ksyms", _U64), ("jited_func_lens", _U64), ("btf_id", _U32), ("func_info_rec_size", _U32),
                ("func_info", _U64), ("nr_func_info", _U32), ("nr_line_info", _U32), ("line_info", _U64),
                ("jited_line_info", _U64), ("nr_jited_line_info", _U32), ("line_info_rec_size", _U32),
                ("jited_line_info_rec_size", _U32), ("nr_prog_tags", _U32), ("prog_tags", _U64),
                ("run_time_ns", _U64), ("run_cnt", _U64)]


#: enum bpf_stats_type: run_time_ns and run_cnt are counted while a BPF_ENABLE_STATS fd is open
BPF_STATS_RUN_TIME = 0


def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("bpf") or "libbpf.so.1"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        raise ToolMissingError("libbpf (libbpf.so.1) is not installed",
                               "apt-get install libbpf1 libbpf-dev (scripts/bootstrap does it)") from None
    P, I, U32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
    sig = {
        "bpf_object__open_file": (P, [ctypes.c_char_p, ctypes.POINTER(OpenOpts)]),
        "bpf_object__load": (I, [P]),
        "bpf_object__close": (None, [P]),
        "bpf_object__find_program_by_name": (P, [P, ctypes.c_char_p]),
        "bpf_object__find_map_by_name": (P, [P, ctypes.c_char_p]),
        "bpf_program__fd": (I, [P]),
        "bpf_map__fd": (I, [P]),
        "bpf_map__value_size": (U32, [P]),
        "bpf_map__max_entries": (U32, [P]),
        "bpf_map__map_flags": (U32, [P]),
        "bpf_map__key_size": (U32, [P]),
        "bpf_map__name": (ctypes.c_char_p, [P]),
        "bpf_map__type": (I, [P]),
        "bpf_object__next_map": (P, [P, P]),
        "bpf_map_update_elem": (I, [I, P, P, ctypes.c_uint64]),
        "bpf_map_lookup_elem": (I, [I, P, P]),
        "bpf_map_update_batch": (I, [I, P, P, ctypes.POINTER(U32), ctypes.POINTER(BatchOpts)]),
        "bpf_map_lookup_batch": (I, [I, P, P, P, P, ctypes.POINTER(U32), ctypes.POINTER(BatchOpts)]),
        "bpf_tc_hook_create": (I, [ctypes.POINTER(TcHook)]),
        "bpf_tc_hook_destroy": (I, [ctypes.POINTER(TcHook)]),
        "bpf_tc_attach": (I, [ctypes.POINTER(TcHook), ctypes.POINTER(TcOpts)]),
        "bpf_tc_detach": (I, [ctypes.POINTER(TcHook), ctypes.POINTER(TcOpts)]),
        "bpf_obj_get_info_by_fd": (I, [I, P, ctypes.POINTER(U32)]),
        "bpf_enable_stats": (I, [I]),
    }
    for fn, (res, args) in sig.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    return lib


_LIB: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    global _LIB  # the shared library handle is process-wide by nature (dlopen)
    if _LIB is None:
        _LIB = _lib()
    return _LIB


def check(rc: int, what: str) -> int:
    if rc < 0:
        e = -rc if rc != -1 else ctypes.get_errno()
        raise TargetError(f"{what} failed: {errno.errorcode.get(e, e)} ({os.strerror(e)})",
                          "run as root on a kernel with eBPF and tc clsact (CONFIG_NET_CLS_BPF)")
    return rc


class BpfObject:
    """An opened and loaded BPF object file; closes (and unloads) on close()."""

    def __init__(self, path: str) -> None:
        self.obj = None
        self._maps: dict[str, BpfMap] = {}
        rc = self._open_load(path, log_level=0)
        if rc < 0:
            # load again with a verifier log: the kernel only writes one when asked
            self._open_load(path, log_level=1)
            log = self._log.value.decode(errors="replace")
            self.close()
            tail = "\n".join(log.strip().splitlines()[-25:])
            raise TargetError(f"the kernel rejected {path} ({os.strerror(-rc)}); verifier log tail:\n{tail}",
                              "a verifier rejection is a bug in chimera.bpf.c for this configuration; "
                              "report it with the artifact and this log")

    def _open_load(self, path: str, log_level: int) -> int:
        self.close()
        self._log = ctypes.create_string_buffer(LOG_SIZE)
        self._opts = OpenOpts(sz=ctypes.sizeof(OpenOpts), kernel_log_buf=ctypes.cast(self._log, ctypes.c_char_p),
                              kernel_log_size=LOG_SIZE, kernel_log_level=log_level)
        obj = lib().bpf_object__open_file(path.encode(), ctypes.byref(self._opts))
        if not obj:
            raise TargetError(f"{path}: libbpf could not open the object ({os.strerror(ctypes.get_errno())})",
                              "rebuild it: invoke build --target ebpf")
        self.obj = obj
        return int(lib().bpf_object__load(obj))

    def prog_fd(self, name: str) -> int:
        p = lib().bpf_object__find_program_by_name(self.obj, name.encode())
        if not p:
            raise TargetError(f"no program '{name}' in the object", "rebuild the eBPF object")
        return check(lib().bpf_program__fd(p), f"program fd of {name}")

    def map(self, name: str) -> "BpfMap":
        """The object's map ``name`` (one BpfMap per name, so a memory mapping is made once)."""
        if name in self._maps:
            return self._maps[name]
        m = lib().bpf_object__find_map_by_name(self.obj, name.encode())
        if not m:
            raise TargetError(f"no map '{name}' in the object", "rebuild the eBPF object")
        self._maps[name] = BpfMap(name, check(lib().bpf_map__fd(m), f"map fd of {name}"), lib().bpf_map__value_size(m),
                      lib().bpf_map__max_entries(m), bool(lib().bpf_map__map_flags(m) & BPF_F_MMAPABLE))
        return self._maps[name]

    def close(self) -> None:
        """Unmap every map (a live mapping would keep its map alive), then close the object."""
        for m in getattr(self, "_maps", {}).values():
            m.close()
        self._maps = {}
        if self.obj:
            lib().bpf_object__close(self.obj)
            self.obj = None


def map_specs(path: str | os.PathLike[str]) -> list[dict[str, int | str]]:
    """Every map an object file declares (name, type, key/value size in bytes, max entries), read by libbpf
    from the ELF without loading it (no privileges needed): the allocation, as the kernel will make it."""
    obj = lib().bpf_object__open_file(os.fsencode(path), None)
    if not obj:
        raise TargetError(f"{path}: libbpf could not open the object ({os.strerror(ctypes.get_errno())})",
                          "rebuild it: invoke build --target ebpf")
    out: list[dict[str, int | str]] = []
    try:
        m = lib().bpf_object__next_map(obj, None)
        while m:
            out.append({"name": lib().bpf_map__name(m).decode(), "type": int(lib().bpf_map__type(m)),
                        "key_size": int(lib().bpf_map__key_size(m)), "value_size": int(lib().bpf_map__value_size(m)),
                        "max_entries": int(lib().bpf_map__max_entries(m))})
            m = lib().bpf_object__next_map(obj, m)
    finally:
        lib().bpf_object__close(obj)
    return out


class BpfMap:
    def __init__(self, name: str, fd: int, value_size: int, max_entries: int, mmapable: bool = False) -> None:
        self.name, self.fd, self.value_size, self.max_entries = name, fd, value_size, max_entries
        self.mmapable = mmapable
        self._mem: mmap.mmap | None = None

    @property
    def elem_size(self) -> int:
        """Bytes between consecutive values in the mapping (array values are 8-byte aligned)."""
        return (self.value_size + 7) & ~7

    def memory(self) -> np.ndarray:
        """The map's values as a writable [max_entries, elem_size] uint8 view (BPF_F_MMAPABLE arrays only)."""
        if not self.mmapable:
            raise TargetError(f"map {self.name} is not mmapable", "declare it with BPF_F_MMAPABLE in chimera.bpf.c")
        if self._mem is None:
            size = self.elem_size * self.max_entries
            self._mem = mmap.mmap(self.fd, (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE,
                                  mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        return np.frombuffer(self._mem, np.uint8, self.elem_size * self.max_entries).reshape(self.max_entries,
                                                                                             self.elem_size)

    def write_rows(self, first_key: int, values: bytes) -> None:
        """Entries [first_key, first_key + n) from packed values: a memcpy into the mapping."""
        n = len(values) // self.value_size
        rows = np.frombuffer(values, np.uint8).reshape(n, self.value_size)
        self.memory()[first_key:first_key + n, : self.value_size] = rows

    def read_rows(self, first_key: int, n: int) -> bytes:
        """Packed values of entries [first_key, first_key + n), read through the mapping."""
        return self.memory()[first_key:first_key + n, : self.value_size].tobytes()

    def close(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None

    def update(self, key: int, value: bytes, key_size: int = 4) -> None:
        k = ctypes.create_string_buffer(key.to_bytes(key_size, "little"), key_size)
        v = ctypes.create_string_buffer(value, len(value))
        check(lib().bpf_map_update_elem(self.fd, k, v, BPF_ANY), f"update of map {self.name}[{key}]")

    def lookup(self, key: int, size: int | None = None) -> bytes:
        k = ctypes.create_string_buffer(key.to_bytes(4, "little"), 4)
        n = size or self.value_size
        v = ctypes.create_string_buffer(n)
        check(lib().bpf_map_lookup_elem(self.fd, k, v), f"lookup of map {self.name}[{key}]")
        return v.raw

    def lookup_batch(self, first_key: int, n: int) -> bytes:
        """Values of array entries [first_key, first_key + n): batched from the map's start, else one by one."""
        if first_key != 0:
            return b"".join(self.lookup(k) for k in range(first_key, first_key + n))
        out = bytearray()
        vals = ctypes.create_string_buffer(n * self.value_size)
        keys = (ctypes.c_uint32 * n)()
        token_in, token_out = ctypes.c_uint32(0), ctypes.c_uint32(0)
        opts = BatchOpts(sz=ctypes.sizeof(BatchOpts))
        first = True
        while len(out) < n * self.value_size:
            count = ctypes.c_uint32(n - len(out) // self.value_size)
            rc = lib().bpf_map_lookup_batch(self.fd, None if first else ctypes.byref(token_in), ctypes.byref(token_out),
                                            keys, vals, ctypes.byref(count), ctypes.byref(opts))
            if rc < 0 and ctypes.get_errno() != errno.ENOENT and -rc != errno.ENOENT:
                check(rc, f"batch lookup of map {self.name}")
            out += vals.raw[: count.value * self.value_size]
            if rc < 0 or count.value == 0:  # ENOENT: the end of the map
                break
            token_in.value, first = token_out.value, False
        if len(out) < n * self.value_size:
            raise TargetError(f"batch lookup of map {self.name} returned {len(out) // self.value_size} of {n} entries",
                              "the map is smaller than asked; rebuild the eBPF object for this artifact")
        return bytes(out[: n * self.value_size])

    def update_batch(self, first_key: int, values: bytes) -> None:
        """Write consecutive array entries [first_key, first_key + n) in one syscall."""
        n = len(values) // self.value_size
        if n == 0:
            return
        keys = (ctypes.c_uint32 * n)(*range(first_key, first_key + n))
        buf = ctypes.create_string_buffer(values, len(values))
        count = ctypes.c_uint32(n)
        opts = BatchOpts(sz=ctypes.sizeof(BatchOpts))
        check(lib().bpf_map_update_batch(self.fd, keys, buf, ctypes.byref(count), ctypes.byref(opts)),
              f"batch update of map {self.name} ({n} entries)")


class NetnsOf:
    """Run a block inside the network namespace of a process (setns on this thread), then return."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._libc = ctypes.CDLL(None, use_errno=True)

    def __enter__(self) -> "NetnsOf":
        self._home = os.open("/proc/self/ns/net", os.O_RDONLY)
        target = os.open(f"/proc/{self.pid}/ns/net", os.O_RDONLY)
        try:
            check(self._libc.setns(target, CLONE_NEWNET), f"setns into netns of pid {self.pid}")
        finally:
            os.close(target)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            check(self._libc.setns(self._home, CLONE_NEWNET), "setns back to the root netns")
        finally:
            os.close(self._home)


def enable_stats() -> int:
    """An fd that keeps the kernel counting every BPF program's run time and runs (BPF_ENABLE_STATS) until it
    is closed: scoped to this process, unlike the kernel.bpf_stats_enabled sysctl, so nothing outlives the run."""
    return check(lib().bpf_enable_stats(BPF_STATS_RUN_TIME), "BPF_ENABLE_STATS (run time statistics)")


def run_stats(prog_fd: int) -> tuple[int, int]:
    """(run_time_ns, run_cnt) the kernel has counted for a program while statistics were enabled."""
    info = ProgInfo()
    n = ctypes.c_uint32(ctypes.sizeof(ProgInfo))
    check(lib().bpf_obj_get_info_by_fd(prog_fd, ctypes.byref(info), ctypes.byref(n)), "bpf_obj_get_info_by_fd")
    return int(info.run_time_ns), int(info.run_cnt)


def tc_attach(ifindex: int, prog_fd: int) -> None:
    """Attach ``prog_fd`` to clsact ingress of ``ifindex`` (in the current netns)."""
    hook = TcHook(sz=ctypes.sizeof(TcHook), ifindex=ifindex, attach_point=BPF_TC_INGRESS)
    rc = lib().bpf_tc_hook_create(ctypes.byref(hook))
    if rc < 0 and -rc != errno.EEXIST:
        check(rc, f"tc clsact hook on ifindex {ifindex}")
    opts = TcOpts(sz=ctypes.sizeof(TcOpts), prog_fd=prog_fd, handle=1, priority=1)
    check(lib().bpf_tc_attach(ctypes.byref(hook), ctypes.byref(opts)), f"tc attach on ifindex {ifindex}")


def tc_detach(ifindex: int) -> None:
    """Remove the clsact qdisc tc_attach created (ingress|egress destroys the qdisc and its filters)."""
    hook = TcHook(sz=ctypes.sizeof(TcHook), ifindex=ifindex, attach_point=BPF_TC_INGRESS | BPF_TC_EGRESS)
    lib().bpf_tc_hook_destroy(ctypes.byref(hook))
