"""One column of the kernel x program matrix (issue 58 item 2): does the running kernel's verifier accept every
program an experiment's variants compile to, and how close does each come to the verifier's limit?

``invoke bench --what verifier [--experiment ablation]`` trains each variant of the experiment for one epoch
(a program's shape, and so the verifier's work, depends on the compiled constants: window, dimensions, centroids,
rules, classes; never on the trained weights, which live in maps), compiles it as a run does, builds the eBPF
object and loads it into this kernel (chimera.targets.ebpf.verifier). A variant with no switch tables (†) or
one the eBPF dataplane does not take is listed with its reason. Run it on each kernel to check (the host, and
Debian 12's 6.1 and Debian 13's 6.12 in a VM as ``scripts/vm-boot`` builds one); the book's matrix has one column
per kernel that published a run.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel
from tqdm import tqdm

from chimera.bench.results import BenchResult, bench_run
from chimera.errors import ConfigError

log = logging.getLogger(__name__)

#: the experiment whose programs the matrix checks by default (issue 58: every ablation program)
EXPERIMENT = "ablation"


class VerifierRow(BaseModel):
    """One variant on this kernel (``loaded`` None: no eBPF program to load, ``why``)."""

    variant: str
    loaded: bool | None = None
    insns: int = 0
    verified_insns: int = 0
    limit: int = 0
    jited_bytes: int = 0
    why: str = ""


class VerifierResult(BenchResult):
    experiment: str
    kernel: str
    clang: str
    rows: list[VerifierRow]
    seconds: float = 0.0

    @property
    def refused(self) -> list[str]:
        return [r.variant for r in self.rows if r.loaded is False]


def main(results_root: str | Path = "results", experiment: str = EXPERIMENT,
         data_root: Path = Path("data")) -> VerifierResult:
    import platform

    from chimera.experiments.config import resolve_variants
    from chimera.experiments.load import load_experiment
    from chimera.experiments.stages.compile import compile_variant
    from chimera.experiments.stages.dataset import prepare, resolve_dataset
    from chimera.experiments.stages.rules import load_and_learn
    from chimera.experiments.stages.train import ModelCache, train_variant
    from chimera.targets.ebpf import EbpfTarget
    from chimera.targets.ebpf.build import _clang_path, _clang_version, build_object
    from chimera.targets.ebpf.verifier import COMPLEXITY_LIMIT, load_report

    t0 = time.perf_counter()
    cfg = load_experiment(experiment, {"model": {"epochs": 1}})
    variants = resolve_variants(cfg, experiment)
    if not variants:
        raise ConfigError(f"experiment {experiment} has no variants", "name an experiment with variants")
    with bench_run("verifier", {"experiment": experiment, "epochs": 1}, results_root) as run:
        data = prepare(resolve_dataset(cfg.the_dataset(), data_root), cfg.seed)
        rules = load_and_learn(cfg.rules, data, cfg.seed, cfg.rule_precision_floor)
        rows = []
        with tempfile.TemporaryDirectory(prefix="chimera-verifier-") as tmp:
            for i, v in enumerate(tqdm(variants, desc="verifier", unit="variant")):
                if v.software_only:
                    rows.append(VerifierRow(variant=v.name, why="no switch tables (software classifier only)"))
                    continue
                art = compile_variant(data, rules, v, train_variant(data, rules, v, cfg.seed, ModelCache()))
                why = EbpfTarget().unsupported(art)
                if why:
                    rows.append(VerifierRow(variant=v.name, why=why))
                    continue
                rep = load_report(build_object(art, Path(tmp) / f"v{i}"))
                rows.append(VerifierRow(variant=v.name, limit=COMPLEXITY_LIMIT,
                                        **{k: x for k, x in dataclasses.asdict(rep).items() if k != "error"},
                                        why=rep.error))
                log.info("verifier: %s: %s, %d insns, the verifier processed %d (%.1f%% of its limit)", v.name,
                         "loaded" if rep.loaded else "REFUSED", rep.insns, rep.verified_insns,
                         100 * rep.share_of_limit)
        res = VerifierResult(experiment=experiment, kernel=platform.release(),
                             clang=_clang_version(_clang_path()).splitlines()[0], rows=rows,
                             seconds=time.perf_counter() - t0)
        run.manifest.put("result", res)
        lines = [f"# The verifier on kernel {res.kernel}: the {experiment} experiment's programs", "",
                 f"clang: {res.clang}. Each variant trained for one epoch and compiled as a run does; the object "
                 "loaded into this kernel and unloaded.", "",
                 "| variant | loaded | instructions | verifier processed | of its limit | why |",
                 "| --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| {r.variant} | {'—' if r.loaded is None else 'yes' if r.loaded else 'REFUSED'} | "
                         f"{r.insns or '—'} | {r.verified_insns or '—'} | "
                         f"{f'{r.verified_insns / r.limit:.1%}' if r.limit and r.verified_insns else '—'} | "
                         f"{r.why.splitlines()[0] if r.why else ''} |")
        (run.path / "summary.md").write_text("\n".join(lines) + "\n")
    if res.refused:
        log.error("verifier: kernel %s refused %s (%s)", res.kernel, ", ".join(res.refused), run.final)
    return res
