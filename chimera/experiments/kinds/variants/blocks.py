"""The variants kind's book blocks: the ablation and quickstart rows (and the quickstart a VM-boot or Vagrant guest ran)."""

from __future__ import annotations

import pandas as pd

from chimera.errors import ResultsError
from chimera.experiments.kinds.variants.tables import ABLATION
from chimera.report import fmt
from chimera.report.book import CHIMERA, Blocks, Book
from chimera.report.fmt import f, n, signed
from chimera.report.runs import Run, on_dataset, on_target, on_testbed
from chimera.targets.base import Capability
from chimera.targets.registry import TRUTH, by_rank, with_capability

BLOCKS = Blocks()


def _guest_run(run: Run) -> str:
    """The accounting of a quickstart or ablation a guest VM ran: what vm-boot and vagrant-up both report."""
    tab = run.table(ABLATION)
    return (f"{n(int(tab['replayed'].sum()))} frames replayed over its {len(tab)} variants, "
            f"{n(int(tab['lost'].sum()))} lost, "
            f"{n(int(tab['reference_mismatches'].sum()))} verdicts different from the reference.")


@BLOCKS("vm-boot")
def vm_boot(b: Book) -> str:
    """The README's commands in a Debian 12 VM on its own kernel: the eBPF program verified by a second kernel."""
    r = b.runs.latest("vm-boot")
    if r is None:
        return "No VM-boot record is published."
    vm, t, cfg = r.manifest.sections.get("vm", {}), r.manifest.timings_s, r.manifest.config
    qs = next((x for x in r.nested() if x.experiment == "quickstart"), None)
    said = ""
    if qs is not None:
        kernel = qs.manifest.target_detail.get("kernel")
        said = (f" The guest's quickstart ran on `{qs.target}` ({qs.manifest.target_reason or 'asked for'})"
                + (f", its program loaded and verified by the guest's kernel, {kernel}" if kernel else "") + ": "
                + _guest_run(qs))
    return (f"`scripts/vm-boot` ({r.cite()}): Debian {cfg.get('suite')} on its own kernel, "
            f"{vm.get('guest_kernel') or 'unknown'}, booted with qemu ({cfg.get('accel')}"
            + (f", emulated CPU {cfg['tcg_cpu']}" if cfg.get('accel') == "tcg" and cfg.get('tcg_cpu') else "")
            + f", {cfg.get('cpus')} vCPUs; "
            f"this machine runs {r.manifest.environment.get('host_kernel')}); the first command took "
            f"{n(t.get('command_1'))} s (exit {vm.get('exit_1') or '-'})"
            + (f", the second {n(t.get('command_2'))} s (exit {vm.get('exit_2') or '-'})" if t.get('command_2') else
               ", the second was not run") + "." + said)


@BLOCKS("vagrant-up")
def vagrant_up(b: Book) -> str:
    """`vagrant up` with the project's own Vagrantfile (libvirt provider), and the experiment the guest ran."""
    r = b.runs.latest("vagrant-up")
    if r is None:
        return "No `vagrant up` record is published: nobody has run `vagrant up` from this repository yet."
    vg, t, cfg, env = (r.manifest.sections.get("vagrant", {}), r.manifest.timings_s, r.manifest.config,
                       r.manifest.environment)
    exp = cfg.get("experiment", "")
    run = next((x for x in r.nested() if x.experiment == exp), None)
    said = f" The guest's {exp} left no run."
    if run is not None:
        said = (f" The guest's {exp} ran on `{run.target}` ({run.manifest.target_reason or 'asked for'}): "
                + _guest_run(run))
    up = f"took {n(t['up'])} s (exit {vg.get('exit_up') or '-'})" if t.get("up") is not None else "did not finish"
    ran = (f"; `invoke run-experiment --name {exp}` in the guest took {n(t['run'])} s (exit {vg.get('exit_run')})"
           if t.get("run") is not None else "")
    return (f"`scripts/vagrant-up` ({r.cite()}, **{r.manifest.status}**): the project's Vagrantfile with "
            f"Vagrant {env.get('vagrant') or '?'}, vagrant-libvirt {env.get('vagrant_libvirt') or '?'}, libvirt "
            f"{env.get('libvirt') or '?'} and qemu {env.get('qemu') or '?'}; box `{cfg.get('box')}` "
            f"({cfg.get('driver')}, {cfg.get('cpus')} vCPUs, {n(cfg.get('memory_mib'))} MiB), guest kernel "
            f"{vg.get('guest_kernel') or 'unknown'} (this machine runs {env.get('host_kernel')}). "
            f"`vagrant up --provider=libvirt`, boot and provisioning, {up}{ran}." + said)


