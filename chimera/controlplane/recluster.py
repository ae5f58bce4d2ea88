"""Re-fit the Map tables from the switch's token sample: quantile re-binning, warm-started k-means.

What may change live is fixed by docs/pipeline.md ("State and versions"): the
length range tables and the Map table. The value, kernel and class-head tables
stay, so every token in a flow's window is subtracted with the value it was
added with, whatever version is active.

- **Re-binning**: the coarse and the fine length bins are re-fitted to the
  quantiles of the sampled lengths. A bin index then keeps its rank in the
  traffic, which is what the model learned from: a length distribution that
  grows or shrinks maps back onto the same bins.
- **Re-clustering**: the Map keys seen in the sample are re-clustered with
  weighted k-means (Lloyd), warm-started from the installed map's clusters, so
  centroid ids stay stable (each cluster starts where its keys are); or, as the
  paper's Table 5 gives its loop (``centroid_update: ema``), each centroid moves
  a step eta toward the mean of the sampled keys nearest to it, once per T_cp. A key's
  features belong to its bin index (chimera.model.tokenizer.key_features with the
  compiled bins), so re-binning alone never moves a key. Keys absent from the
  sample keep their centroid: there is no evidence to move them.
- **Δmap**: the share of the sampled tokens whose centroid or fine bin would
  change. The loop installs only when Δmap > τ_map.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from chimera.controlplane.config import ControlPlaneConfig
from chimera.formats.artifact import Artifact
from chimera.model.tokenizer import LEN_BINS, bin_repr, key_features, len_bin, map_key, quantile_edges
from chimera.reference.pipeline import unpack_sample

VERSION_MASK = 0xFFFF


@dataclass(frozen=True)
class MapVersion:
    """One version of the Map tables (what a live install writes)."""

    version: int
    len_lo: np.ndarray
    len_fine_lo: np.ndarray
    map: np.ndarray
    prior: np.ndarray | None = None   # the prior rule's weights (chimera.controlplane.prior), where compiled in

    @staticmethod
    def of(art: Artifact) -> "MapVersion":
        return MapVersion(art.c("MAP_VERSION"), art.len_lo.copy(), art.len_fine_lo.copy(), art.map.copy(),
                          prior_weights(art))

    def apply(self, art: Artifact) -> Artifact:
        """``art`` with these Map tables, prior weights and this map version (everything else unchanged)."""
        soft = art.soft_weights
        if self.prior is not None:
            soft = soft.copy()
            soft[prior_rule(art)] = self.prior
        return dataclasses.replace(art, len_lo=self.len_lo.copy(), len_fine_lo=self.len_fine_lo.copy(),
                                   map=self.map.copy(), soft_weights=soft,
                                   constants={**art.constants, "MAP_VERSION": self.version},
                                   provenance={**art.provenance, "map_version": self.version})

    def successor(self, **tables: Any) -> "MapVersion":
        """The next version: these tables changed, the others as they are."""
        return dataclasses.replace(self, version=(self.version + 1) & VERSION_MASK, **tables)

    def centroid_and_bin(self, sample: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(centroid, fine length bin) of unpacked sampled tokens under these tables."""
        keys = map_key(len_bin(sample["ip_len"], self.len_lo), sample["iat_bucket"], sample["direction"],
                       sample["flag_class"], sample["proto_class"])
        return self.map[keys], len_bin(sample["ip_len"], self.len_fine_lo)


def prior_rule(art: Artifact) -> int:
    """The index of the artifact's prior rule (compile.prior_logits), -1 where it has none."""
    pr = art.provenance.get("prior_rule")
    return int(pr["rule"]) if pr else -1


def prior_weights(art: Artifact) -> np.ndarray | None:
    r = prior_rule(art)
    return None if r < 0 else np.asarray(art.soft_weights[r], np.int64).copy()


def _range_entries(lo: np.ndarray) -> set[tuple[int, int, int]]:
    hi = np.r_[lo[1:] - 1, 0xFFFF]
    return {(b, int(a), int(z)) for b, (a, z) in enumerate(zip(lo, hi))}


def churn(old: MapVersion, new: MapVersion) -> dict[str, int]:
    """Logical table entries (as chimera.p4 holds them) that differ between two versions, per table."""
    out = {"len_range": len(_range_entries(new.len_lo) - _range_entries(old.len_lo)),
           "len_fine_range": len(_range_entries(new.len_fine_lo) - _range_entries(old.len_fine_lo)),
           "map_exact": int(np.sum(old.map != new.map)),
           "prior": int(old.prior is not None and new.prior is not None and bool(np.any(old.prior != new.prior)))}
    out["total"] = sum(out.values())
    return out


