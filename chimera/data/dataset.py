"""The normalized dataset: the one on-disk format every source is turned into.

    <dataset>/
      manifest.json   format, name, source, seed, classes, captures (+ sha256, timeline adjustments, skips),
                      counts by outcome
      packets.pcap    every frame as untagged Ethernet, in time order
      labels.npy      int16 per frame: class index, -1 where the source gives no label
      flows.csv       one row per flow: 5-tuple, label, split, packets (for people, not parsed back)

Real datasets (adapters) and the synthetic generator both end here, so the
model, the reference pipeline and the replay all read the same thing. Writes go
to a temporary sibling directory that is renamed at the end: an interrupted
build never leaves a half dataset that looks complete.

**Timelines.** Each capture keeps its frames in file order (the order the tap saw
them; never reordered, across flows or within them). A timestamp a little
behind its predecessor (up to ``max_backstep_s``, common with multi-queue
capture) is clamped to it; a larger step back, or a jump forward of more than
``max_jump_s`` (merged traces, rebased clocks, the 1970s), starts a new segment
placed ``CAPTURE_GAP_NS`` after the previous one. Every adjustment is counted in
the manifest per capture. Inter-arrival times inside a segment are untouched.

**Layout.** ``sequential``: captures one after another, ``CAPTURE_GAP_NS`` apart
(replay time = the sum of the captures). ``overlay``: every capture starts at the
same instant, interleaved in time, as concurrent traffic would (replay time = the
longest capture). Per-flow inter-arrival features are identical either way; flows
of different captures that share a 5-tuple become one flow, as they would in a
switch (counted in the manifest).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from tqdm import tqdm

from chimera.data.flows import Flows, assign_flows, frozen_split
from chimera.data.pcap import PacketTable, format_addresses, read_pcap
from chimera.data.pcapwrite import write_normalized
from chimera.errors import ChimeraError, DatasetError, PcapError, disk_full_message

log = logging.getLogger(__name__)

FORMAT = "chimera-dataset/1"
MANIFEST = "manifest.json"
PACKETS = "packets.pcap"
LABELS = "labels.npy"
#: per frame, the index of the capture it came from (manifest["captures"]): the test partition splits by file
CAPTURES = "captures.npy"
FLOWS = "flows.csv"
#: Gap inserted between consecutive captures (sequential layout) and between timeline segments.
CAPTURE_GAP_NS = 1_000_000_000
#: where normalized time starts (2023-11-14T22:13:20Z): any capture's clock maps to a sane date
TIME_BASE_NS = 1_700_000_000 * 10**9


@dataclass(frozen=True)
class NormalizeOptions:
    """How captures become one dataset (see the module docstring)."""

    layout: str = "sequential"            # sequential | overlay
    max_packets_per_class: int = 0        # 0 = all; else whole flows, earliest first, up to this many packets
    max_jump_s: float = 3600.0            # a forward gap larger than this starts a new timeline segment
    max_backstep_s: float = 1.0           # a step back up to this is clamped; larger starts a new segment

    def __post_init__(self) -> None:
        if self.layout not in ("sequential", "overlay"):
            raise DatasetError(f"unknown layout {self.layout!r}", "use sequential or overlay")
        if self.max_packets_per_class < 0 or self.max_jump_s <= 0 or self.max_backstep_s < 0:
            raise DatasetError(f"invalid normalization options {self}",
                               "max_packets_per_class >= 0, max_jump_s > 0, max_backstep_s >= 0")


def normalize_timeline(ts_ns: np.ndarray, max_jump_s: float, max_backstep_s: float) -> tuple[np.ndarray, dict]:
    """A capture's timestamps made non-decreasing and free of jumps, in file order; and what was adjusted."""
    ts = np.asarray(ts_ns, np.int64)
    if ts.size == 0:
        return ts.copy(), {"clamped_backsteps": 0, "rebased_jumps": 0, "jumps": []}
    d = np.diff(ts)
    jump = (d > int(max_jump_s * 1e9)) | (d < -int(max_backstep_s * 1e9))
    back = (d < 0) & ~jump
    step = np.where(jump, CAPTURE_GAP_NS, np.where(back, 0, d))
    out = ts[0] + np.r_[0, np.cumsum(step)]
    jumps = [{"at_frame": int(i + 1), "gap_s": round(float(d[i]) / 1e9, 3)} for i in np.flatnonzero(jump)[:20]]
    return out - out[0], {"clamped_backsteps": int(back.sum()), "rebased_jumps": int(jump.sum()), "jumps": jumps}


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class CaptureSpec:
    """One input capture and how its packets are labelled (whole-file label or per packet)."""

    path: Path
    label: str | None = None
    packet_labels: np.ndarray | None = None  # class index per frame (synthetic data)


