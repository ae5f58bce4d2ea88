"""The Map stage: token features -> bin codes -> exact key -> centroid id.

The switch cannot cluster, so clustering happens on the *discretized* key
space: every packet's token becomes a key (length bin from a range table,
inter-arrival bucket, direction, TCP-flag class from a ternary table, protocol
class); keys seen in training are clustered with weighted k-means, and every
possible key (seen or not) is assigned its nearest centroid. The resulting
table is total, so training, the reference pipeline and the dataplanes get
the same centroid for the same packet by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans

from chimera.data.tokens import IAT_BUCKETS, PROTO_CLASSES, Tokens, proto_class
from chimera.rules.ternary import first_match

LEN_BINS = 16
FLAG_CLASSES = 8
DIRS = 2
MAP_KEYS = LEN_BINS * IAT_BUCKETS * DIRS * FLAG_CLASSES * PROTO_CLASSES

#: TCP flags -> class, first match wins: (value, mask, class). Mirrored by the
#: eBPF loop and the P4 ternary table (entries installed from the artifact).
FLAG_TERNARY: tuple[tuple[int, int, int], ...] = (
    (0x00, 0xFF, 0),  # no flags (UDP, ICMP, TCP null)
    (0x04, 0x04, 3),  # RST (any)
    (0x02, 0x12, 1),  # SYN without ACK
    (0x12, 0x12, 2),  # SYN+ACK
    (0x01, 0x01, 4),  # FIN (any)
    (0x08, 0x08, 5),  # PSH (with data)
    (0x10, 0x10, 6),  # ACK only
    (0x00, 0x00, 7),  # anything else (URG/ECE/CWR combos)
)
FLAG_CLASS_REPR = np.array([0x00, 0x02, 0x12, 0x14, 0x11, 0x18, 0x10, 0x20], np.int64)


def flag_class(tcp_flags: np.ndarray, table: np.ndarray | None = None) -> np.ndarray:
    """Ternary TCP-flag classification: the class of the first matching (value, mask, class) entry."""
    t = np.asarray(FLAG_TERNARY if table is None else table, np.int64).reshape(-1, 3)
    f = np.asarray(tcp_flags, np.int64)
    idx = first_match(f.reshape(-1, 1), t[:, :1], t[:, 1:2])
    return t[idx, 2].astype(np.uint8).reshape(f.shape)  # the last entry is a catch-all: idx >= 0


def len_bin(ip_len: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Range-table lookup: bin i covers [lo[i], lo[i+1] - 1]; lo[0] == 0."""
    return (np.searchsorted(lo, np.asarray(ip_len, np.int64), side="right") - 1).astype(np.uint8)


def map_key(lbin: np.ndarray, iat_b: np.ndarray, direction: np.ndarray, fclass: np.ndarray,
            pclass: np.ndarray) -> np.ndarray:
    """Exact-match key of the Map table (mixed radix, no multiplication needed in hardware: shifts)."""
    k = lbin.astype(np.int64)
    k = k * IAT_BUCKETS + iat_b
    k = k * DIRS + direction
    k = k * FLAG_CLASSES + fclass
    return (k * PROTO_CLASSES + pclass).astype(np.int64)


def _key_features(len_repr: np.ndarray) -> np.ndarray:
    """Feature vector of every one of the MAP_KEYS keys, for clustering."""
    k = np.arange(MAP_KEYS)
    pc = k % PROTO_CLASSES
    fc = (k // PROTO_CLASSES) % FLAG_CLASSES
    d = (k // (PROTO_CLASSES * FLAG_CLASSES)) % DIRS
    ib = (k // (PROTO_CLASSES * FLAG_CLASSES * DIRS)) % IAT_BUCKETS
    lb = k // (PROTO_CLASSES * FLAG_CLASSES * DIRS * IAT_BUCKETS)
    flags = ((FLAG_CLASS_REPR[fc][:, None] >> np.arange(6)) & 1).astype(np.float64)
    return np.column_stack([np.log2(np.maximum(len_repr[lb], 1)), ib / 2.0, d.astype(np.float64), flags,
                            np.eye(PROTO_CLASSES)[pc] * 2.0])


@dataclass
class MapTables:
    """Everything the Map stage needs, as installed in the dataplane."""

    len_lo: np.ndarray        # int64[LEN_BINS], lower bound of each length bin (lo[0] = 0)
    centroid_of_key: np.ndarray  # uint8[MAP_KEYS]
    n_centroids: int

    def keys(self, tok: Tokens) -> np.ndarray:
        return map_key(len_bin(tok.ip_len, self.len_lo), tok.iat_bucket, tok.direction,
                       flag_class(tok.tcp_flags), proto_class(tok.proto))

    def centroids(self, tok: Tokens) -> np.ndarray:
        return self.centroid_of_key[self.keys(tok)].astype(np.int64)


def fit_map(tok: Tokens, n_centroids: int, seed: int) -> MapTables:
    """Length bins from quantiles, then weighted k-means over the observed keys."""
    lens = np.asarray(tok.ip_len, np.int64)
    qs = np.quantile(lens, np.linspace(0, 1, LEN_BINS + 1)[1:-1]) if lens.size else np.zeros(0)
    edges = np.unique(np.r_[0, np.ceil(qs).astype(np.int64)])
    # pad to exactly LEN_BINS strictly increasing lower bounds (unused bins sit above 64 KiB - 1)
    while edges.size < LEN_BINS:
        edges = np.r_[edges, max(int(edges[-1]) + 1, 65536 - LEN_BINS + edges.size)]
    edges = edges[:LEN_BINS]
    repr_len = np.array([(edges[i] + (edges[i + 1] - 1 if i + 1 < LEN_BINS else max(edges[i], 1500))) / 2
                         for i in range(LEN_BINS)], np.float64)
    m = MapTables(edges, np.zeros(MAP_KEYS, np.uint8), n_centroids)
    counts = np.bincount(m.keys(tok), minlength=MAP_KEYS).astype(np.float64)
    feats = _key_features(repr_len)
    seen = np.flatnonzero(counts > 0)
    k = min(n_centroids, seen.size)
    km = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(feats[seen], sample_weight=counts[seen])
    centers = km.cluster_centers_
    if k < n_centroids:  # fewer distinct keys than centroids: spare centroids stay unused
        centers = np.vstack([centers, np.full((n_centroids - k, centers.shape[1]), 1e6)])
    d2 = ((feats[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    m.centroid_of_key = np.argmin(d2, axis=1).astype(np.uint8)
    m.centroid_of_key[seen] = km.labels_.astype(np.uint8)  # seen keys keep their own cluster
    return m