def _nearest_sums(x: np.ndarray, w: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One assignment step: per centre, the weighted sum of the points nearest to it and their weight."""
    lab = np.argmin(((x[:, None, :] - centers[None, :, :]) ** 2).sum(-1), axis=1)
    mass = np.bincount(lab, weights=w, minlength=centers.shape[0])
    sums = np.stack([np.bincount(lab, weights=w * x[:, f], minlength=centers.shape[0]) for f in range(x.shape[1])], 1)
    return sums, mass


def lloyd(x: np.ndarray, w: np.ndarray, centers: np.ndarray, iterations: int) -> np.ndarray:
    """Weighted k-means from ``centers``; a centre that loses every point stays where it is."""
    c = centers.copy()
    for _ in range(iterations):
        sums, mass = _nearest_sums(x, w, c)
        moved = mass > 0
        new = c.copy()
        new[moved] = sums[moved] / mass[moved, None]
        if np.allclose(new, c):
            break
        c = new
    return c


def ema_step(x: np.ndarray, w: np.ndarray, centers: np.ndarray, eta: float) -> np.ndarray:
    """One EMA update of the centres (the paper's slow loop): each centre moves ``eta`` of the way toward the
    weighted mean of the points nearest to it; a centre no point is nearest to stays where it is. With eta = 1 it
    is one Lloyd iteration."""
    sums, mass = _nearest_sums(x, w, centers)
    moved = mass > 0
    new = centers.copy()
    new[moved] = (1 - eta) * centers[moved] + eta * sums[moved] / mass[moved, None]
    return new


@dataclass
class Proposal:
    """A candidate version and what installing it would change."""

    mapv: MapVersion
    delta: float                 # Δmap: share of sampled tokens whose centroid or fine bin changes
    samples: int
    churn: dict[str, int]
    centers: np.ndarray
    seconds: float               # time to compute the proposal


class Reclusterer:
    """The fitting half of the slow loop; holds the cluster centres of the installed version."""

    def __init__(self, art: Artifact, cfg: ControlPlaneConfig) -> None:
        self.cfg = cfg
        self.feats = key_features(bin_repr(art.len_lo))  # fixed: a key's features belong to its bin index
        self.centers = self._cell_means(art.map, art.c("NUM_CENTROIDS"))

    def _cell_means(self, mp: np.ndarray, n: int) -> np.ndarray:
        """Warm start: each centroid at the mean of the keys the installed map gives it (none: far away)."""
        c = np.full((n, self.feats.shape[1]), 1e6)
        for j in np.unique(mp):
            c[j] = self.feats[mp == j].mean(0)
        return c

    def propose(self, cur: MapVersion, words: np.ndarray) -> Proposal | None:
        """A new version fitted to the sampled tokens ``words``; None when there are too few."""
        if len(words) < self.cfg.min_samples:
            return None
        t0 = time.perf_counter()
        s = unpack_sample(words)
        lens = s["ip_len"]
        lo = quantile_edges(lens, LEN_BINS) if self.cfg.rebin != "off" else cur.len_lo
        fine = quantile_edges(lens, cur.len_fine_lo.size) if self.cfg.rebin == "all" else cur.len_fine_lo
        keys = map_key(len_bin(lens, lo), s["iat_bucket"], s["direction"], s["flag_class"], s["proto_class"])
        new_map, centers = cur.map.copy(), self.centers
        if self.cfg.recluster:
            uk, cnt = np.unique(keys, return_counts=True)
            x, w = self.feats[uk], cnt.astype(np.float64)
            centers = (ema_step(x, w, self.centers, self.cfg.eta) if self.cfg.centroid_update == "ema" else
                       lloyd(x, w, self.centers, self.cfg.lloyd_iterations))
            new_map[uk] = np.argmin(((self.feats[uk][:, None, :] - centers[None]) ** 2).sum(-1), axis=1)
        cand = cur.successor(len_lo=lo.astype(np.int64), len_fine_lo=fine.astype(np.int64),
                             map=new_map.astype(np.int64))
        old_c, old_f = cur.centroid_and_bin(s)
        new_c, new_f = cand.centroid_and_bin(s)
        delta = float(np.mean((old_c != new_c) | (old_f != new_f)))
        return Proposal(cand, delta, int(len(words)), churn(cur, cand), centers, time.perf_counter() - t0)

    def accept(self, p: Proposal) -> None:
        """The proposal was installed: its centres are the warm start from now on."""
        self.centers = p.centers
