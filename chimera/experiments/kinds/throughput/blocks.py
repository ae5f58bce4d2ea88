"""The throughput kind's book blocks: throughput and latency."""

from __future__ import annotations

from chimera.experiments.kinds.latency.tables import LATENCY_COST, LATENCY_SUMMARY
from chimera.experiments.kinds.throughput.tables import THROUGHPUT
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, n

BLOCKS = Blocks()


#: a path keeps up with its offered load when it classifies at least this share of it
SUSTAINED = 0.9


@BLOCKS("throughput-latency")
def throughput_latency(b: Book) -> str:
    t = b.runs.need("throughput")
    d = t.table(THROUGHPUT)
    sw = d[d["path"].str.startswith("Chimera")]
    bare = d[d["path"] == "bare forwarding"]
    host = d[d["path"].str.contains("software")]
    lat = b.runs.need("latency")
    ls = lat.table(LATENCY_SUMMARY)
    cost = lat.table(LATENCY_COST)
    med = ls.groupby(["program", "load", "pps"], sort=False)[["switch_p50_us", "switch_p99_us", "host_p50_us"]] \
        .median().reset_index()
    sws, hs = med[med["program"] == "chimera"], med[med["program"] == "software host"]
    reps = int(ls["repeat"].nunique())
    out = (f"On the {t.target} testbed under the switch clock ({t.cite()}, {lat.cite()}): at top speed the Chimera "
           f"path delivers {n(sw['delivered_pps'].min())} to {n(sw['delivered_pps'].max())} pps against "
           f"{n(bare['delivered_pps'].min())} to {n(bare['delivered_pps'].max())} pps for bare forwarding on the same "
           f"path (the sender shares the cores, so neither is the switch's limit), with {n(sw['lost'].sum())} "
           f"packets lost and {n(sw['reference_mismatches'].sum())} verdicts different from the reference; the "
           f"software classifier host † delivers {n(host['delivered_pps'].min())} to {n(host['delivered_pps'].max())}"
           f" pps. Over {reps} interleaved repeats (medians), in-switch latency p50 ")
    out += fmt.words([f"{f(x['switch_p50_us'])} µs at {n(x['pps'])} pps (p99 {f(x['switch_p99_us'])})"
                      for _, x in sws.iterrows()])
    out += ("; host to host " + fmt.words([f"{f(x['host_p50_us'])} µs" for _, x in sws.iterrows()]) +
            ". The software classifier host † takes " +
            fmt.words([f"{f(x['switch_p50_us'])} µs p50 at {n(x['pps'])} pps" for _, x in hs.iterrows()]) +
            " to classify (its own time per packet, which the ledger's \"far slower\" reads).")
    over = ls[(ls["program"] == "software host") & (ls["switch_pps"] < SUSTAINED * ls["pps"])]
    if len(over):
        g = over.groupby("pps")
        out += (" Where it cannot keep up, its host-to-host latency is a queue's, not a classifier's: " +
                fmt.words([f"offered {n(pps)} pps, it classifies {n(x['switch_pps'].median())} pps (median of "
                           f"{len(x)} repeats) and its host-to-host p50 is {f(x['host_p50_us'].median() / 1e3, 0)} ms"
                           for pps, x in g]) + ".")
    added = cost[(cost["a"] == "chimera") & (cost["measure"] == "host_p50_us") & (cost["statistic"] == "difference")]
    if len(added):
        out += (" What the pipeline adds to the host-to-host p50 (mean of per-repeat differences, 95% bootstrap "
                "interval over repeats): " + fmt.words([
                    f"{f(x['estimate'], 3)} µs [{f(x['lo'], 3)}, {f(x['hi'], 3)}] over {x['b']} at {n(x['pps'])} pps"
                    for _, x in added.iterrows()]) + ".")
    return out