@dataclass
class Dataset:
    """A loaded normalized dataset with its flows."""

    root: Path
    manifest: dict[str, Any]  # JSON in and out: the dataset's manifest.json
    table: PacketTable
    labels: np.ndarray
    flows: Flows
    capture: np.ndarray | None = None   # per frame, its capture's index in manifest["captures"] (None: unrecorded)

    @property
    def classes(self) -> list[str]:
        return list(self.manifest["classes"])

    @property
    def pcap(self) -> Path:
        return self.root / PACKETS

    def flow_labels(self) -> np.ndarray:
        """Label of each flow: the label of its first packet (captures are single-label)."""
        return self.labels[self.flows.first_packet]

    def group_keys(self) -> list[str]:
        """Each flow's group for the frozen test partition: its first packet's capture file (label folder and
        name) where the dataset has several captures and records which frame came from which, else the flow
        itself (its canonical 5-tuple and first timestamp): a real set is split by file, a synthetic one by flow."""
        caps = self.manifest.get("captures") or []
        r = self.flows.first_packet
        if self.capture is not None and len(caps) > 1:
            names = [f"{Path(c['file']).parent.name}/{Path(c['file']).name}" for c in caps]
            return [names[i] for i in self.capture[r]]
        return self.flow_keys()

    def flow_keys(self) -> list[str]:
        """Each flow's identity: its canonical 5-tuple and first timestamp (stable for the dataset)."""
        r = self.flows.first_packet
        t = self.table
        a, b = format_addresses(t.src[r]), format_addresses(t.dst[r])
        return [f"{p}|{min((x, sp), (y, dp))}|{max((x, sp), (y, dp))}|{ts}" for p, x, sp, y, dp, ts in
                zip(t.proto[r].tolist(), a, t.sport[r].tolist(), b, t.dport[r].tolist(), t.ts_ns[r].tolist())]

    def flow_split(self, seed: int | None = None) -> np.ndarray:
        """Train/val/test (0/1/2) per flow: the test partition frozen by the hash rule (chimera.data.flows.
        frozen_split), train and validation re-split by the seed."""
        return frozen_split(self.flow_labels(), self.group_keys(), self.manifest["seed"] if seed is None else seed,
                            flow_keys=self.flow_keys())

    def packet_split(self, seed: int | None = None) -> np.ndarray:
        """Split per packet (-1 for packets in no flow)."""
        fs = self.flow_split(seed)
        out = np.full(len(self.table), -1, np.int8)
        ok = self.flows.flow_id >= 0
        out[ok] = fs[self.flows.flow_id[ok]]
        return out


def _read_capture(spec: CaptureSpec, cls_index: dict[str, int]) -> tuple[PacketTable, np.ndarray]:
    t = read_pcap(spec.path)
    if spec.packet_labels is not None:
        lab = np.asarray(spec.packet_labels, np.int16)
        if lab.shape[0] != len(t):
            raise DatasetError(f"{spec.path}: {lab.shape[0]} labels for {len(t)} packets",
                               "regenerate the capture and its labels together")
    elif spec.label is not None:
        lab = np.full(len(t), cls_index[spec.label], np.int16)
    else:
        lab = np.full(len(t), -1, np.int16)
    return t, lab


def _cap_per_class(table: PacketTable, labels: np.ndarray, cap: int) -> tuple[np.ndarray, dict[str, int]]:
    """Rows kept when each class keeps whole flows (earliest first) up to ``cap`` packets."""
    flows = assign_flows(table)
    keep = np.ones(len(table), bool)
    dropped: dict[str, int] = {}
    for y in np.unique(labels[labels >= 0]):
        rows = np.flatnonzero(labels == y)
        if rows.size <= cap:
            continue
        fid = flows.flow_id[rows]
        in_flow = fid >= 0
        firsts = np.unique(fid[in_flow])
        order = firsts[np.argsort(table.ts_ns[flows.first_packet[firsts]], kind="stable")]
        total, chosen = 0, list[int]()
        for f in order:
            n = int(flows.n_packets[f])
            if chosen and total + n > cap:
                break
            chosen.append(f)
            total += n
        k = np.isin(fid, chosen) | (~in_flow & (np.cumsum(~in_flow) <= max(cap - total, 0)))
        keep[rows[~k]] = False
        dropped[str(int(y))] = int((~k).sum())
    return keep, dropped


