"""Partition and Map: each packet becomes a centroid id (for attention) and five value sub-tokens.

The switch cannot cluster, so everything here is a table the dataplane looks up:

- the **centroid** ``c`` (queries and keys of the attention): a coarse length bin
  (range table, ``LEN_BINS`` bins), the inter-arrival bucket, the direction, the
  TCP-flag class (ternary table) and the protocol class form an exact key; keys
  seen in training are clustered with weighted k-means and every possible key is
  given its nearest centroid, so the map table is total;
- the **value sub-tokens** (Pegasus-style Partition -> Map -> SumReduce): a fine
  length bin (range table, up to ``LEN_FINE_MAX`` bins from training quantiles) x
  direction, the IAT bucket x direction, the flag class x protocol class, the
  port id x direction, and the bucket of the flow's packet count. Each indexes
  its own value table; a packet's value is their sum.

The **port id** keys on either port: the vocabulary holds the training split's ports
that talk to the most distinct peer ports (``ports_by_peers``), either side, in rank
order (id 1 = the most peers), and a packet
takes the id of whichever of its two ports ranks higher (0: neither is in it). An
exact table per port, then a minimum: the service port is found on a flow whose
first packet came from the server (a capture that starts mid-flow, a reply), which
the earlier responder-port rule (dport of the first packet's direction) lost
(docs/fidelity.md, the diagnosis).

The exact arithmetic (key layout, sub-token ids, packing) is docs/pipeline.md;
training, the reference, the eBPF C and the P4 program use the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans

from chimera.data.tokens import IAT_BUCKETS, PROTO_CLASSES, Tokens, bit_length, proto_class
from chimera.rules.ternary import first_match

LEN_BINS = 16
FLAG_CLASSES = 8
DIRS = 2
MAP_KEYS = LEN_BINS * IAT_BUCKETS * DIRS * FLAG_CLASSES * PROTO_CLASSES
LEN_FINE_MAX = 256
PORT_IDS_MAX = 64
IDX_BUCKETS = 16
#: value sub-tokens, in table order: (name, number of ids as a function of the fine-bin and port-id counts)
SUB_TOKENS = ("len", "iat", "flags", "port", "index")

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
    return (np.searchsorted(lo, np.asarray(ip_len, np.int64), side="right") - 1).astype(np.int64)


def map_key(lbin: np.ndarray, iat_b: np.ndarray, direction: np.ndarray, fclass: np.ndarray,
            pclass: np.ndarray) -> np.ndarray:
    """Exact-match key of the Map table (mixed radix, no multiplication needed in hardware: shifts)."""
    k = np.asarray(lbin, np.int64)
    k = k * IAT_BUCKETS + iat_b
    k = k * DIRS + direction
    k = k * FLAG_CLASSES + fclass
    return (k * PROTO_CLASSES + pclass).astype(np.int64)


def pair_port_id(sid: np.ndarray, did: np.ndarray) -> np.ndarray:
    """The port id of a packet from the ids of its two ports: the higher-ranked (smaller) non-zero one, 0 if
    both are 0. The dataplanes write it as ``did if sid == 0 or (did != 0 and did < sid) else sid``."""
    s, d = np.asarray(sid, np.int64), np.asarray(did, np.int64)
    return np.where((s == 0) | ((d != 0) & (d < s)), d, s)


def index_bucket(flow_pkts: np.ndarray) -> np.ndarray:
    """min(bit_length(packets of the flow so far, this one included), IDX_BUCKETS - 1)."""
    return np.minimum(bit_length(np.asarray(flow_pkts, np.int64)), IDX_BUCKETS - 1)


def sub_token_sizes(len_fine: int, port_ids: int) -> tuple[int, ...]:
    """Number of ids of each value sub-token."""
    return (len_fine * DIRS, IAT_BUCKETS * DIRS, FLAG_CLASSES * PROTO_CLASSES, port_ids * DIRS, IDX_BUCKETS)


def bin_repr(edges: np.ndarray) -> np.ndarray:
    """A representative length per coarse bin (its midpoint; the open last bin counts up to 1500)."""
    n = edges.size
    return np.array([(edges[i] + (edges[i + 1] - 1 if i + 1 < n else max(edges[i], 1500))) / 2 for i in range(n)],
                    np.float64)


def key_features(len_repr: np.ndarray) -> np.ndarray:
    """Feature vector of every one of the MAP_KEYS keys, for clustering. The length feature belongs to the bin
    index (through ``len_repr``), so a key keeps its features when the bins are re-fitted (the control plane)."""
    k = np.arange(MAP_KEYS)
    pc = k % PROTO_CLASSES
    fc = (k // PROTO_CLASSES) % FLAG_CLASSES
    d = (k // (PROTO_CLASSES * FLAG_CLASSES)) % DIRS
    ib = (k // (PROTO_CLASSES * FLAG_CLASSES * DIRS)) % IAT_BUCKETS
    lb = k // (PROTO_CLASSES * FLAG_CLASSES * DIRS * IAT_BUCKETS)
    flags = ((FLAG_CLASS_REPR[fc][:, None] >> np.arange(6)) & 1).astype(np.float64)
    return np.column_stack([np.log2(np.maximum(len_repr[lb], 1)), ib / 2.0, d.astype(np.float64), flags,
                            np.eye(PROTO_CLASSES)[pc] * 2.0])


def quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Exactly ``n_bins`` strictly increasing lower bounds, lo[0] = 0, from the quantiles of ``values``.

    Bins a sample cannot fill (few distinct values) sit above 65535 - n_bins, where no
    IPv4 length reaches, so every id keeps a meaning and the range table stays sorted.
    """
    v = np.asarray(values, np.int64)
    qs = np.quantile(v, np.linspace(0, 1, n_bins + 1)[1:-1]) if v.size else np.zeros(0)
    edges = np.unique(np.r_[0, np.ceil(qs).astype(np.int64)])
    while edges.size < n_bins:
        edges = np.r_[edges, max(int(edges[-1]) + 1, 65536 - n_bins + edges.size)]
    return edges[:n_bins].astype(np.int64)