@BLOCKS("vagrant-up-limit")
def vagrant_up_limit(b: Book) -> str:
    """The README's limits line on the reviewer's VM: what of `vagrant up` has been run here, and what not."""
    r = b.runs.latest("vagrant-up")
    if r is None:
        return "- `vagrant up` has not been run from this repository."
    cfg = r.manifest.config
    return (f"- `vagrant up` has run here only under libvirt on a local Debian 12 box (`{cfg.get('box')}`, "
            f"{cfg.get('driver')}), with the {cfg.get('experiment')} in the guest ({r.cite()}, "
            f"{r.manifest.status}); never with VirtualBox, nor with the Vagrantfile's Ubuntu box, nor with "
            "p4lang's packages, which this machine cannot reach.")


def _ablation(r: Run) -> pd.DataFrame:
    return r.table(ABLATION).set_index("variant")


@BLOCKS("ablation")
def ablation(b: Book) -> str:
    testbeds = with_capability(Capability.TESTBED)  # in registry order: the first with a run leads
    runs = [(c, r) for c in testbeds if (r := b.runs.latest("ablation", on_target(c.name))) is not None]
    if not runs:
        raise ResultsError(f"no published run of ablation on a testbed under {b.runs.base}",
                           "run it and `invoke publish` the run (or `invoke reproduce` for this machine)")
    (lead, r), others = runs[0], runs[1:]
    d = _ablation(r)
    ch = d.loc[CHIMERA]
    sw = d[d["executed_on"].astype(str) == r.target]
    rows = []
    for v, x in d.iterrows():
        on_switch = str(x["executed_on"]) == r.target
        rows.append([str(v), "switch" if on_switch else ("software host †" if bool(x["software_only"]) else
                                                           "reference only"),
                     f(x["macro_f1"]), signed(x["macro_f1"] - ch["macro_f1"]),
                     n(x["bits_per_flow"]) if x["bits_per_flow"] == x["bits_per_flow"] else "—",
                     n(x["table_entries"]) if x["table_entries"] == x["table_entries"] else "—",
                     f(x["latency_switch_p50_us"], 3), f(x["latency_switch_p99_us"], 3),
                     n(x["switch_pps"]) if x["switch_pps"] == x["switch_pps"] else "—",
                     n(x["lost"]) if x["lost"] == x["lost"] else "—",
                     n(x["reference_mismatches"]) if x["reference_mismatches"] == x["reference_mismatches"] else "—"])
    above = [str(v) for v, x in d.iterrows() if x["macro_f1"] > ch["macro_f1"]]
    out = [f"The ablation on the {r.target} testbed, synthetic ciciot profile, {ch['clock']} clock ({r.cite()}): "
           f"Chimera {f(ch['macro_f1'])}; on the {len(sw)} rows that run on the switch, "
           f"{n(sw['lost'].sum())} packets lost and {n(sw['reference_mismatches'].sum())} verdicts and "
           f"{n(sw['register_mismatches'].sum())} registers different from the reference. "
           f"Rows above Chimera: {fmt.words(above)}. Latency is the switch's own (ingress to egress) under the "
           "run's pace, the rate what the switch classified per second; † rows run on the software classifier "
           "host, whose latency includes the detour.", "",
           fmt.table(["row", "runs on", "F1", "Δ Chimera", "bits/flow", "entries", "switch p50 µs", "p99 µs",
                      "pps", "lost", "≠ reference"], rows)]
    out += ["", dagger_rows(b, r, d)]
    notes = [(str(v), str(x["row_note"])) for v, x in d.iterrows() if isinstance(x["row_note"], str) and x["row_note"]]
    if notes:
        out += ["", "What the rows say of themselves (`row_note`):", ""] + [f"- {v}: {t}" for v, t in notes]
    for other, bm in others:
        db = _ablation(bm)
        both = [v for v in d.index if v in db.index and str(d.loc[v, "executed_on"]) == lead.name
                and str(db.loc[v, "executed_on"]) == other.name]
        same = [v for v in both if db.loc[v, "macro_f1"] == d.loc[v, "macro_f1"]]
        sw_b = db[db["executed_on"].astype(str) == other.name]
        dag = [(str(v), f(db.loc[v, "macro_f1"]), f(d.loc[v, "macro_f1"])) for v in db.index
               if bool(db.loc[v, "software_only"]) and v in d.index]
        out += ["", f"The same ablation on {other.title} ({bm.cite()}): of the {len(both)} rows that run on "
                f"{other.program} there and on {lead.program} here, {len(same)} score exactly as on {lead.title}; "
                f"on {other.title}'s switch rows "
                f"{n(sw_b['lost'].sum())} lost, {n(sw_b['reference_mismatches'].sum())} verdicts and "
                f"{n(sw_b['register_mismatches'].sum())} registers different from the reference. The † rows: " +
                fmt.words([f"{v} {x} on {other.title}'s run against {y} on {lead.title}'s" for v, x, y in dag]) +
                (" (that run's software host classified on its own clock)" if not _on_trace(db) else "") + "."]
    return "\n".join(out)


