"""Stage 7, outputs: tidy CSVs, figures, manifest fields and report.md of a run."""

from __future__ import annotations

import pandas as pd

from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.metrics import VariantResult
from chimera.metrics import classification as cm
from chimera.report import figures
from chimera.report.markdown import write_report

METRIC_COLUMNS = ("macro_f1", "macro_precision", "macro_recall", "accuracy", "bits_per_flow", "table_entries",
                  "table_kbits", "float_int_agreement")


def write_outputs(ctx: RunContext, results: list[VariantResult]) -> None:
    run = ctx.run.path
    ablation = pd.DataFrame([r.row for r in results])
    ablation.to_csv(run / "ablation.csv", index=False)
    ablation.melt(id_vars=["variant"], value_vars=[c for c in METRIC_COLUMNS if c in ablation],
                  var_name="metric").to_csv(run / "metrics.csv", index=False)
    pcs = pd.concat([r.per_class for r in results], ignore_index=True)
    pcs.to_csv(run / "per_class.csv", index=False)
    pd.concat([r.confusion.assign(variant=r.row["variant"]) for r in results]).to_csv(run / "confusion.csv",
                                                                                       index=False)
    packets = next((r.packets for r in results if r.packets is not None), None)
    if packets is not None:
        packets.to_csv(run / "packets.csv.gz", index=False)
        cm.flow_level(packets["flow"].to_numpy(), packets["label"].to_numpy(),
                      packets["pred"].to_numpy()).to_csv(run / "flows.csv", index=False)
    main = results[0]
    figs = figures.ablation(ablation, run / "figures") if len(ablation) > 1 else []
    figs += figures.confusion(main.confusion, run / "figures", f"{main.row['variant']} (test packets)")
    figs += figures.per_class(pcs, run / "figures")
    ctx.run.manifest.update({"timings_s": ctx.timings, "variants": [v.model_dump(mode="json") for v in ctx.variants],
                             "figures": [str(p.relative_to(run)) for p in figs]})
    assert ctx.data is not None
    write_report(run / "report.md", ctx.cfg, ctx.data.ds, ablation, pcs, ctx.target, ctx.run.manifest,
                 ctx.data.test_flows_per_class())
