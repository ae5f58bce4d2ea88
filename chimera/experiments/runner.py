"""Run an experiment: dataset -> (per variant) train -> rules -> compile -> target -> metrics -> report.

Phases log one line each; everything lands in a RunDir that becomes visible
only when complete. Software-only variants (exact softmax, dense attention)
are evaluated by the float software classifier and marked † everywhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from tqdm import tqdm

from chimera.compile.build import compile_model
from chimera.compile.header import write_header
from chimera.data.adapters import normalize
from chimera.data.dataset import MANIFEST, Dataset, load_dataset
from chimera.data.pcap import PacketTable
from chimera.data.synthetic import SyntheticSpec, generate
from chimera.data.tokens import Tokens, dataplane_eligible, tokenize
from chimera.errors import ConfigError, DatasetError
from chimera.experiments.config import DatasetSpec, ExperimentConfig, ResolvedVariant, resolve_variants
from chimera.metrics import classification as cm
from chimera.model.config import ModelConfig
from chimera.model.tokenizer import MapTables, fit_map
from chimera.model.train import Contexts, TrainedModel, build_contexts, train
from chimera.report import figures
from chimera.report.markdown import write_report
from chimera.results.layout import RunDir, environment, git_state
from chimera.rules.spec import Rules, first_match, load_rules, rule_keys, soft_fires
from chimera.rules.weights import learn_soft_weights
from chimera.targets import ReferenceTarget, Target, select_target
from chimera.testbed.classifier import export_model

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
TOKEN_FIELDS = ("ip_len", "iat_bucket", "direction", "tcp_flags", "proto")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def resolve_dataset(spec: DatasetSpec, data_root: Path) -> Dataset:
    """Generate (cached) or load/normalize the dataset an experiment names."""
    if spec.synthetic is not None:
        s = spec.synthetic
        key = hashlib.sha256(json.dumps(s.model_dump(), sort_keys=True).encode()).hexdigest()[:10]
        out = data_root / "synthetic" / f"{s.profile}-{s.flows}-s{s.seed}-{key}"
        if not (out / MANIFEST).exists():
            generate(SyntheticSpec(**s.model_dump()), out, overwrite=out.exists())
        return load_dataset(out)
    path = Path(spec.path).expanduser()  # type: ignore[arg-type]
    if not path.exists():
        raise DatasetError(f"dataset path {path} does not exist",
                           "pass a normalized dataset or a raw dataset directory to --dataset")
    if (path / MANIFEST).exists():
        return load_dataset(path)
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    out = data_root / "normalized" / f"{spec.adapter}-{path.name}-{key}"
    if not (out / MANIFEST).exists():
        log.info("normalizing raw dataset %s with the %s adapter -> %s", path, spec.adapter, out)
        normalize(spec.adapter, path, out, overwrite=out.exists())
    return load_dataset(out)


@dataclass
class Prepared:
    ds: Dataset
    tokens: Tokens
    train_rows: np.ndarray
    val_rows: np.ndarray
    test_rows: np.ndarray      # eligible, labelled test packets (rows of ds.table)
    replay_rows: np.ndarray    # everything the switch sees: test-split packets and packets of no flow
    rule_keys: np.ndarray      # [N, 7] offline rule keys for every packet

    def y(self, rows: np.ndarray) -> np.ndarray:
        return self.ds.labels[rows].astype(np.int64)


def prepare(ds: Dataset, seed: int) -> Prepared:
    classes = ds.classes
    if len(classes) < 2:
        raise DatasetError(f"dataset {ds.root} has one class ({classes}); a classifier needs two or more",
                           "use a dataset with at least two labelled classes")
    split = ds.packet_split(seed)
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
    f = ds.flows
    keys = rule_keys(ds.table.proto, ds.table.tcp_flags, f.direction, f.pkt_index + 1, ds.table.sport,
                     ds.table.dport, ds.table.ip_len)
    replay = np.flatnonzero((split == 2) | (f.flow_id < 0))
    return Prepared(ds, tokenize(ds.table, ds.flows), rows[0], rows[1], rows[2], replay, keys)


@dataclass
class Cache:
    maps: dict[tuple[int, int], MapTables] = field(default_factory=dict)
    models: dict[str, TrainedModel] = field(default_factory=dict)
    contexts: dict[tuple[str, str], Contexts] = field(default_factory=dict)


def _sub(tok: Tokens, rows: np.ndarray) -> Tokens:
    return Tokens(*(getattr(tok, f)[rows] for f in TOKEN_FIELDS))


def _ctx(pp: Prepared, cache: Cache, mp: MapTables, cfg: ModelConfig, which: str, rows: np.ndarray) -> Contexts:
    key = (cfg.model_dump_json(include={"centroids", "window", "keys"}), which)
    if key not in cache.contexts:
        cache.contexts[key] = build_contexts(pp.tokens, pp.ds.flows, mp, cfg, rows)
    return cache.contexts[key]


def get_model(pp: Prepared, cfg: ModelConfig, seed: int, cache: Cache) -> tuple[TrainedModel, Contexts, Contexts]:
    mk = (cfg.centroids, seed)
    if mk not in cache.maps:
        cache.maps[mk] = fit_map(_sub(pp.tokens, pp.train_rows), cfg.centroids, seed)
    mp = cache.maps[mk]
    ctr = _ctx(pp, cache, mp, cfg, "train", pp.train_rows)
    cva = _ctx(pp, cache, mp, cfg, "val", pp.val_rows)
    cte = _ctx(pp, cache, mp, cfg, "test", pp.test_rows)
    k = cfg.model_dump_json(exclude={"aggregation"})  # batch and incremental share the float model
    if k not in cache.models:
        cache.models[k] = train(cfg, pp.ds.classes, mp, ctr, pp.y(pp.train_rows), cva, pp.y(pp.val_rows), seed)
    m = cache.models[k]
    if m.config != cfg:
        m = dataclasses.replace(m, config=cfg)
    return m, cva, cte


def _fires(rules: Rules, keys: np.ndarray) -> np.ndarray:
    t = rules.soft_table()
    return soft_fires(keys, t[:, :7], t[:, 7:14], t[:, 14], len(rules.soft))


def _hard(rules: Rules, classes: list[str], keys: np.ndarray) -> np.ndarray:
    """Label forced by the first matching hard rule, -1 if none (float-side mirror of the table)."""
    entries, _ = rules.hard_entries(classes)
    if not entries:
        return np.full(keys.shape[0], -1, np.int64)
    v = np.array([e.value for e, _, _ in entries])
    m = np.array([e.mask for e, _, _ in entries])
    lab = np.array([y for _, _, y in entries])
    idx = first_match(keys, v, m)
    return np.where(idx >= 0, lab[np.maximum(idx, 0)], -1)


def float_fused(model: TrainedModel, ctx: Contexts, fires: np.ndarray, W: np.ndarray, hard: np.ndarray,
                v: ResolvedVariant, beta: float) -> np.ndarray:
    """Software classifier prediction: alpha*s_nn + beta*s_sym, hard veto when lambda_h."""
    a, b = v.fusion.coefficients(beta)
    fused = a * model.scores(ctx) + b * (fires.astype(np.float64) @ W)
    pred = np.argmax(fused, axis=1)
    if v.fusion.lambda_h:
        pred = np.where(hard >= 0, hard, pred)
    return pred


def run_experiment(cfg: ExperimentConfig, *, target: str | None = None, results_root: str | Path = "results",
                   data_root: str | Path = "data", experiment_file: str = "") -> Path:
    """Run every variant of ``cfg`` on ``target``; returns the finished run directory."""
    tgt: Target = select_target(target or cfg.target, cfg)
    variants = resolve_variants(cfg, experiment_file or cfg.name)
    rules = load_rules(ROOT / cfg.rules if not Path(cfg.rules).is_absolute() else cfg.rules)
    timings: dict[str, float] = {}
    with RunDir(results_root, cfg.name, tgt.name) as run:
        run.manifest.update({"config": json.loads(cfg.model_dump_json()), "seed": cfg.seed,
                             "git": git_state(ROOT), "environment": environment(), "target_detail": tgt.describe()})
        (run.path / "config.yaml").write_text(yaml.safe_dump(json.loads(cfg.model_dump_json()), sort_keys=False))
        t0 = time.perf_counter()
        log.info("[1/5 dataset] %s", cfg.dataset.model_dump(exclude_none=True))
        ds = resolve_dataset(cfg.dataset, Path(data_root))
        pp = prepare(ds, cfg.seed)
        timings["dataset"] = time.perf_counter() - t0
        run.manifest["dataset"] = {k: ds.manifest.get(k) for k in ("name", "source", "seed", "classes", "packets",
                                                                   "status", "packets_sha256", "generator",
                                                                   "skipped_files")}
        run.manifest["dataset"].update({"path": str(ds.root), "flows": ds.flows.n_flows,
                                        "split_packets": {"train": int(pp.train_rows.size),
                                                          "val": int(pp.val_rows.size),
                                                          "test": int(pp.test_rows.size),
                                                          "replayed": int(pp.replay_rows.size)}})
        log.info("[1/5 dataset] %s: %d packets, %d flows, %d classes; test split %d packets (%d replayed)",
                 ds.manifest["name"], len(ds.table), ds.flows.n_flows, len(ds.classes), pp.test_rows.size,
                 pp.replay_rows.size)
        t0 = time.perf_counter()
        W = learn_soft_weights(_fires(rules, pp.rule_keys[pp.train_rows]), pp.y(pp.train_rows), len(ds.classes),
                               seed=cfg.seed)
        fires = {k: _fires(rules, pp.rule_keys[r]) for k, r in (("val", pp.val_rows), ("test", pp.test_rows))}
        hard = {k: _hard(rules, ds.classes, pp.rule_keys[r]) for k, r in (("val", pp.val_rows), ("test", pp.test_rows))}
        timings["rules"] = time.perf_counter() - t0
        log.info("[2/5 rules] %s: %d hard, %d soft rules; soft weights learned (hinge-loss MRF)", rules.path,
                 len(rules.hard), len(rules.soft))
        replay_table = ds.table.take(pp.replay_rows)
        pos_in_replay = np.searchsorted(pp.replay_rows, pp.test_rows)
        cache = Cache()
        try:
            rows, per_class, confusions, packets = _run_variants(cfg, tgt, variants, pp, rules, W, fires, hard,
                                                                 replay_table, pos_in_replay, cache, run, timings)
        finally:
            tgt.close()
        _write_outputs(cfg, tgt, variants, ds, pp, rows, per_class, confusions, packets, run, timings)
    return run.final


def _run_variants(cfg, tgt, variants, pp, rules, W, fires, hard, replay_table, pos_in_replay, cache, run,
                  timings):  # type: ignore[no-untyped-def]
    """Train/compile/run each variant; returns the per-variant rows and tables."""
    ds = pp.ds
    rows: list[dict[str, Any]] = []
    per_class: list[pd.DataFrame] = []
    confusions: dict[str, pd.DataFrame] = {}
    packets: pd.DataFrame | None = None
    y_test = pp.y(pp.test_rows)
    for v in tqdm(variants, desc=f"{cfg.name} variants", unit="variant"):
        t0 = time.perf_counter()
        log.info("[3/5 train] %s", v.name)
        model, cva, cte = get_model(pp, v.model, cfg.seed, cache)
        beta = v.fusion.beta
        if v.fusion.tune_beta and v.fusion.mode in ("cascade", "soft"):
            f1s = {b: cm.summary(pp.y(pp.val_rows), float_fused(model, cva, fires["val"], W, hard["val"], v, b),
                                 ds.classes)["macro_f1"] for b in v.fusion.beta_grid}
            beta = max(f1s, key=lambda b: (f1s[b], -b))
        float_pred = float_fused(model, cte, fires["test"], W, hard["test"], v, beta)
        timings[f"train:{v.name}"] = time.perf_counter() - t0
        row: dict[str, Any] = {"group": v.group, "variant": v.name, "software_only": v.software_only,
                               "attention": v.model.attention, "keys": v.model.keys,
                               "aggregation": v.model.aggregation, "fusion": v.fusion.mode, "beta": beta,
                               "val_f1_nn": model.val_f1}
        if v.software_only and hasattr(tgt, "run_software"):
            # † on a testbed: the software classifier host classifies, through the network
            slug = _slug(v.name)
            mj = export_model(model, rules, W, v.fusion, beta, run.path / "artifacts" / f"{slug}.software.json")
            t0 = time.perf_counter()
            res = tgt.run_software(mj, replay_table, run.path, slug)
            timings[f"target:{v.name}"] = time.perf_counter() - t0
            pred = res.verdicts.label[pos_in_replay].astype(np.int64)
            row.update({"executed_on": f"software classifier host sc (float), {tgt.name} testbed",
                        "bits_per_flow": np.nan, "table_entries": np.nan, "table_kbits": np.nan,
                        "float_int_agreement": np.nan, "offline_agreement": float(np.mean(pred == float_pred)),
                        **{k: x for k, x in res.extra.items() if not isinstance(x, dict)}})
        elif v.software_only:
            pred = float_pred
            row.update({"executed_on": "software classifier (float, offline)", "bits_per_flow": np.nan,
                        "table_entries": np.nan, "table_kbits": np.nan, "float_int_agreement": np.nan})
        else:
            t0 = time.perf_counter()
            art = compile_model(model, rules, W, v.compile, v.fusion, beta,
                                provenance={"dataset_sha256": ds.manifest.get("packets_sha256"),
                                            "variant": v.name})
            slug = _slug(v.name)
            sha = art.save(run.path / "artifacts" / f"{slug}.json")
            write_header(art, run.path / "artifacts" / f"{slug}.h")
            log.info("[4/5 compile] %s: %d bits/flow, %d table entries, artifact %s", v.name,
                     art.resources["per_flow_bits"]["total"], art.resources["table_entries"], sha[:12])
            timings[f"compile:{v.name}"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            runner_tgt = tgt
            why = getattr(tgt, "unsupported", lambda a: None)(art)
            if why:
                log.warning("[4/5 target] %s: %s; evaluated on the reference target instead", v.name, why)
                runner_tgt = ReferenceTarget()
            res = runner_tgt.run(art, replay_table, run.path, slug)
            timings[f"target:{v.name}"] = time.perf_counter() - t0
            verd = res.verdicts
            pred = verd.label[pos_in_replay].astype(np.int64)
            flags = verd.flags[pos_in_replay]
            row.update({"executed_on": runner_tgt.name + (f" ({why})" if why else ""), "bits_per_flow": art.resources["per_flow_bits"]["total"],
                        "table_entries": art.resources["table_entries"],
                        "table_kbits": art.resources["table_bits"] / 1000,
                        "float_int_agreement": float(np.mean(pred == float_pred)),
                        "hard_vetoes": int(np.sum(flags & 0x01 > 0)), "evictions": res.evictions,
                        "unparsed": int(np.sum(verd.flags & 0x02 > 0)), "artifact_sha256": sha,
                        **{k: x for k, x in res.extra.items() if not isinstance(x, dict)}})
            if packets is None:
                packets = pd.DataFrame({"row": pp.test_rows, "flow": ds.flows.flow_id[pp.test_rows],
                                        "label": y_test, "pred": pred, "flags": flags,
                                        "score": verd.score[pos_in_replay],
                                        "centroid": verd.centroid[pos_in_replay]})
        s = cm.summary(y_test, pred, ds.classes)
        row.update(s)
        rows.append(row)
        pc = cm.per_class(y_test, pred, ds.classes)
        pc.insert(0, "variant", v.name)
        per_class.append(pc)
        confusions[v.name] = cm.confusion(y_test, pred, ds.classes)
        log.info("[5/5 metrics] %s%s: macro-F1 %.4f (P %.4f, R %.4f)", v.name, " †" if v.software_only else "",
                 s["macro_f1"], s["macro_precision"], s["macro_recall"])
    return rows, per_class, confusions, packets


def _write_outputs(cfg, tgt, variants, ds, pp, rows, per_class, confusions, packets, run, timings):  # type: ignore[no-untyped-def]
    """Tidy CSVs, figures, manifest fields and the report."""
    ablation = pd.DataFrame(rows)
    ablation.to_csv(run.path / "ablation.csv", index=False)
    metric_cols = ["macro_f1", "macro_precision", "macro_recall", "accuracy", "bits_per_flow", "table_entries",
                   "table_kbits", "float_int_agreement"]
    ablation.melt(id_vars=["variant"], value_vars=[c for c in metric_cols if c in ablation],
                  var_name="metric").to_csv(run.path / "metrics.csv", index=False)
    pcs = pd.concat(per_class, ignore_index=True)
    pcs.to_csv(run.path / "per_class.csv", index=False)
    main = variants[0].name
    pd.concat([c.assign(variant=k) for k, c in confusions.items()]).to_csv(run.path / "confusion.csv", index=False)
    if packets is not None:
        packets.to_csv(run.path / "packets.csv.gz", index=False)
        cm.flow_level(packets["flow"].to_numpy(), packets["label"].to_numpy(),
                      packets["pred"].to_numpy()).to_csv(run.path / "flows.csv", index=False)
    figs = figures.ablation(ablation, run.path / "figures") if len(ablation) > 1 else []
    figs += figures.confusion(confusions[main], run.path / "figures", f"{main} (test packets)")
    figs += figures.per_class(pcs, run.path / "figures")
    run.manifest.update({"timings_s": timings, "variants": [v.model_dump(mode="json") for v in variants],
                         "figures": [str(p.relative_to(run.path)) for p in figs]})
    write_report(run.path / "report.md", cfg, ds, pp, ablation, pcs, tgt, run.manifest)
