"""Stage 1, dataset: generate (cached) or normalize the experiment's data, then split it.

The split is by flow (75/10/15, stratified, seeded); the switch replays the
test split plus the packets that belong to no flow, so every frame a real
switch would see goes through it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chimera import paths
from chimera.data.adapters import normalize
from chimera.data.dataset import FORMAT as DATASET_FORMAT
from chimera.data.dataset import MANIFEST, Dataset, NormalizeOptions, load_dataset
from chimera.data.pcap import PacketTable, ParseStatus
from chimera.data.synthetic import SyntheticSpec, generate
from chimera.data.tokens import Tokens, dataplane_eligible, tokenize
from chimera.errors import DatasetError
from chimera.experiments.config import DatasetSpec
from chimera.formats.rundir import DatasetRecord, Manifest
from chimera.rules.spec import rule_keys

log = logging.getLogger(__name__)


DATA_CODE = paths.PACKAGE / "data"


def _code_fingerprint() -> str:
    """Hash of the data layer's code: a cached dataset made by other code is never reused."""
    h = hashlib.sha256(DATASET_FORMAT.encode())
    for f in sorted(DATA_CODE.rglob("*.py")):
        h.update(str(f.relative_to(DATA_CODE)).encode() + f.read_bytes())
    return h.hexdigest()


def _raw_fingerprint(root: Path) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of every file under a raw dataset directory: what a cache of it depends on."""
    return sorted((str(f.relative_to(root)), f.stat().st_size, f.stat().st_mtime_ns)
                  for f in root.rglob("*") if f.is_file())


def cache_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def resolve_dataset(spec: DatasetSpec, data_root: Path) -> Dataset:
    """Generate or normalize the dataset an experiment names, cached under ``data_root`` by content:
    the generator arguments or the raw files' listing, the normalization options and the data code."""
    if spec.synthetic is not None:
        s = spec.synthetic
        key = cache_key(s.model_dump(), _code_fingerprint())
        out = data_root / "synthetic" / f"{s.profile}-{s.flows}-s{s.seed}-{key}"
        if not (out / MANIFEST).exists():
            with _build_lock(out):  # two sweep tasks on one node may ask for the same dataset at once
                if not (out / MANIFEST).exists():
                    generate(SyntheticSpec(**s.model_dump()), out, overwrite=out.exists())
        return load_dataset(out)
    assert spec.path is not None  # DatasetSpec: exactly one of synthetic and path
    path = Path(spec.path).expanduser()
    if not path.exists():
        raise DatasetError(f"dataset path {path} does not exist",
                           "pass a normalized dataset or a raw dataset directory to --dataset")
    if (path / MANIFEST).exists():
        return load_dataset(path)
    key = cache_key(spec.adapter, spec.normalize.model_dump(), _raw_fingerprint(path), _code_fingerprint())
    out = data_root / "normalized" / f"{spec.adapter}-{path.name}-{key}"
    if not (out / MANIFEST).exists():
        with _build_lock(out):
            if not (out / MANIFEST).exists():
                log.info("normalizing raw dataset %s with the %s adapter -> %s", path, spec.adapter, out)
                normalize(spec.adapter, path, out, overwrite=out.exists(),
                          options=NormalizeOptions(**spec.normalize.model_dump()))
    return load_dataset(out)