def write_dataset(out_dir: str | os.PathLike[str], captures: list[CaptureSpec], classes: list[str], *,
                  # dict[str, Any]: JSON out: extra fields of the dataset's manifest.json
                  name: str, source: str, seed: int, extra: dict[str, Any] | None = None,
                  overwrite: bool = False, options: NormalizeOptions = NormalizeOptions()) -> Path:
    """Normalize captures into ``out_dir`` (atomically). Returns the dataset path.

    A capture that cannot be read is skipped and recorded with the reason and the fix;
    the build fails only when a class has no readable capture left.
    """
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise DatasetError(f"{out}: already exists; refusing to overwrite it",
                           "pick another --out, or pass --overwrite to replace it")
    if not captures:
        raise DatasetError(f"no captures to write into {out}", "check the input directory")
    cls_index = {c: i for i, c in enumerate(classes)}
    tables, labels, cap_meta, unreadable = [], [], [], []
    t_next = TIME_BASE_NS
    for spec in tqdm(captures, desc=f"read {name}", unit="capture", leave=False):
        try:
            t, lab = _read_capture(spec, cls_index)
        except PcapError as e:
            log.warning("skipping unreadable capture %s: %s", spec.path, e.problem)
            unreadable.append({"file": str(spec.path), "label": spec.label, "reason": e.problem, "fix": e.fix})
            continue
        ts, adj = normalize_timeline(t.ts_ns, options.max_jump_s, options.max_backstep_s)
        if adj["clamped_backsteps"] or adj["rebased_jumps"]:
            log.info("%s: timeline normalized (%d small steps back clamped, %d jumps rebased)", spec.path,
                     adj["clamped_backsteps"], adj["rebased_jumps"])
        if len(t):
            base = TIME_BASE_NS if options.layout == "overlay" else t_next
            t.ts_ns = ts + base
            t_next = max(t_next, int(t.ts_ns.max()) + CAPTURE_GAP_NS)
        tables.append(t)
        labels.append(lab)
        cap_meta.append({"file": str(spec.path), "label": spec.label, "packets": len(t), "bytes": spec.path.stat().st_size,
                         "sha256": sha256_file(spec.path), "status": t.status_counts(),
                         "truncated_records": t.truncated_records, "corrupt": t.corrupt[0] if t.corrupt else None,
                         "timeline": adj})
    lost = sorted({u["label"] for u in unreadable if u["label"]} - {c["label"] for c in cap_meta})
    if lost or not tables:
        raise DatasetError(f"{out}: class(es) {lost or classes} have no readable capture left "
                           f"({len(unreadable)} unreadable: {unreadable[0]['file']}: {unreadable[0]['reason']} ...)",
                           unreadable[0]["fix"] if unreadable else "check the input captures")
    table = PacketTable.concat(tables)
    lab_all = np.concatenate(labels)
    keep, capped = np.ones(len(table), bool), dict[str, int]()
    if options.max_packets_per_class:
        keep, capped = _cap_per_class(table, lab_all, options.max_packets_per_class)
    kept = np.flatnonzero(keep)
    order = kept[np.argsort(table.ts_ns[kept], kind="stable")]
    manifest = {
        "format": FORMAT, "name": name, "source": source, "seed": seed, "classes": classes,
        "captures": cap_meta, "packets": int(order.size),
        "status": {k: sum(c["status"][k] for c in cap_meta) for k in cap_meta[0]["status"]},
        "truncated_records": sum(c["truncated_records"] for c in cap_meta),
        "unreadable_captures": unreadable, "normalization": dataclasses.asdict(options),
        "capped_packets_per_class": {classes[int(k)]: v for k, v in capped.items()},
        "unlabelled_packets": int((lab_all[order] < 0).sum()),
        "input_bytes": sum(c["bytes"] for c in cap_meta), **(extra or {}),
    }
    return finish_dataset(out, manifest, lambda pcap: write_normalized(pcap, table, order, table.ts_ns[order]),
                          lab_all[order], lambda ds: _cross_capture_flows(ds, table, order), table.capture[order])


