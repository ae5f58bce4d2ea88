"""Quantize a trained model + rules into the table artifact, enforcing the budgets.

Integer semantics fixed here (docs/pipeline.md; the reference pipeline executes
them, the eBPF C and the P4 program implement them):

- K_int[q, c] = clip(round(K * s_K), 1, 2^b - 1)       (unsigned b bits, > 0 so Z > 0)
- U_int[c, y] = round(U * s_U) in +-(2^(b-1) - 1)      (signed b bits)
- P_int[q, c, y] = K_int * U_int                        (exact, signed 2b bits)
- G[q, p, y] = sum over global tokens g of p of P_int[q, g, y];  Gz[q, p] = sum K_int[q, g]
- W_int[r, y] = round(W * s_W) in [0, 2^(b-1) - 1]      (soft rule weights, non-negative)
- fused_y = ALPHA * A_y + BETA * S_y * Z               (int64; ALPHA/BETA carry alpha/(s_K s_U) : beta/s_W)

Bounds on every accumulator are proven here from the table ranges, so the
declared widths (A: int32, Z: uint32, fused: int64) can never overflow; a
configuration that could is rejected with the budget it breaks.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from chimera.compile.config import CompileConfig
from chimera.data.tokens import IAT_BUCKETS, IAT_SHIFT, PROTO_CLASSES
from chimera.errors import BudgetError, ConfigError
from chimera.formats.artifact import Artifact
from chimera.formats.verdict import ETH_P_VERDICT, NO_RULE, VERDICT_LEN, VerdictFlag
from chimera.model.config import FusionConfig
from chimera.model.tokenizer import FLAG_CLASSES, FLAG_TERNARY, LEN_BINS, MAP_KEYS
from chimera.model.train import TrainedModel
from chimera.rules.spec import FLOW_PKTS_SATURATION, KEY_FIELDS, Rules

log = logging.getLogger(__name__)

RULE_KEY_BITS = sum(w for _, w in KEY_FIELDS)
FLOW_BOOKKEEPING_BITS = {"signature": 32, "last_ts": 32, "pkts": 16, "orient": 1}
ACC_BITS = 32  # width of the incremental S_t / Z_t accumulators


def bits_for(n: int) -> int:
    """Bits to index n values."""
    return max(1, math.ceil(math.log2(max(n, 2))))


def _sym_quant(x: np.ndarray, bits: int) -> tuple[np.ndarray, float]:
    top = (1 << (bits - 1)) - 1
    m = float(np.max(np.abs(x))) if x.size else 0.0
    s = top / m if m > 0 else 1.0
    return np.clip(np.rint(x * s), -top, top).astype(np.int64), s


def _ratio(a: float, b: float, bits: int) -> tuple[int, int]:
    """Integers proportional to (a, b) using ``bits`` bits for the larger one."""
    top = (1 << bits) - 1
    m = max(a, b)
    if m <= 0:
        return 0, 0
    return int(round(a / m * top)), int(round(b / m * top))


def per_flow_bits(model: TrainedModel, aggregation: str) -> dict[str, int]:
    cfg = model.config
    out = dict(FLOW_BOOKKEEPING_BITS)
    out["ring_head"] = bits_for(cfg.window)
    out["ring"] = cfg.window * bits_for(cfg.centroids)
    if aggregation == "incremental":
        out["S_acc (m*d_v*b)"] = cfg.features * cfg.d_v * ACC_BITS
        out["Z_acc (m*b)"] = cfg.features * ACC_BITS
    out["total"] = sum(out.values())
    return out


def compile_model(model: TrainedModel, rules: Rules, soft_w: np.ndarray, ccfg: CompileConfig,
                  fusion: FusionConfig, beta: float, provenance: dict[str, Any] | None = None) -> Artifact:
    """Build the artifact; raises BudgetError/ConfigError naming what to change."""
    cfg = model.config
    if cfg.software_only:
        raise ConfigError(f"attention={cfg.attention}, keys={cfg.keys} cannot be compiled to switch tables",
                          "it runs as the software classifier (marked † in the ablation)")
    b = ccfg.bits
    C, Y, L = cfg.centroids, len(model.classes), cfg.window
    kmax = (1 << b) - 1
    scale_k = kmax / float(model.kernel.max())
    k_int = np.clip(np.rint(model.kernel * scale_k), 1, kmax).astype(np.int64)
    u_int, scale_u = _sym_quant(model.head, b)
    p_int = k_int[:, :, None] * u_int[None, :, :]

    # global layer: one ternary entry per (query centroid, protocol class) with any global token
    gcount = np.zeros((PROTO_CLASSES, C), np.int64)
    for p in range(PROTO_CLASSES):
        for g in model.global_tokens[p]:
            if g >= 0:
                gcount[p, g] += 1
    use_g = cfg.uses_global
    use_w = cfg.uses_window
    inc = None
    if cfg.aggregation == "incremental":
        if cfg.attention != "prf" or model.phi_q is None or model.phi_k is None:
            raise ConfigError("aggregation=incremental needs attention=prf (non-negative features keep Z > 0)",
                              "set model.attention: prf for the incremental row")
        phimax = float(max(model.phi_q.max(), model.phi_k.max()))
        s_phi = kmax / phimax
        pq = np.clip(np.rint(model.phi_q * s_phi), 0, kmax).astype(np.int64)
        pk = np.clip(np.rint(model.phi_k * s_phi), 0, kmax).astype(np.int64)
        pk = np.maximum(pk, 1)  # every key contributes: Z > 0 whenever a query feature is > 0
        pq[np.arange(C), np.argmax(pq, axis=1)] = np.maximum(pq.max(1), 1)
        v_int, s_v = _sym_quant(model.values, b)
        o_int, s_o = _sym_quant(model.w_out, b)
        kk = pq @ pk.T                                   # [C, C] exact integer kernel
        uu = v_int @ o_int                               # [C, Y] exact integer class head
        g_inc = np.einsum("qg,gy,pg->qpy", kk, uu, gcount) if use_g else np.zeros((C, PROTO_CLASSES, Y), np.int64)
        gz_inc = np.einsum("qg,pg->qp", kk, gcount) if use_g else np.zeros((C, PROTO_CLASSES), np.int64)
        inc = {"phi_q": pq, "phi_k": pk, "values": v_int, "w_out": o_int, "g": g_inc, "gz": gz_inc}
        nn_scale = s_v * s_o  # A/Z ~ s_nn * s_V * s_O
        a_bound = (L * pk.max() * np.abs(v_int).max() * cfg.features * kmax * cfg.d_v * np.abs(o_int).max()
                   + np.abs(g_inc).max())
        z_bound = L * cfg.features * kmax * kmax + gz_inc.max()
    else:
        nn_scale = scale_u  # A/Z = (sum K_int U_int)/(sum K_int) ~ s_nn * s_U
        a_bound = (L if use_w else 0) * kmax * ((1 << (b - 1)) - 1) + int(gcount.sum(1).max()) * kmax * ((1 << (b - 1)) - 1)
        z_bound = (L if use_w else 0) * kmax + int(gcount.sum(1).max()) * kmax
    g_rows = []
    if use_g:
        for q in range(C):
            for p in range(PROTO_CLASSES):
                if gcount[p].any():
                    if inc is not None:
                        gv, gz = inc["g"][q, p], inc["gz"][q, p]
                    else:
                        gv = (gcount[p][:, None] * p_int[q]).sum(0)
                        gz = int((gcount[p] * k_int[q]).sum())
                    g_rows.append([q, 0xFF, p, 0xFF, *[int(x) for x in gv], int(gz)])
    global_entries = np.asarray(g_rows, np.int64).reshape(-1, 4 + Y + 1)

    # rules
    hard_list, skipped = rules.hard_entries(model.classes)
    for name in skipped:
        log.warning("hard rule '%s' (%s) forces a label this dataset does not have; not installed", name, rules.path)
    hard = np.asarray([[*e.value, *e.mask, r, y] for e, r, y in hard_list], np.int64).reshape(-1, 16)
    soft_entries = rules.soft_table()
    if len(rules.hard) >= NO_RULE:
        raise ConfigError(f"{rules.path}: {len(rules.hard)} hard rules; rule ids are 8-bit ({NO_RULE} = none)",
                          f"keep at most {NO_RULE - 1} hard rules")
    wtop = (1 << (b - 1)) - 1
    wmax = float(soft_w.max()) if soft_w.size else 0.0
    scale_w = wtop / wmax if wmax > 0 else 1.0
    w_int = np.clip(np.rint(soft_w * scale_w), 0, wtop).astype(np.int64).reshape(len(rules.soft), Y)

    a_f, b_f = fusion.coefficients(beta)
    alpha_i, beta_i = _ratio(a_f / nn_scale, b_f / scale_w if wmax > 0 else 0.0, ccfg.fuse_bits)
    s_bound = int(w_int.sum(0).max()) if w_int.size else 0
    fused_bound = alpha_i * a_bound + beta_i * s_bound * z_bound
    acc = [("attention accumulator A_y " + ("(int64)" if inc is not None else "(int32)"), a_bound,
            2**63 - 1 if inc is not None else 2**31 - 1),
           ("attention normaliser Z " + ("(int64)" if inc is not None else "(uint32)"), z_bound,
            2**63 - 1 if inc is not None else 2**32 - 1),
           ("fused score (int64)", fused_bound, 2**63 - 1)]
    if inc is not None:
        acc.append(("incremental accumulator S_t (int32)", L * kmax * wtop, 2**31 - 1))
    for name, value, limit in acc:
        if value > limit:
            raise BudgetError(name, float(value), float(limit), "lower compile.bits or model.window")

    # resources and budgets
    cb = bits_for(C)
    tables = [
        ("len_range", LEN_BINS, 32 + bits_for(LEN_BINS), 1),
        ("flag_ternary", len(FLAG_TERNARY), 16 + bits_for(FLAG_CLASSES), 1),
        ("map", MAP_KEYS, bits_for(MAP_KEYS) + cb, 1),
        ("window", C * C if use_w and inc is None else 0, 2 * cb + b + Y * 2 * b, L),
        ("global", len(global_entries), 2 * (cb + 2) + Y * 32 + 32, 1),
        ("hard_rules", len(hard), 2 * RULE_KEY_BITS + 16, 1),
        ("soft_rules", len(soft_entries), 2 * RULE_KEY_BITS + Y * b, 1),
    ]
    if inc is not None:
        m = cfg.features
        tables += [("phi_q", C, cb + m * b, 1), ("phi_k", C, cb + m * b, 1), ("values", C, cb + cfg.d_v * b, 1),
                   ("w_out", cfg.d_v, Y * b, 1)]
    res_tables = [{"table": n, "entries": int(e), "entry_bits": int(eb), "bits": int(e * eb), "copies": cp}
                  for n, e, eb, cp in tables]
    flow = per_flow_bits(model, cfg.aggregation)
    for t in res_tables:
        if t["bits"] > ccfg.budgets.table_bits:
            raise BudgetError(f"table memory N_entries*b of '{t['table']}'", t["bits"], ccfg.budgets.table_bits,
                              "fewer centroids/classes, fewer bits (compile.bits), or raise budgets.table_bits")
    if flow["total"] > ccfg.budgets.per_flow_bits:
        raise BudgetError("per-flow state bits" + (" (m*d_v*b accumulators + ring)" if inc is not None else
                                                  " (L*log2(C) ring + bookkeeping)"),
                          flow["total"], ccfg.budgets.per_flow_bits,
                          "lower model.window/centroids (or features/d_v when incremental), "
                          "or raise budgets.per_flow_bits")

    flag_names = {f"VFLAG_{f.name}": int(f.value) for f in VerdictFlag}
    constants = {
        "NUM_CLASSES": Y, "NUM_CENTROIDS": C, "WINDOW": L, "WINDOW_MASK": L - 1, "FLOW_SLOTS": ccfg.flow_slots,
        "LEN_BINS": LEN_BINS, "IAT_BUCKETS": IAT_BUCKETS, "IAT_SHIFT": IAT_SHIFT, "FLAG_CLASSES": FLAG_CLASSES,
        "FLAG_ENTRIES": len(FLAG_TERNARY), "PROTO_CLASSES": PROTO_CLASSES, "MAP_KEYS": MAP_KEYS,
        "GLOBAL_ENTRIES": len(global_entries), "HARD_ENTRIES": len(hard), "SOFT_RULES": len(rules.soft),
        "SOFT_ENTRIES": len(soft_entries), "ALPHA": alpha_i, "BETA": beta_i, "LAMBDA_H": fusion.lambda_h,
        "USE_WINDOW": int(use_w), "USE_GLOBAL": int(use_g), "AGG_INCREMENTAL": int(inc is not None),
        "RF_FEATURES": cfg.features, "D_V": cfg.d_v, "TABLE_BITS": b,
        "EMA_SHIFT": ccfg.ema_shift, "EMA_FRAC": ccfg.ema_frac, "MAP_VERSION": ccfg.map_version,
        "FLOW_PKTS_SAT": FLOW_PKTS_SATURATION, "RULE_KEY_FIELDS": len(KEY_FIELDS),
        "VERDICT_ETHERTYPE": ETH_P_VERDICT, "VERDICT_LEN": VERDICT_LEN, **flag_names,
    }
    art = Artifact(
        classes=list(model.classes), constants=constants, len_lo=model.map.len_lo.astype(np.int64),
        flag_ternary=np.asarray(FLAG_TERNARY, np.int64), map=model.map.centroid_of_key.astype(np.int64),
        window_k=k_int, window_p=p_int, global_entries=global_entries, hard=hard, soft_entries=soft_entries,
        soft_weights=w_int, incremental=inc,
        resources={"per_flow_bits": flow, "tables": res_tables,
                   "table_entries": int(sum(t["entries"] * t["copies"] for t in res_tables)),
                   "table_bits": int(sum(t["bits"] * t["copies"] for t in res_tables)),
                   "bounds": {n: int(v) for n, v, _ in acc}},
        provenance={"model": cfg.model_dump(), "compile": ccfg.model_dump(), "fusion": fusion.model_dump(),
                    "beta_used": beta, "scales": {k: float(f"{v:.6g}") for k, v in
                               {"k": scale_k, "u": scale_u, "w": scale_w, "nn": nn_scale}.items()},
                    "rules_file": rules.path, "skipped_hard_rules": skipped, **(provenance or {})},
        rule_names={"hard": [r.name for r in rules.hard], "soft": [r.name for r in rules.soft]},
    )
    return art
