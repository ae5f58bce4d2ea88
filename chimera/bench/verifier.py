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
import hashlib
import json
import logging
import re
import shutil
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


def kernel_label(kernel: str) -> str:
    """A run's label for its kernel (``k6.1.0-56-amd64``): one published column per kernel."""
    return "k" + re.sub(r"[^A-Za-z0-9.-]", "-", kernel)


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


@dataclasses.dataclass(frozen=True)
class Program:
    """One variant's program: its object (None: no eBPF program, ``why``)."""

    variant: str
    obj: Path | None
    why: str = ""


def programs(experiment: str, data_root: Path, out: Path) -> tuple[list[Program], str]:
    """Each variant of ``experiment`` trained for one epoch, compiled and built into ``out``; and the clang used."""
    from chimera.experiments.config import resolve_variants
    from chimera.experiments.load import load_experiment
    from chimera.experiments.stages.compile import compile_variant
    from chimera.experiments.stages.dataset import prepare, resolve_dataset
    from chimera.experiments.stages.rules import load_and_learn
    from chimera.experiments.stages.train import ModelCache, train_variant
    from chimera.targets.ebpf import EbpfTarget
    from chimera.targets.ebpf.build import _clang_path, _clang_version, build_object

    cfg = load_experiment(experiment, {"model": {"epochs": 1}})
    variants = resolve_variants(cfg, experiment)
    if not variants:
        raise ConfigError(f"experiment {experiment} has no variants", "name an experiment with variants")
    data = prepare(resolve_dataset(cfg.the_dataset(), data_root), cfg.seed)
    rules = load_and_learn(cfg.rules, data, cfg.seed, cfg.rule_precision_floor)
    out_list = []
    for i, v in enumerate(tqdm(variants, desc="verifier: build", unit="variant")):
        if v.software_only:
            out_list.append(Program(v.name, None, "no switch tables (software classifier only)"))
            continue
        art = compile_variant(data, rules, v, train_variant(data, rules, v, cfg.seed, ModelCache()))
        why = EbpfTarget().unsupported(art)
        out_list.append(Program(v.name, None, why) if why else
                        Program(v.name, build_object(art, out / f"v{i}")))
    return out_list, _clang_version(_clang_path()).splitlines()[0]


