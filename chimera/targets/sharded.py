"""Sharded runs: the replayed packets split by flow over K testbeds that run at once.

A testbed is one h1 - s1 - h2 with one switch process, and one switch is the bottleneck at size (BMv2 holds a
few kpps). ``--shards K`` hashes every flow to one of K shards and replays each shard through a testbed of its
own, with its own switch and its own flow table, all at once: locally K processes (each builds its own Mininet
network, nested in this run's hold on the machine), on a cluster K Ray tasks (``--ray HEAD:PORT``, the sweep's
cluster; each task asks for the ``testbed`` resource every node advertises once).

**The shard of a flow** is its CRC-32 (the pipeline's step 1, docs/pipeline.md) mod K; packets the parser
rejects (they touch no flow state) go to shard 0. Each shard is a switch of its own, so flow-slot collisions
and the switch-wide state (the class EMA, the token sample, the counters) are per shard: sharded verdicts
equal the *sharded reference's* (the reference run shard by shard, the same way), not the unsharded
reference's. Each shard checks its own conformance, so a sharded run with 0 differences equals the sharded
reference bit for bit; every result also carries the unsharded reference's verdicts, so a report states that
F1 beside the sharded one. With K a power of two that divides the flow slots, a shard holds exactly the slots
congruent to it mod K, and its collisions are the unsharded switch's.

Live installs (the slow loop) are not sharded: one control plane drives one switch.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chimera import paths
from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable
from chimera.errors import ConfigError
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import Verdicts, dataplane_parsed, flow_hash, run_reference
from chimera.targets.base import Capability, Target, TargetResult
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.outcome import (Accounting, Conformance, LatencySummary, PerPacketLatency, Rates,
                                     ReplayOutcome, SwitchCounters)
from chimera.testbed.replay import ReplayConfig
from chimera.testbed.topology import PROCESS_LOCK

log = logging.getLogger(__name__)
#: what a sharded run cannot do: one control plane drives one switch; the † and forwarding paths are not sharded
UNSHARDED = Capability.LIVE_INSTALL | Capability.SOFTWARE_HOST | Capability.FORWARDING


def shard_of(table: PacketTable, k: int) -> np.ndarray:
    """Each packet's shard: its flow's CRC-32 (step 1) mod ``k``; a packet the parser rejects goes to shard 0."""
    crc, _ = flow_hash(table.src4, table.dst4, table.sport, table.dport, table.proto)
    s = (crc % np.uint32(k)).astype(np.int64)
    s[~dataplane_parsed(table)] = 0
    return s


@dataclass(frozen=True)
class ShardJob:
    """One shard's run, as a process or a Ray task receives it (everything picklable)."""

    target: str
    build: BuildOptions
    build_dir: Path | None
    art: Artifact
    table: PacketTable
    run_dir: Path
    slug: str
    replay: ReplayConfig
    shard: int
    shards: int


def run_shard(job: ShardJob) -> TargetResult:
    """One shard on a target of its own (a testbed of its own), torn down before it returns."""
    from chimera.targets.registry import target_class
    if not logging.getLogger().handlers:  # a fresh process (spawned, or a Ray worker): say which shard speaks
        logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                            format=f"%(asctime)s %(levelname)-7s [shard {job.shard + 1}/{job.shards}] %(message)s")
    job.run_dir.mkdir(parents=True, exist_ok=True)
    with target_class(job.target)(build=job.build, build_dir=job.build_dir) as t:
        if hasattr(t, "sender_cpu"):  # one sender per CPU: the shards on a machine do not queue on one core
            t.sender_cpu = job.shard % (os.cpu_count() or 1)
        return t.run(job.art, job.table, job.run_dir, job.slug, replay=job.replay)


Executor = Callable[[list[ShardJob], str | None], list[TargetResult]]


def in_this_process(jobs: list[ShardJob], address: str | None) -> list[TargetResult]:
    """One after another here: the reference, which has no testbed to wait for."""
    return [run_shard(j) for j in jobs]


def local_processes(jobs: list[ShardJob], address: str | None) -> list[TargetResult]:
    """K processes at once on this machine, each with its own testbed. This process holds the machine's testbed
    lock meanwhile, and its children nest in that hold (chimera.testbed.topology.ProcessLock)."""
    PROCESS_LOCK.acquire()
    try:
        with ProcessPoolExecutor(len(jobs), mp_context=multiprocessing.get_context("spawn")) as ex:
            return list(ex.map(run_shard, jobs))
    finally:
        PROCESS_LOCK.release()


