"""Quantize a trained model + rules into the table artifact, enforcing the budgets.

Integer semantics fixed here (docs/pipeline.md; the reference pipeline executes
them, the eBPF C and the P4 program implement them), b = ``compile.bits``:

- phi_q, phi_k: round(phi * s_phi), unsigned b bits; every phi_k entry >= 1 and
  every phi_q row has an entry >= 1, so K_int = phi_q phi_k^T >= 1 and Z > 0
- value tables V_j: round(V_j * s_v), signed b bits, one scale for all five (they are summed)
- W_out: round(W * s_o), signed b bits
- kernel K_int[q, c] = phi_q_int[q] . phi_k_int[c] (prf: the batch form equals the
  incremental one exactly), or clip(round(K * s_K), 1, 2^b - 1) for the table-only kernels
- global layer: G[q, p, y] = sum_g K_int[q, g] (W_out_int^T v_g_int)_y, Gz[q, p] = sum_g K_int[q, g]
- soft rule weights W_int = round(W * s_W) in [0, 2^(b-1) - 1]; with ``compile.prior_logits`` one more soft
  rule matches every packet with weights 0, and s_W leaves room for the control plane to set them to a class
  bias of up to prior_logits (chimera.controlplane.prior; the bounds below hold for any such weights)
- fused_y = ALPHA*A_y + BETA*S_y*Z + ((GAMMA*E_y*Z) >> EMA_FRAC) with ALPHA : BETA : GAMMA
  = alpha/(s_v s_o) : beta/s_W : gamma, the largest at 2^fuse_bits - 1, a nonzero one never 0

Bounds on every accumulator are proven here from the table ranges, so the
declared widths can never overflow; a configuration that could is rejected
with the budget it breaks.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from chimera.compile.config import CompileConfig, ema_eta_effective, ema_shifts
from chimera.data.tokens import IAT_BUCKETS, IAT_SHIFT, PROTO_CLASSES
from chimera.errors import BudgetError, ConfigError
from chimera.formats.artifact import VALUE_TABLES, Artifact, GlobalTable
from chimera.formats.verdict import NO_RULE
from chimera.model.config import FusionConfig
from chimera.model.tokenizer import (FLAG_CLASSES, FLAG_TERNARY, IDX_BUCKETS, LEN_BINS, MAP_KEYS, PORT_IDS_MAX,
                                     SUB_TOKENS)
from chimera.model.train import TrainedModel
from chimera.paths import portable
from chimera.rules.spec import FLOW_PKTS_SATURATION, KEY_FIELDS, Rules, compile_match

log = logging.getLogger(__name__)

RULE_KEY_BITS = sum(w for _, w in KEY_FIELDS)
FLOW_BOOKKEEPING_BITS = {"signature": 32, "last_ts": 32, "pkts": 16, "orient": 1}
ACC_BITS = 32            # width of each S_t / Z_t accumulator
TOKEN_BITS = 56          # a window token: centroid 8, sub-tokens 16 + 8 + 8 + 8 + 8 (docs/pipeline.md)
INT32, INT64 = 2**31 - 1, 2**63 - 1


def bits_for(n: int) -> int:
    """Bits to index n values."""
    return max(1, math.ceil(math.log2(max(n, 2))))


def _sym_quant(x: np.ndarray, bits: int, scale: float | None = None) -> tuple[np.ndarray, float]:
    top = (1 << (bits - 1)) - 1
    if scale is None:
        m = float(np.max(np.abs(x))) if x.size else 0.0
        scale = top / m if m > 0 else 1.0
    return np.clip(np.rint(x * scale), -top, top).astype(np.int64), scale


def _ratios(values: list[float], bits: int) -> list[int]:
    """Integers proportional to ``values`` (>= 0), the largest at 2^bits - 1; a nonzero value never rounds to 0."""
    top = (1 << bits) - 1
    m = max(values)
    if m <= 0:
        return [0 for _ in values]
    return [0 if v <= 0 else max(1, int(round(v / m * top))) for v in values]


def per_flow_bits(window: int, features: int, d_v: int, aggregation: str) -> dict[str, int]:
    """The per-flow register state the pipeline needs (logical widths; targets report their allocation)."""
    out = dict(FLOW_BOOKKEEPING_BITS)
    out["ring_head"] = bits_for(window)
    out["ring (L x token)"] = window * TOKEN_BITS
    if aggregation == "incremental":
        out["S_t (m x d_v x 32)"] = features * d_v * ACC_BITS
        out["Z_t (m x 32)"] = features * ACC_BITS
    out["total"] = sum(out.values())
    return out


def planned_constants(model: Any, ccfg: CompileConfig, rules: Rules, n_classes: int | None = None) -> dict[str, int]:
    """The artifact constants a model config will compile to, known before any training: a target checks its
    compiled-in limits against these so that a run too big for it fails in seconds, not at install time.
    ``HARD_ENTRIES`` counts every hard rule (an upper bound: rules for absent labels are dropped later);
    ``SOFT_ENTRIES_PER_RULE`` is the largest soft rule's entry count."""
    out = {"WINDOW": model.window, "NUM_CENTROIDS": model.centroids, "RF_FEATURES": model.features,
           "D_V": model.d_v, "LEN_FINE": model.len_fine, "FLOW_SLOTS": ccfg.flow_slots,
           "SAMPLE_SLOTS": ccfg.sample_slots, "SOFT_RULES": len(rules.soft) + int(ccfg.prior_logits > 0),
           "HARD_ENTRIES": sum(len(compile_match(r.match, f"{rules.path}: hard rule '{r.name}'")) for r in rules.hard),
           "SOFT_ENTRIES_PER_RULE": max((len(e) for e in rules.soft_entries()), default=0)}
    if n_classes is not None:
        out["NUM_CLASSES"] = n_classes
    return out


