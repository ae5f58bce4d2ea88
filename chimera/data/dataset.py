"""The normalized dataset: the one on-disk format every source is turned into.

    <dataset>/
      manifest.json   format, name, source, seed, classes, captures (+ sha256), counts by outcome
      packets.pcap    every frame as untagged Ethernet, captures one after another in time
      labels.npy      int16 per frame: class index, -1 where the source gives no label
      flows.csv       one row per flow: 5-tuple, label, split, packets (for people, not parsed back)

Real datasets (adapters) and the synthetic generator both end here, so the
model, the reference pipeline and the replay all read the same thing. Writes go
to a temporary sibling directory that is renamed at the end: an interrupted
build never leaves a half dataset that looks complete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chimera.data.flows import Flows, assign_flows, split_flows
from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.errors import DatasetError

log = logging.getLogger(__name__)

FORMAT = "chimera-dataset/1"
MANIFEST = "manifest.json"
PACKETS = "packets.pcap"
LABELS = "labels.npy"
FLOWS = "flows.csv"
#: Gap inserted between consecutive captures when they are concatenated.
CAPTURE_GAP_NS = 1_000_000_000


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
    manifest: dict[str, Any]
    table: PacketTable
    labels: np.ndarray
    flows: Flows

    @property
    def classes(self) -> list[str]:
        return list(self.manifest["classes"])

    @property
    def pcap(self) -> Path:
        return self.root / PACKETS

    def flow_labels(self) -> np.ndarray:
        """Label of each flow: the label of its first packet (captures are single-label)."""
        return self.labels[self.flows.first_packet]

    def flow_split(self, seed: int | None = None) -> np.ndarray:
        """Train/val/test (0/1/2) per flow, stratified, deterministic for the seed."""
        return split_flows(self.flow_labels(), self.manifest["seed"] if seed is None else seed)

    def packet_split(self, seed: int | None = None) -> np.ndarray:
        """Split per packet (-1 for packets in no flow)."""
        fs = self.flow_split(seed)
        out = np.full(len(self.table), -1, np.int8)
        ok = self.flows.flow_id >= 0
        out[ok] = fs[self.flows.flow_id[ok]]
        return out


def write_dataset(out_dir: str | os.PathLike[str], captures: list[CaptureSpec], classes: list[str], *,
                  name: str, source: str, seed: int, extra: dict[str, Any] | None = None,
                  overwrite: bool = False) -> Path:
    """Normalize captures into ``out_dir`` (atomically). Returns the dataset path."""
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise DatasetError(f"{out}: already exists; refusing to overwrite it",
                           "pick another --out, or pass --overwrite to replace it")
    if not captures:
        raise DatasetError(f"no captures to write into {out}", "check the input directory")
    cls_index = {c: i for i, c in enumerate(classes)}
    tables, labels, cap_meta = [], [], []
    t_next = 0
    for spec in captures:
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
        if len(t):
            # captures follow each other in time; order within a capture is kept
            shift = t_next - int(t.ts_ns.min())
            t.ts_ns = t.ts_ns + shift
            t_next = int(t.ts_ns.max()) + CAPTURE_GAP_NS
        tables.append(t)
        labels.append(lab)
        cap_meta.append({"file": str(spec.path), "label": spec.label, "packets": len(t),
                         "sha256": sha256_file(spec.path), "status": t.status_counts(),
                         "truncated_records": t.truncated_records})
    table = PacketTable.concat(tables)
    lab_all = np.concatenate(labels)
    order = np.argsort(table.ts_ns, kind="stable")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        frames = normalized_frames(table, order)
        write_pcap(tmp / PACKETS, frames, table.ts_ns[order])
        np.save(tmp / LABELS, lab_all[order])
        counts = {k: sum(c["status"][k] for c in cap_meta) for k in cap_meta[0]["status"]}
        manifest = {
            "format": FORMAT, "name": name, "source": source, "seed": seed, "classes": classes,
            "captures": cap_meta, "packets": int(len(table)), "status": counts,
            "truncated_records": sum(c["truncated_records"] for c in cap_meta),
            "unlabelled_packets": int((lab_all < 0).sum()),
            "packets_sha256": sha256_file(tmp / PACKETS), **(extra or {}),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        ds = load_dataset(tmp)
        _write_flows_csv(ds, tmp / FLOWS)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("dataset %s: %d packets, %d flows, %d classes -> %s", name, len(table), ds.flows.n_flows,
             len(classes), out)
    return out


def _write_flows_csv(ds: Dataset, path: Path) -> None:
    t, f = ds.table, ds.flows
    r = f.first_packet
    split = ds.flow_split()
    lab = ds.flow_labels()

    def addr(a: np.ndarray) -> list[str]:
        import ipaddress
        return [str(ipaddress.ip_address(bytes(x[12:]))) if bytes(x[:12]) == b"\0" * 10 + b"\xff\xff"
                else str(ipaddress.ip_address(bytes(x))) for x in a]

    pd.DataFrame({
        "flow": np.arange(f.n_flows), "src": addr(t.src[r]), "sport": t.sport[r], "dst": addr(t.dst[r]),
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
    return Dataset(root, manifest, table, labels, assign_flows(table))