@dataclass
class MapTables:
    """Everything the Partition and Map stages need, as installed in the dataplane."""

    len_lo: np.ndarray           # int64[LEN_BINS], coarse range table lower bounds (lo[0] = 0)
    centroid_of_key: np.ndarray  # uint8[MAP_KEYS]
    n_centroids: int
    len_fine_lo: np.ndarray      # int64[len_fine], fine range table lower bounds
    port_vocab: np.ndarray       # int64[P]: ports in rank order, port_vocab[i] has id i + 1 (0 = any other port)

    @property
    def port_ids(self) -> int:
        return int(self.port_vocab.size) + 1

    @property
    def sizes(self) -> tuple[int, ...]:
        return sub_token_sizes(int(self.len_fine_lo.size), PORT_IDS_MAX)

    def keys(self, tok: Tokens) -> np.ndarray:
        return map_key(len_bin(tok.ip_len, self.len_lo), tok.iat_bucket, tok.direction, flag_class(tok.tcp_flags),
                       proto_class(tok.proto))

    def centroids(self, tok: Tokens) -> np.ndarray:
        return self.centroid_of_key[self.keys(tok)].astype(np.int64)

    def port_id(self, port: np.ndarray) -> np.ndarray:
        table = np.zeros(65536, np.int64)
        table[self.port_vocab] = np.arange(1, self.port_vocab.size + 1)
        return table[np.asarray(port, np.int64)]

    def sub_tokens(self, tok: Tokens, sport: np.ndarray, dport: np.ndarray, flow_pkts: np.ndarray) -> np.ndarray:
        """[N, 5] value sub-token ids (docs/pipeline.md, step 3b); ``flow_pkts`` counts this packet."""
        d = np.asarray(tok.direction, np.int64)
        return np.column_stack([
            len_bin(tok.ip_len, self.len_fine_lo) * DIRS + d,
            np.asarray(tok.iat_bucket, np.int64) * DIRS + d,
            flag_class(tok.tcp_flags).astype(np.int64) * PROTO_CLASSES + proto_class(tok.proto),
            pair_port_id(self.port_id(sport), self.port_id(dport)) * DIRS + d,
            index_bucket(flow_pkts),
        ]).astype(np.int64)