def _phi_quant(model: TrainedModel, kmax: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Quantized (phi_q, phi_k, global phi_k) with one scale; phi_k >= 1 and every phi_q row has an entry >= 1."""
    assert model.phi_q is not None and model.phi_k is not None
    gk = model.global_phi_k if model.global_phi_k is not None else np.zeros((PROTO_CLASSES, 0, model.phi_q.shape[1]))
    top = float(max(model.phi_q.max(), model.phi_k.max(), gk.max() if gk.size else 0.0))
    s = kmax / top
    pq = np.clip(np.rint(model.phi_q * s), 0, kmax).astype(np.int64)
    pk = np.maximum(np.clip(np.rint(model.phi_k * s), 0, kmax), 1).astype(np.int64)
    gq = np.maximum(np.clip(np.rint(gk * s), 0, kmax), 1).astype(np.int64)
    rows = np.arange(pq.shape[0])
    pq[rows, np.argmax(model.phi_q, axis=1)] = np.maximum(pq.max(1), 1)
    return pq, pk, gq, s


@dataclass(frozen=True)
class Quantized:
    """Every table of a model as integers, with the scales that made them and the fusion coefficients."""

    bits: int
    prf: bool                    # the factorized kernel (positive random features)
    incremental: bool            # per-flow S_t / Z_t accumulators (else the batch form: reference only)
    uses_window: bool
    n_global: int
    phi_q: np.ndarray            # [C, m] (zeros for the table kernels)
    phi_k: np.ndarray
    kernel: np.ndarray           # [C, C]
    values: list[np.ndarray]     # the five value tables
    w_out: np.ndarray            # [D_V, Y]
    global_table: GlobalTable
    hard: np.ndarray             # stored RuleTable layouts
    soft_entries: np.ndarray
    soft_weights: np.ndarray     # [R, Y] W_int
    alpha: int
    beta: int
    gamma: int
    scales: dict[str, float]
    skipped_hard_rules: list[str]
    live_soft: int = 0           # the largest weight the control plane may give the prior rule (bounds hold for it)

    @property
    def vtop(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def token_vmax(self) -> int:
        """|v(tok)_e|: five value rows of |entry| <= vtop."""
        return len(SUB_TOKENS) * self.vtop


def quantize(model: TrainedModel, rules: Rules, soft_w: np.ndarray, ccfg: CompileConfig, fusion: FusionConfig,
             beta: float) -> Quantized:
    """The float model and rule weights as b-bit integer tables (the module docstring's rules)."""
    cfg = model.config
    if cfg.software_only:
        raise ConfigError(f"attention={cfg.attention}, keys={cfg.keys} cannot be compiled to switch tables",
                          "it runs as the software classifier (marked † in the ablation)")
    if model.decay is not None:
        raise ConfigError("the model has the recency term, which no dataplane implements",
                          "it is measured offline only (invoke bench --what directions)")
    b = ccfg.bits
    C, Y, m = cfg.centroids, len(model.classes), cfg.features
    kmax, vtop = (1 << b) - 1, (1 << (b - 1)) - 1
    prf = cfg.attention == "prf"
    ng = cfg.n_global if cfg.uses_global else 0

    # kernel: the factorized one (prf) or a table (rff/softmax: batch on the reference only)
    if prf:
        phi_q, phi_k, gphi, _ = _phi_quant(model, kmax)
        kernel = phi_q @ phi_k.T
        gkern = np.einsum("cj,pgj->cpg", phi_q, gphi[:, :ng]) if ng else np.zeros((C, PROTO_CLASSES, 0), np.int64)
    else:
        s_k = kmax / float(max(model.kernel.max(), model.global_kernel.max() if model.global_kernel.size else 0.0))
        kernel = np.clip(np.rint(model.kernel * s_k), 1, kmax).astype(np.int64)
        gkern = np.clip(np.rint(model.global_kernel * s_k), 1, kmax).astype(np.int64)
        phi_q = np.zeros((C, m), np.int64)
        phi_k = np.zeros((C, m), np.int64)
    # values (one scale for the five tables: a token's value is their sum) and the class head
    vmax = max(float(np.max(np.abs(v))) for v in model.values)
    s_v = vtop / vmax if vmax > 0 else 1.0
    vals = [_sym_quant(v, b, s_v)[0] for v in model.values]
    w_out, s_o = _sym_quant(model.w_out, b)
    nn_scale = s_v * s_o  # A/Z ~ s_nn * s_v * s_o
    tok_vmax = len(SUB_TOKENS) * vtop
    gv = np.clip(np.rint(model.global_values[:, :ng] * s_v), -tok_vmax, tok_vmax).astype(np.int64)
    ug = gv @ w_out                                                          # [P, ng, Y]

    # global layer: one ternary entry per (query centroid, protocol class) with global tokens
    qq, pp = (a.ravel() for a in np.meshgrid(np.arange(C), np.arange(PROTO_CLASSES), indexing="ij")) if ng else \
        (np.zeros(0, np.int64), np.zeros(0, np.int64))
    full = np.full(qq.size, 0xFF, np.int64)
    gtab = GlobalTable(qq, full, pp, full.copy(),
                       np.asarray([(gkern[q, p][:, None] * ug[p]).sum(0) for q, p in zip(qq, pp)], np.int64).reshape(-1, Y),
                       np.asarray([gkern[q, p].sum() for q, p in zip(qq, pp)], np.int64).reshape(-1))

    # rules
    _, skipped = rules.hard_entries(model.classes)
    for name in skipped:
        log.warning("hard rule '%s' (%s) forces a label this dataset does not have; not installed", name, rules.path)
    if len(rules.hard) >= NO_RULE:
        raise ConfigError(f"{rules.path}: {len(rules.hard)} hard rules; rule ids are 8-bit ({NO_RULE} = none)",
                          f"keep at most {NO_RULE - 1} hard rules")
    # fusion coefficients: nonzero stays nonzero (a small beta is never silently dropped)
    a_f, b_f = fusion.coefficients(beta)
    if ccfg.prior_logits > 0 and b_f <= 0:
        # neural-only fusion (chosen, or fallen back to on validation): the soft term carries the prior rule
        # alone, with unit weight, and the learned soft weights stay out of the decision as before
        soft_w, b_f = np.zeros_like(np.asarray(soft_w, np.float64)), 1.0
    wmax = float(soft_w.max()) if soft_w.size else 0.0
    # headroom: the prior rule's largest weight is prior_logits of fused score (0: no prior rule)
    wmax = max(wmax, ccfg.prior_logits / b_f) if ccfg.prior_logits > 0 else wmax
    scale_w = vtop / wmax if wmax > 0 else 1.0
    w_int = np.clip(np.rint(soft_w * scale_w), 0, vtop).astype(np.int64).reshape(len(rules.soft), Y)
    alpha_i, beta_i, gamma_i = _ratios([a_f / nn_scale, b_f / scale_w if wmax > 0 else 0.0, fusion.gamma],
                                       ccfg.fuse_bits)
    return Quantized(b, prf, prf and cfg.aggregation == "incremental", cfg.uses_window, ng, phi_q, phi_k,
                     kernel.astype(np.int64), vals, w_out, gtab, rules.hard_table(model.classes).stored(),
                     rules.soft_table().stored(), w_int, alpha_i, beta_i, gamma_i,
                     {"v": s_v, "o": s_o, "w": scale_w, "nn": nn_scale,
                      **({"prior": scale_w / b_f} if ccfg.prior_logits > 0 else {})}, skipped,
                     vtop if ccfg.prior_logits > 0 else 0)


@dataclass(frozen=True)
class Bound:
    """An accumulator's proven largest magnitude and the limit of its declared width."""

    name: str
    value: int
    limit: int

    @property
    def holds(self) -> bool:
        return self.value <= self.limit


def prove_bounds(q: Quantized, window: int, ema_frac: int) -> list[Bound]:
    """The largest magnitude every accumulator of docs/pipeline.md can reach with these tables, from their
    ranges alone (whatever the traffic); raises BudgetError naming the first one its width cannot hold."""
    m, DV = q.phi_q.shape[1], q.w_out.shape[0]
    vtop, tok_vmax = q.vtop, q.token_vmax
    gt = q.global_table
    kern_max = int(q.kernel.max())
    s_bound = window * int(q.phi_k.max()) * tok_vmax          # |S_t[j][e]|: L tokens of phi_k * |v|
    zacc_bound = window * int(q.phi_k.max())                  # Z_t[j]
    g_abs = int(np.abs(gt.g).max()) if len(gt) else 0
    gz_max = int(gt.gz.max()) if len(gt) else 0
    u_max = DV * vtop * tok_vmax                              # |W_out^T v| per token and class
    h_bound = m * int(q.phi_q.max()) * s_bound
    if q.incremental:
        a_bound = DV * vtop * h_bound + g_abs
        z_bound = m * int(q.phi_q.max()) * zacc_bound + gz_max
    else:
        a_bound = window * kern_max * u_max + g_abs
        z_bound = window * kern_max + gz_max
    if not q.uses_window:
        a_bound, z_bound = g_abs, gz_max
    ssym_bound = (int(q.soft_weights.sum(0).max()) if q.soft_weights.size else 0) + q.live_soft
    fused_bound = q.alpha * a_bound + q.beta * ssym_bound * z_bound + q.gamma * z_bound
    out = [Bound("attention accumulator A_y (int64)", a_bound, INT64), Bound("attention normaliser Z (int64)", z_bound, INT64),
           Bound("fused score (int64)", fused_bound, INT64),
           Bound("prior product GAMMA*E_y*Z (int64)", q.gamma * (1 << ema_frac) * z_bound, INT64)]
    if q.incremental:
        out += [Bound("incremental accumulator S_t (int32)", s_bound, INT32),
                Bound("incremental normaliser Z_t (int32)", zacc_bound, INT32),
                Bound("incremental h = phi_q . S_t (int64)", h_bound, INT64)]
    for bd in out:
        if not bd.holds:
            raise BudgetError(bd.name, float(bd.value), float(bd.limit),
                              "lower compile.bits, model.window or model.features")
    return out


def resources(q: Quantized, model: TrainedModel, ccfg: CompileConfig) -> tuple[list[dict[str, int | str]], dict[str, int]]:
    """(tables with their entries and bits, per-flow bits), logical (targets report what they allocate); raises
    BudgetError for a table or the flow state over its budget."""
    cfg = model.config
    C, Y, L, m, DV, b = cfg.centroids, len(model.classes), cfg.window, cfg.features, cfg.d_v, q.bits
    cb = bits_for(C)
    sizes = [v.shape[0] for v in q.values]
    tables = [
        ("len_range (coarse)", LEN_BINS, 32 + bits_for(LEN_BINS)),
        ("len_fine_range", len(model.map.len_fine_lo), 32 + 8),
        ("flag_ternary", len(FLAG_TERNARY), 16 + bits_for(FLAG_CLASSES)),
        ("map", MAP_KEYS, bits_for(MAP_KEYS) + cb),
        ("port_vocab", len(model.map.port_vocab), 16 + bits_for(PORT_IDS_MAX)),
        *((f"value_{n}", s, bits_for(s) + DV * b) for n, s in zip(SUB_TOKENS, sizes)),
        ("phi_q", C if q.incremental else 0, cb + m * b), ("phi_k", C if q.incremental else 0, cb + m * b),
        ("kernel (batch form)", 0 if q.incremental else C * C, 2 * cb + 2 * b),
        ("w_out", DV, Y * b),
        ("global", len(q.global_table), 2 * (cb + 2) + Y * 64 + 64),
        ("hard_rules", len(q.hard), 2 * RULE_KEY_BITS + 16),
        ("soft_rules", len(q.soft_entries), 2 * RULE_KEY_BITS + Y * b),
    ]
    res_tables: list[dict[str, int | str]] = [{"table": n, "entries": int(e), "entry_bits": int(eb),
                                               "bits": int(e * eb)} for n, e, eb in tables]
    flow = per_flow_bits(L, m, DV, "incremental" if q.incremental else "batch")
    for t in res_tables:
        if int(t["bits"]) > ccfg.budgets.table_bits:
            raise BudgetError(f"table memory N_entries*b of '{t['table']}'", int(t["bits"]), ccfg.budgets.table_bits,
                              "fewer centroids/classes/bins, fewer bits (compile.bits), or raise budgets.table_bits")
    if flow["total"] > ccfg.budgets.per_flow_bits:
        raise BudgetError("per-flow state bits (ring + m*d_v*32 accumulators)", flow["total"],
                          ccfg.budgets.per_flow_bits,
                          "lower model.window, model.features or model.d_v, or raise budgets.per_flow_bits")
    return res_tables, flow


def constants_of(q: Quantized, model: TrainedModel, ccfg: CompileConfig, fusion: FusionConfig,
                 rules: Rules) -> dict[str, int]:
    """The artifact's constants (the generated header's #defines, with the wire formats')."""
    cfg = model.config
    ema_a, ema_b = ema_shifts(ccfg.ema_eta)
    sizes = [v.shape[0] for v in q.values]
    return {
        "NUM_CLASSES": len(model.classes), "NUM_CENTROIDS": cfg.centroids, "WINDOW": cfg.window,
        "WINDOW_MASK": cfg.window - 1, "FLOW_SLOTS": ccfg.flow_slots,
        "LEN_BINS": LEN_BINS, "LEN_FINE": len(model.map.len_fine_lo), "IAT_BUCKETS": IAT_BUCKETS,
        "IAT_SHIFT": IAT_SHIFT, "FLAG_CLASSES": FLAG_CLASSES, "FLAG_ENTRIES": len(FLAG_TERNARY),
        "PROTO_CLASSES": PROTO_CLASSES, "MAP_KEYS": MAP_KEYS, "PORT_IDS": PORT_IDS_MAX,
        "PORT_ENTRIES": len(model.map.port_vocab), "IDX_BUCKETS": IDX_BUCKETS,
        **{f"SUB_{n.upper()}": s for n, s in zip(SUB_TOKENS, sizes)},
        "GLOBAL_ENTRIES": len(q.global_table), "HARD_ENTRIES": len(q.hard), "SOFT_RULES": len(rules.soft),
        "SOFT_ENTRIES": len(q.soft_entries), "ALPHA": q.alpha, "BETA": q.beta, "GAMMA": q.gamma,
        "LAMBDA_H": fusion.lambda_h, "USE_WINDOW": int(cfg.uses_window), "USE_GLOBAL": int(bool(q.n_global)),
        "AGG_INCREMENTAL": int(q.incremental), "KERNEL_TABLE": int(not q.prf), "RF_FEATURES": cfg.features,
        "D_V": cfg.d_v, "TABLE_BITS": q.bits, "EMA_SHIFT": ema_a, "EMA_SHIFT2": ema_b, "EMA_FRAC": ccfg.ema_frac,
        "MAP_VERSION": ccfg.map_version, "SAMPLE_SHIFT": ccfg.sample_shift, "SAMPLE_SLOTS": ccfg.sample_slots,
        "FLOW_PKTS_SAT": FLOW_PKTS_SATURATION, "RULE_KEY_FIELDS": len(KEY_FIELDS),
    }


def compile_model(model: TrainedModel, rules: Rules, soft_w: np.ndarray, ccfg: CompileConfig,
                  # dict[str, Any]: JSON out: the artifact's provenance record
                  fusion: FusionConfig, beta: float, provenance: dict[str, Any] | None = None) -> Artifact:
    """Build the artifact: quantize, prove the accumulator bounds, account resources against the budgets,
    write the constants; raises BudgetError/ConfigError naming what to change."""
    if ccfg.prior_logits > 0:
        rules = rules.with_prior_rule()
        soft_w = np.vstack([np.asarray(soft_w, np.float64).reshape(-1, len(model.classes)),
                            np.zeros((1, len(model.classes)))])
    q = quantize(model, rules, soft_w, ccfg, fusion, beta)
    bounds = prove_bounds(q, model.config.window, ccfg.ema_frac)
    res_tables, flow = resources(q, model, ccfg)
    ema_a, ema_b = ema_shifts(ccfg.ema_eta)
    arrays = dict(zip(VALUE_TABLES, q.values))
    return Artifact(
        classes=list(model.classes), constants=constants_of(q, model, ccfg, fusion, rules),
        len_lo=model.map.len_lo.astype(np.int64), len_fine_lo=model.map.len_fine_lo.astype(np.int64),
        flag_ternary=np.asarray(FLAG_TERNARY, np.int64), map=model.map.centroid_of_key.astype(np.int64),
        port_vocab=model.map.port_vocab.astype(np.int64), **arrays,
        phi_q=q.phi_q, phi_k=q.phi_k, kernel=q.kernel, w_out=q.w_out, global_entries=q.global_table.stored(),
        hard=q.hard, soft_entries=q.soft_entries, soft_weights=q.soft_weights,
        resources={"per_flow_bits": flow, "tables": res_tables,
                   "table_entries": int(sum(int(t["entries"]) for t in res_tables)),
                   "table_bits": int(sum(int(t["bits"]) for t in res_tables)),
                   "bounds": {bd.name: int(bd.value) for bd in bounds}},
        provenance={"model": model.config.model_dump(), "compile": ccfg.model_dump(), "fusion": fusion.model_dump(),
                    "beta_used": beta, "ema_eta_effective": ema_eta_effective(ema_a, ema_b),
                    "scales": {k: float(f"{v:.6g}") for k, v in q.scales.items()},
                    "rules_file": portable(rules.path), "skipped_hard_rules": q.skipped_hard_rules,
                    **({"prior_rule": {"rule": len(rules.soft) - 1, "logits": ccfg.prior_logits,
                                       "weight_per_logit": q.scales["prior"]}}
                       if ccfg.prior_logits > 0 else {}), **(provenance or {})},
        rule_names={"hard": [r.name for r in rules.hard], "soft": [r.name for r in rules.soft]},
    )