def ray_tasks(jobs: list[ShardJob], address: str | None) -> list[TargetResult]:
    """K Ray tasks on the cluster at ``address``, a testbed each (every node advertises ``testbed: 1`` once, so
    two shards never share a node's testbed; on one machine they take turns through its testbed lock)."""
    import ray
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=True, configure_logging=False)
    remote = ray.remote(run_shard)
    refs = [remote.options(num_cpus=1, resources={"testbed": 1}, max_retries=0).remote(j) for j in jobs]
    try:
        return list(ray.get(refs))
    except KeyboardInterrupt:
        for r in refs:
            ray.cancel(r, force=True)
        raise


#: how shards run: the reference in this process; testbeds as local processes, or as Ray tasks with --ray
EXECUTORS: dict[str, Executor] = {"here": in_this_process, "processes": local_processes, "ray": ray_tasks}


def merge_verdicts(parts: list[Verdicts], rows: list[np.ndarray], n: int) -> Verdicts:
    """The shards' verdicts back in the replay's row order."""
    out = {}
    for f in (x.name for x in dataclasses.fields(Verdicts)):
        first = getattr(parts[0], f)
        a = np.zeros((n, *first.shape[1:]), first.dtype)
        for p, r in zip(parts, rows):
            a[r] = getattr(p, f)
        out[f] = a
    return Verdicts(**out)