def _summary(res: VerifierResult, where: str) -> str:
    lines = [f"# The verifier on kernel {res.kernel}: the {res.experiment} experiment's programs", "",
             f"{res.clang}. Each variant trained for one epoch and compiled as a run does; the object loaded into "
             f"{where} and unloaded.", "",
             "| variant | loaded | instructions | verifier processed | of its limit | why |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in res.rows:
        lines.append(f"| {r.variant} | {'—' if r.loaded is None else 'yes' if r.loaded else 'REFUSED'} | "
                     f"{r.insns or '—'} | {r.verified_insns or '—'} | "
                     f"{f'{r.verified_insns / r.limit:.1%}' if r.limit and r.verified_insns else '—'} | "
                     f"{r.why.splitlines()[0] if r.why else ''} |")
    return "\n".join(lines) + "\n"


def main(results_root: str | Path = "results", experiment: str = EXPERIMENT, data_root: Path = Path("data"),
         export: Path | None = None, guest: Path | None = None) -> VerifierResult | None:
    """Load every program here (the default); or ``export``: write the objects and their index to a folder for a
    guest to load (``scripts/vm-boot --only verifier``), no record; or ``guest``: the record of what a guest's
    kernel said of them (the folder the guest wrote: ``kernel``, ``index.json``, the probe's answer per object)."""
    import platform

    from chimera.targets.ebpf.verifier import COMPLEXITY_LIMIT, load_report

    if guest is not None:
        return _from_guest(Path(guest), results_root)
    t0 = time.perf_counter()
    if export is not None:
        out = Path(export)
        out.mkdir(parents=True, exist_ok=True)
        progs, clang = programs(experiment, data_root, out / "build")
        index: list[dict[str, str]] = []
        names: dict[str, str] = {}
        for pr in progs:
            name = ""
            if pr.obj is not None:   # variants whose programs are byte for byte one object share its file
                name = names.setdefault(hashlib.sha256(pr.obj.read_bytes()).hexdigest(), f"p{len(names)}.o")
                shutil.copyfile(pr.obj, out / name)
            index.append({"variant": pr.variant, "object": name, "why": pr.why})
        (out / "index.json").write_text(json.dumps({"experiment": experiment, "clang": clang, "programs": index},
                                                   indent=1))
        shutil.rmtree(out / "build", ignore_errors=True)
        log.info("verifier: %d objects and their index in %s", sum(bool(x["object"]) for x in index), out)
        return None
    with bench_run("verifier", {"experiment": experiment, "epochs": 1}, results_root,
                   kernel_label(platform.release())) as run:
        rows = []
        with tempfile.TemporaryDirectory(prefix="chimera-verifier-") as tmp:
            progs, clang = programs(experiment, data_root, Path(tmp))
            for pr in progs:
                if pr.obj is None:
                    rows.append(VerifierRow(variant=pr.variant, why=pr.why))
                    continue
                rep = load_report(pr.obj)
                rows.append(VerifierRow(variant=pr.variant, loaded=rep.loaded, insns=rep.insns,
                                        verified_insns=rep.verified_insns, limit=COMPLEXITY_LIMIT,
                                        jited_bytes=rep.jited_bytes, why=rep.error))
                log.info("verifier: %s: %s, %d insns, the verifier processed %d (%.1f%% of its limit)", pr.variant,
                         "loaded" if rep.loaded else "REFUSED", rep.insns, rep.verified_insns,
                         100 * rep.share_of_limit)
        res = VerifierResult(experiment=experiment, kernel=platform.release(), clang=clang, rows=rows,
                             seconds=time.perf_counter() - t0)
        run.manifest.put("result", res)
        (run.path / "summary.md").write_text(_summary(res, "this kernel"))
    if res.refused:
        log.error("verifier: kernel %s refused %s (%s)", res.kernel, ", ".join(res.refused), run.final)
    return res


def _from_guest(folder: Path, results_root: str | Path) -> VerifierResult:
    """The record of a guest's loads: ``kernel`` (its uname -r), ``index.json`` (the export's), and per object
    ``<object>.json`` (scripts/verifier-probe's JSON lines, one per program) and ``<object>.log`` (its stderr: the
    verifier's last lines where the kernel refused the object)."""
    from chimera.targets.ebpf.verifier import COMPLEXITY_LIMIT, PROGRAM
    try:
        kernel = (folder / "kernel").read_text().strip()
        index = json.loads((folder / "index.json").read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{folder}: not a guest's verifier folder ({e})",
                          "give the folder scripts/vm-boot --only verifier wrote (kernel, index.json, *.json)") from None
    rows = []
    for p in index["programs"]:
        if not p["object"]:
            rows.append(VerifierRow(variant=p["variant"], why=p["why"]))
            continue
        stem = p["object"].removesuffix(".o")
        answer = folder / f"{stem}.json"
        shown = [json.loads(x) for x in answer.read_text().splitlines() if x.strip()] if answer.is_file() else []
        mine = next((x for x in shown if x.get("program") == PROGRAM), None)
        if mine is None or not mine.get("loaded"):
            logged = folder / f"{stem}.log"
            tail = "\n".join(logged.read_text(errors="replace").splitlines()[-25:]) if logged.is_file() else ""
            walked = re.search(r"processed (\d+) insns \(limit (\d+)\)", tail)
            why = ("the probe did not run (no answer from the guest)" if mine is None else
                   f"the guest's kernel refused it ({mine.get('error', '?')})" +
                   (f": the verifier processed {int(walked[1]):,} instructions, its limit {int(walked[2]):,}"
                    if walked else "") + f"; the verifier's last lines:\n{tail}")
            rows.append(VerifierRow(variant=p["variant"], loaded=False if mine else None, limit=COMPLEXITY_LIMIT,
                                    verified_insns=int(walked[1]) if walked else 0, why=why))
            continue
        rows.append(VerifierRow(variant=p["variant"], loaded=True, insns=int(mine["insns"]),
                                verified_insns=int(mine["verified_insns"]), limit=COMPLEXITY_LIMIT,
                                jited_bytes=int(mine["jited_bytes"])))
    res = VerifierResult(experiment=index["experiment"], kernel=kernel, clang=index["clang"], rows=rows)
    with bench_run("verifier", {"experiment": index["experiment"], "epochs": 1, "guest": True}, results_root,
                   kernel_label(kernel)) as run:
        run.manifest.put("result", res)
        (run.path / "summary.md").write_text(_summary(res, f"a VM's kernel ({kernel}, scripts/vm-boot)"))
    log.info("verifier: the guest's kernel %s: %d loaded, %d refused (%s)", kernel,
             sum(bool(r.loaded) for r in rows), len(res.refused), run.final)
    return res