@contextmanager
def _build_lock(out: Path) -> Iterator[None]:
    """An exclusive lock (flock) next to a cache entry while it is built: one builder per node, the others wait
    and then read what it wrote."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class PreparedData:
    """A dataset with its split, tokens and rule keys: what every later stage reads."""

    ds: Dataset
    tokens: Tokens
    train_rows: np.ndarray
    val_rows: np.ndarray
    test_rows: np.ndarray      # eligible, labelled test packets (rows of ds.table)
    replay_rows: np.ndarray    # everything the switch sees: test-split packets and packets of no flow
    _replay_table: PacketTable | None = field(default=None, repr=False)

    @property
    def classes(self) -> list[str]:
        return self.ds.classes

    def y(self, rows: np.ndarray) -> np.ndarray:
        return self.ds.labels[rows].astype(np.int64)

    def rule_keys(self, rows: np.ndarray) -> np.ndarray:
        """[len(rows), 7] offline rule keys of packets ``rows`` (docs/pipeline.md step 6)."""
        t, f = self.ds.table, self.ds.flows
        return rule_keys(t.proto[rows], t.tcp_flags[rows], f.direction[rows], f.pkt_index[rows] + 1, t.sport[rows],
                         t.dport[rows], t.ip_len[rows])

    @property
    def replay_table(self) -> PacketTable:
        """The packets the switch is sent, in capture order (one object, so targets can cache its pcap)."""
        if self._replay_table is None:
            self._replay_table = self.ds.table.take(self.replay_rows)
        return self._replay_table

    @property
    def test_in_replay(self) -> np.ndarray:
        """Position of each test packet in the replay."""
        return np.searchsorted(self.replay_rows, self.test_rows)

    def accounting(self) -> dict[str, int]:
        """Every packet of the dataset in exactly one category: classified (by split) or why not."""
        t = self.ds.table
        n = len(t)
        cat = np.full(n, "", object)
        names = {ParseStatus.NON_IP: "not classified: non-IP frame", ParseStatus.TRUNCATED: "not classified: truncated",
                 ParseStatus.FRAGMENT: "not classified: IP fragment", ParseStatus.BAD_IP: "not classified: bad IP header",
                 ParseStatus.EMPTY: "not classified: empty frame"}
        for st, name in names.items():
            cat[t.status == st] = name
        cat[(t.status == ParseStatus.OK) & (t.ip_version == 6)] = "not classified: IPv6 (the dataplanes parse IPv4)"
        eligible = dataplane_eligible(t)
        cat[eligible & (self.ds.labels < 0)] = "not classified: no label"
        for rows, name in ((self.train_rows, "classified: train"), (self.val_rows, "classified: validation"),
                           (self.test_rows, "classified: test")):
            cat[rows] = name
        if (cat == "").any():  # a case the categories above miss would be a bug here, not a packet to drop
            raise DatasetError(f"{int((cat == '').sum())} packets fall in no accounting category",
                               "report this: chimera/experiments/stages/dataset.py accounting")
        keys, counts = np.unique(cat.astype(str), return_counts=True)
        return {str(k): int(c) for k, c in zip(keys, counts)}

    def test_flows_per_class(self) -> dict[str, int]:
        """Test flows per class (how much a class's F1 rests on)."""
        fid = self.ds.flows.flow_id[self.test_rows]
        lab = self.ds.labels[self.test_rows]
        return {c: int(np.unique(fid[lab == y]).size) for y, c in enumerate(self.classes)}

    def split_sizes(self) -> dict[str, int]:
        return {"train": int(self.train_rows.size), "val": int(self.val_rows.size), "test": int(self.test_rows.size),
                "replayed": int(self.replay_rows.size)}


def time_split(ds: Dataset, seed: int, train_until_ns: int) -> np.ndarray:
    """Per-packet split for drift runs: flows that start before ``train_until_ns`` are split 75/10/15 as usual;
    every later flow is test. The model never sees the future, and the early test flows give the
    undrifted yardstick."""
    fs = ds.flow_split(seed)
    starts = ds.table.ts_ns[ds.flows.first_packet]
    fs = np.where(starts < train_until_ns, fs, 2).astype(np.int8)
    out = np.full(len(ds.table), -1, np.int8)
    ok = ds.flows.flow_id >= 0
    out[ok] = fs[ds.flows.flow_id[ok]]
    return out


def prepare(ds: Dataset, seed: int, train_until_ns: int | None = None) -> PreparedData:
    """Split ``ds`` by flow (or by time, see ``time_split``) and tokenize it; errors name what is too small
    and how to fix it. Refused before any training: a split with no classifiable packet, a training split of one
    class, and a class with no packets in the training or the test split (a class never trained on, or never
    scored, would skew macro-F1), named with the seed of the split."""
    classes = ds.classes
    if len(classes) < 2:
        raise DatasetError(f"dataset {ds.root} has one class ({classes}); a classifier needs two or more",
                           "use a dataset with at least two labelled classes")
    split = ds.packet_split(seed) if train_until_ns is None else time_split(ds, seed, train_until_ns)
    ok = dataplane_eligible(ds.table) & (ds.labels >= 0)
    rows = [np.flatnonzero(ok & (split == k)) for k in range(3)]
    for k, name in enumerate(("train", "validation", "test")):
        if rows[k].size == 0:
            raise DatasetError(f"dataset {ds.root}: the {name} split has no classifiable packets",
                               "use more flows (each class needs >= 3 flows for a 75/10/15 split)")
    present = np.unique(ds.labels[rows[0]])
    if present.size < 2:
        raise DatasetError(f"dataset {ds.root}: the training split has only class {classes[present[0]]}",
                           "use more flows per class")
    for k, name in ((0, "training"), (2, "test")):  # a class never trained on, or never scored, skews macro-F1
        missing = sorted(set(range(len(classes))) - set(np.unique(ds.labels[rows[k]]).tolist()))
        if missing:
            raise DatasetError(f"dataset {ds.root}: class(es) {[classes[i] for i in missing]} have no packets in "
                               f"the {name} split (split by flow, seed {seed})",
                               "use more flows of those classes (each needs >= 3 flows for a 75/10/15 split), "
                               "or remove them from the dataset")
    replay = np.flatnonzero((split == 2) | (ds.flows.flow_id < 0))
    return PreparedData(ds, tokenize(ds.table, ds.flows), rows[0], rows[1], rows[2], replay)


def dataset_record(data: PreparedData, split_rule: str | None = None) -> DatasetRecord:
    """The dataset's identity, splits and packet accounting (what the report shows)."""
    ds = data.ds
    m = {k: ds.manifest.get(k) for k in ("name", "source", "seed", "classes", "packets", "status", "packets_sha256",
                                          "generator", "skipped_files", "normalization", "unreadable_captures",
                                          "cross_capture_flows")}
    log.info("[dataset] %s: %d packets, %d flows, %d classes; test split %d packets (%d replayed)", ds.manifest["name"],
             len(ds.table), ds.flows.n_flows, len(ds.classes), data.test_rows.size, data.replay_rows.size)
    return DatasetRecord.model_validate({**m, "path": str(ds.root), "flows": ds.flows.n_flows,
                                         "split_packets": data.split_sizes(), "accounting": data.accounting(),
                                         "test_flows_per_class": data.test_flows_per_class(), "split_rule": split_rule})


def record_dataset(manifest: Manifest, data: PreparedData, split_rule: str | None = None) -> None:
    """The dataset's record in the run's manifest."""
    manifest.dataset = dataset_record(data, split_rule)