def _sum_optional(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def merge_counters(parts: list[SwitchCounters | None]) -> SwitchCounters | None:
    if any(p is None for p in parts):
        return None
    cs = [p for p in parts if p is not None]
    return SwitchCounters(sum(c.evictions for c in cs), sum(c.new_flows for c in cs), sum(c.parsed for c in cs),
                          sum(c.unparsed for c in cs), _sum_optional([c.samples for c in cs]),
                          _sum_optional([c.headroom_fail for c in cs]), _sum_optional([c.redirected for c in cs]))


def _pct(a: np.ndarray, q: int) -> float | None:
    a = a[~np.isnan(a)]
    return float(np.percentile(a, q)) if a.size else None


def merge_outcomes(parts: list[TargetResult], rows: list[np.ndarray], n: int) -> tuple[ReplayOutcome | None,
                                                                                        PerPacketLatency | None]:
    """The shards' replays as one: every count summed; the sent and delivered rates over one span from the
    earliest capture time to the latest (the shards' captures share this machine's clock; on a cluster, its
    nodes' clocks), the switch rate the sum of the switches'; latency percentiles over every packet;
    conformance summed (each shard checked against its own reference)."""
    outs = [p.outcome for p in parts]
    if any(o is None for o in outs):
        return None, None
    os_ = [o for o in outs if o is not None]
    a = [o.accounting for o in os_]
    acc = Accounting(sum(x.replayed for x in a), sum(x.verdicts for x in a), sum(x.not_sent for x in a),
                     "; ".join(sorted({x.not_sent_reason for x in a} - {""})), sum(x.dropped_by_capture for x in a),
                     sum(x.lost for x in a), sum(x.cut_frames for x in a))

    def together(span: str, count: str) -> float | None:
        """Frames over one span from the earliest first to the latest last (the shards ran at once)."""
        spans = [getattr(o.rates, span) for o in os_]
        if any(s is None for s in spans):
            return None
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        n = sum(getattr(o.rates, count) for o in os_)
        return (n - 1) / ((hi - lo) / 1e9) if hi > lo and n > 1 else None

    def total(attr: str) -> float | None:
        v = [getattr(o.rates, attr) for o in os_]
        return None if any(x is None for x in v) else float(sum(x for x in v if x is not None))

    lat = None
    if all(p.latency is not None for p in parts):
        sw, hh = np.full(n, np.nan), np.full(n, np.nan)
        for p, r in zip(parts, rows):
            assert p.latency is not None
            sw[r], hh[r] = p.latency.switch_us, p.latency.host_us
        lat = PerPacketLatency(sw, hh)
    summary = LatencySummary(_pct(lat.switch_us, 50), _pct(lat.switch_us, 99), _pct(lat.host_us, 50),
                             _pct(lat.host_us, 99)) if lat is not None else LatencySummary()
    confs = [o.conformance for o in os_]
    conf = None if any(c is None for c in confs) else Conformance(
        sum(c.reference_mismatches for c in confs if c is not None),
        _sum_optional([c.register_mismatches for c in confs if c is not None]),
        sum(c.checked for c in confs if c is not None))
    installs = [o.install_ms for o in os_ if o.install_ms is not None]
    out = ReplayOutcome(os_[0].clock, "; ".join(sorted({o.pace for o in os_})), acc,
                        Rates(together("sent_span_ns", "sent"), total("switch_pps"), together("recv_span_ns", "received"),
                              None, None, sum(o.rates.sent for o in os_), sum(o.rates.received for o in os_)),
                        summary,
                        sum(o.foreign_frames for o in os_), sum(o.unmarked_frames for o in os_),
                        max(o.attempts for o in os_), conf, max(installs) if installs else None,
                        merge_counters([o.counters for o in os_]))
    return out, lat


class ShardedTarget(Target):
    """``inner``'s dataplane over ``shards`` testbeds at once (see the module's text). Made by ``sharded``."""

    inner: type[Target]
    shards: int = 1
    executor: str = "here"
    address: str | None = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return cls.inner.unavailable_reason()

    def unsupported(self, art: Artifact) -> str | None:
        return self._one.unsupported(art)

    @classmethod
    def limits(cls) -> dict[str, int]:
        return cls.inner.limits()

    def __init__(self, build: BuildOptions | None = None, build_dir: Path | None = None) -> None:
        super().__init__(build, build_dir)
        self._one = self.inner(build=build, build_dir=build_dir)  # its record, unsupported(); never run here

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {**self._one.describe(), "shards": self.shards, "shard_executor": self.executor,
                **({"ray": self.address} if self.address else {}),
                "shard_of": "CRC-32 of the canonical 5-tuple (pipeline step 1) mod shards"}

    def replay_rate(self, art: Artifact) -> int | None:
        return self._one.replay_rate(art)

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        if control is not None and control.enabled:
            raise ConfigError("live installs cannot be sharded: one control plane drives one switch",
                              "run this experiment without --shards")
        which = shard_of(table, self.shards)
        rows = [np.flatnonzero(which == k) for k in range(self.shards)]
        base = self.build_dir or paths.BUILD
        jobs = [ShardJob(self.inner.name, self.build, base / f"shard-{k + 1}-of-{self.shards}", art,
                         table.take(r), run_dir / f"shard-{k + 1}-of-{self.shards}", slug, replay, k, self.shards)
                for k, r in enumerate(rows)]
        log.info("[%s] %s: %d packets over %d shards (%s), %s", self.name, slug, len(table), self.shards,
                 ", ".join(f"{r.size:,}" for r in rows), self.executor)
        parts = EXECUTORS[self.executor](jobs, self.address)
        n = len(table)
        outcome, latency = merge_outcomes(parts, rows, n)
        received = None
        if all(p.received is not None for p in parts):
            received = np.zeros(n, bool)
            for p, r in zip(parts, rows):
                received[r] = p.received
        unsharded, _ = run_reference(art, table)
        return TargetResult(merge_verdicts([p.verdicts for p in parts], rows, n),
                            merge_counters([p.counters for p in parts]), outcome, latency, received, None,
                            shards=self.shards, unsharded=unsharded)


def sharded(target: Target, shards: int, address: str | None = None) -> Target:
    """``target`` over ``shards`` testbeds (``address``: a Ray cluster's HEAD:PORT; else local processes); the
    reference runs its shards in this process. ``shards`` 1 and no cluster: ``target`` itself."""
    if shards < 1:
        raise ConfigError(f"--shards {shards}: at least 1", "e.g. --shards 2")
    if shards == 1 and address is None:
        return target
    cls = type(target)
    testbed = cls.can(Capability.TESTBED)
    executor = ("ray" if address else "processes") if testbed else "here"
    if address and not testbed:
        log.info("the %s target has no testbed: its shards run in this process, not on %s", cls.name, address)
    sub = type(f"Sharded{cls.__name__}", (ShardedTarget,), {
        "inner": cls, "shards": shards, "executor": executor, "address": address if testbed else None,
        "name": cls.name, "label": f"{cls.label}, {shards} shards", "title": cls.title, "program": cls.program,
        "capabilities": cls.capabilities & ~UNSHARDED, "auto_rank": None, "clocks": cls.clocks,
        "tools": cls.tools, "conformance_pps": cls.conformance_pps, "conformance_frames": cls.conformance_frames,
        "min_tick_s": cls.min_tick_s})
    return sub(build=target.build, build_dir=target.build_dir)