def _on_trace(d: pd.DataFrame) -> bool:
    """The run's † rows were classified on the trace clock: equal to the offline float model on every packet
    (the software host reads the trace-time shim since the fix; before it, on its own clock, they were not)."""
    dag = d[d["software_only"].astype(bool)]
    return "offline_agreement" in d and len(dag) > 0 and bool((dag["offline_agreement"] == 1.0).all())


def dagger_rows(b: Book, r: Run, d: pd.DataFrame) -> str:
    """What the † rows are, and whether they repeat: every other published run of the ablation on the same
    target made from the same result-determining code, row by row."""
    from chimera.report.provenance import fingerprint_at
    dag = d[d["software_only"].astype(bool)]
    if dag.empty:
        return ""
    if _on_trace(d):
        text = ("The † rows ran on the software classifier host on the trace clock: their verdicts equal the "
                "offline float model's on every packet (offline agreement 1).")
    else:
        text = ("The † rows ran on the software classifier host on its own clock (offline agreement " +
                fmt.words([f"{v} {f(x['offline_agreement'])}" for v, x in dag.iterrows()]) +
                "), so they may move between runs.")
    same = [p for p in b.runs.all("ablation", on_target(r.target)) if p.run_id != r.run_id and
            fingerprint_at(p.freshness.commit, b.root, r.scope) == fingerprint_at(r.freshness.commit, b.root, r.scope)]
    if not same:
        return text
    pairs = [(p, _ablation(p)) for p in same]
    diff = [f"{v} {f(dp.loc[v, 'macro_f1'])} in {p.cite()}" for p, dp in pairs for v in dag.index
            if v in dp.index and dp.loc[v, "macro_f1"] != d.loc[v, "macro_f1"]]
    return text + (f" Made again from the same code ({fmt.words([p.cite() for p, _ in pairs])}): " +
                   ("every † row scored the same, bit for bit." if not diff else
                    f"the † rows differ: {fmt.words(diff)}."))


@BLOCKS("coalesced")
def coalesced(b: Book) -> str:
    """The quickstart on the real application set on a testbed beside the reference: every frame sent (the
    coalesced ones cut to the replay snap) and the same F1."""
    where = on_dataset("suricata-zeek-apps")
    tb = b.runs.latest("quickstart", lambda r: where(r) and on_testbed(r))
    ref = b.runs.latest("quickstart", lambda r: where(r) and r.target == TRUTH)
    if tb is None or ref is None:
        return "No quickstart on the real application set is published on both a testbed and the reference."
    t, rf = tb.table(ABLATION).set_index("variant"), ref.table(ABLATION).set_index("variant")
    same = [v for v in t.index if v in rf.index and t.at[v, "macro_f1"] == rf.at[v, "macro_f1"]]
    return (f"On the real application set (suricata-zeek-apps, small; {tb.target}, {tb.cite()}): "
            f"{n(int(t['replayed'].iloc[0]))} frames replayed per variant, {n(int(t['cut_frames'].iloc[0]))} of them "
            f"longer than the replay snap and sent cut, {n(int(t['not_sent'].sum()))} not sent, "
            f"{n(int(t['lost'].sum()))} lost, {n(int(t['reference_mismatches'].sum()))} verdicts different from the "
            f"reference. Macro-F1 " + fmt.words([f"{v} {f(t.at[v, 'macro_f1'], 4)}" for v in t.index]) +
            f"; on the reference target ({ref.cite()}) " + fmt.words([f"{v} {f(rf.at[v, 'macro_f1'], 4)}"
                                                                       for v in rf.index]) +
            f": {'equal, variant for variant' if len(same) == len(t.index) else 'NOT equal'}.")


@BLOCKS("bmv2-quickstart")
def bmv2_quickstart(b: Book) -> str:
    night, m = b.night()
    card = by_rank(Capability.TESTBED)[0]     # the card's switch: the testbed --target auto prefers
    q = m.experiments.get(f"quickstart@{card.name}")
    if q is None or q.error or q.run is None:
        return f"The latest published night ({night.cite()}) did not run the quickstart on {card.title}."
    sub = next((x for x in night.nested() if x.rel.endswith(q.run.split("runs/", 1)[-1])), None)
    tab = sub.table(ABLATION) if sub is not None else None
    got = (f"{n(tab['verdicts'].iloc[0])}/{n(tab['replayed'].iloc[0])} packets per variant classified, "
           if tab is not None and "verdicts" in tab else "")
    return (f"`invoke run-experiment --name quickstart --target {card.name}` in the latest published night "
            f"({night.cite(q.run)}): {got}{n(sum(v or 0 for v in (q.lost or {}).values()))} lost, "
            f"{n(sum(v or 0 for v in (q.reference_mismatches or {}).values()))} verdicts and "
            f"{n(sum(v or 0 for v in (q.register_mismatches or {}).values()))} registers different from the reference.")