# dict[str, Any]: JSON out: the dataset's manifest.json
def finish_dataset(out: Path, manifest: dict[str, Any], write_packets: Callable[[Path], int], labels: np.ndarray,
                   cross_capture: Callable[["Dataset"], int] | None = None, captures: np.ndarray | None = None
                   ) -> Path:
    """Write packets.pcap (by ``write_packets``, streamed), labels, manifest and flows.csv into a temporary
    sibling of ``out`` and rename it into place: a dataset appears whole or not at all."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write_packets(tmp / PACKETS)
        np.save(tmp / LABELS, np.asarray(labels, np.int16))
        if captures is not None:
            np.save(tmp / CAPTURES, np.asarray(captures, np.int32))
        manifest["packets_sha256"] = sha256_file(tmp / PACKETS)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        ds = load_dataset(tmp)
        if "status" not in manifest:
            manifest["status"] = ds.table.status_counts()
        manifest["cross_capture_flows"] = cross_capture(ds) if cross_capture else 0
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        _write_flows_csv(ds, tmp / FLOWS)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except (OSError, ChimeraError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DatasetError(*disk_full_message(str(out.parent), int(manifest.get("input_bytes", 0)) or None)) \
                from None
        if isinstance(e, OSError):
            raise DatasetError(f"cannot write the dataset under {out.parent}: {e.strerror}",
                               "check the permissions there or choose another --out") from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("dataset %s: %d packets, %d flows, %d classes -> %s", manifest["name"], manifest["packets"],
             ds.flows.n_flows, len(manifest["classes"]), out)
    return out


def _cross_capture_flows(ds: "Dataset", table: PacketTable, order: np.ndarray) -> int:
    """Flows of the normalized dataset made of packets from more than one capture (same 5-tuple)."""
    f = ds.flows
    ok = f.flow_id >= 0
    if not ok.any():
        return 0
    cap = table.capture[order][ok].astype(np.int64)
    fid = f.flow_id[ok]
    lo = np.full(f.n_flows, np.iinfo(np.int64).max)
    hi = np.full(f.n_flows, -1)
    np.minimum.at(lo, fid, cap)
    np.maximum.at(hi, fid, cap)
    return int(np.sum(lo != hi))


def _write_flows_csv(ds: Dataset, path: Path) -> None:
    t, f = ds.table, ds.flows
    r = f.first_packet
    split = ds.flow_split()
    lab = ds.flow_labels()

    pd.DataFrame({
        "flow": np.arange(f.n_flows), "src": format_addresses(t.src[r]), "sport": t.sport[r],
        "dst": format_addresses(t.dst[r]),
        "dport": t.dport[r], "proto": t.proto[r], "packets": f.n_packets,
        "label": [ds.classes[i] if i >= 0 else "" for i in lab],
        "split": np.array(["train", "val", "test"])[split],
    }).to_csv(path, index=False)


def load_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Load a normalized dataset directory; errors name the missing piece and the fix."""
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(f"{root}: no such dataset directory",
                           "build one with 'invoke dataset' or point --dataset at a normalized dataset")
    mpath = root / MANIFEST
    if not mpath.exists():
        raise DatasetError(f"{root}: not a normalized dataset (no {MANIFEST})",
                           "normalize raw captures first: invoke dataset --adapter ciciot2022 --src DIR")
    try:
        manifest = json.loads(mpath.read_text())
    except json.JSONDecodeError as e:
        raise DatasetError(f"{mpath}: not valid JSON ({e})", "rebuild the dataset") from None
    if manifest.get("format") != FORMAT:
        raise DatasetError(f"{mpath}: format {manifest.get('format')!r}, expected {FORMAT!r}",
                           "rebuild the dataset with this version of the tools")
    table = read_pcap(root / PACKETS)
    labels = np.load(root / LABELS)
    if labels.shape[0] != len(table):
        raise DatasetError(f"{root}: {labels.shape[0]} labels for {len(table)} packets", "rebuild the dataset")
    capture = np.load(root / CAPTURES) if (root / CAPTURES).is_file() else None
    if capture is not None and capture.shape[0] != len(table):
        raise DatasetError(f"{root}: {capture.shape[0]} capture indices for {len(table)} packets", "rebuild the dataset")
    if capture is None and len(manifest.get("captures") or []) > 1:
        log.warning("%s records no capture per frame (%s): its test partition is by flow, not by capture file; "
                    "rebuild it to split by file", root, CAPTURES)
    return Dataset(root, manifest, table, labels, assign_flows(table), capture)