def most_frequent_ports(ports: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` most frequent values of ``ports`` (0..65535), most frequent first, ties to the lower port;
    fewer where fewer occur."""
    cnt = np.bincount(np.asarray(ports, np.int64), minlength=65536)
    top = np.argsort(-cnt, kind="stable")[:k]
    return top[cnt[top] > 0].astype(np.int64)


def ports_by_peers(sport: np.ndarray, dport: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` ports that talk to the most distinct peer ports (either side), then the most packets, then the
    lower port; fewer where fewer occur. A service port meets many client ports; a frequent ephemeral port,
    however many packets it carries, meets one or two."""
    s, d = np.asarray(sport, np.int64), np.asarray(dport, np.int64)
    pairs = np.unique(np.r_[s * 65536 + d, d * 65536 + s])
    peers = np.bincount(pairs // 65536, minlength=65536)
    pkts = np.bincount(np.r_[s, d], minlength=65536)
    top = np.lexsort((np.arange(65536), -pkts, -peers))[:k]
    return top[peers[top] > 0].astype(np.int64)


def class_profile(keys: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """[MAP_KEYS, n_classes]: each key's class distribution on the training tokens (add-one smoothed)."""
    c = np.zeros((MAP_KEYS, n_classes))
    np.add.at(c, (np.asarray(keys, np.int64), np.asarray(labels, np.int64)), 1.0)
    c += 1.0
    return c / c.sum(1, keepdims=True)


def fit_map(tok: Tokens, n_centroids: int, seed: int, *, len_fine: int = LEN_FINE_MAX, port_ids: int = PORT_IDS_MAX,
            sport: np.ndarray | None = None, dport: np.ndarray | None = None, labels: np.ndarray | None = None,
            class_weight: float = 0.0) -> MapTables:
    """Length bins from quantiles, k-means over the observed coarse keys, a port vocabulary (either side).

    ``labels`` and ``class_weight`` > 0: a class-aware Map (a supervised partition, in the manner of Pegasus):
    each key's class distribution on the training tokens joins its features, scaled so that at weight 1 it
    spreads as much as the features do, so keys that separate the classes tend to get centroids of their own.
    Keys never seen in training are placed by their features alone. The Map stays a key -> centroid table: every
    implementation reads it as it is."""
    lens = np.asarray(tok.ip_len, np.int64)
    edges = quantile_edges(lens, LEN_BINS)
    repr_len = bin_repr(edges)
    vocab = np.zeros(0, np.int64)
    if sport is not None and dport is not None and port_ids > 1:
        vocab = ports_by_peers(sport, dport, port_ids - 1)
    m = MapTables(edges, np.zeros(MAP_KEYS, np.uint8), n_centroids, quantile_edges(lens, len_fine), vocab)
    counts = np.bincount(m.keys(tok), minlength=MAP_KEYS).astype(np.float64)
    feats = key_features(repr_len)
    seen = np.flatnonzero(counts > 0)
    k = min(n_centroids, seen.size)
    fit_on = feats[seen]
    if labels is not None and class_weight > 0:
        prof = class_profile(m.keys(tok), labels, int(np.max(labels)) + 1)[seen]
        spread = float(np.sqrt(fit_on.var(0).sum() / max(prof.var(0).sum(), 1e-12)))
        fit_on = np.column_stack([fit_on, class_weight * spread * prof])
    km = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(fit_on, sample_weight=counts[seen])
    centers = km.cluster_centers_[:, :feats.shape[1]]
    if k < n_centroids:  # fewer distinct keys than centroids: spare centroids stay unused
        centers = np.vstack([centers, np.full((n_centroids - k, centers.shape[1]), 1e6)])
    d2 = ((feats[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    m.centroid_of_key = np.argmin(d2, axis=1).astype(np.uint8)
    m.centroid_of_key[seen] = km.labels_.astype(np.uint8)  # seen keys keep their own cluster
    return m
