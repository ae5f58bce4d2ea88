"""Sharded runs as Ray tasks on a local two-node cluster (chimera.targets.sharded, the cluster path). A file of its
own, so a group of its own (tests/conftest.py): most of its time is Ray's start and the nodes' imports, outside any
testbed, and in the testbed group's one worker every testbed test waited through them; its sharded run takes the
machine-wide testbed lock like any other."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from chimera.reference.pipeline import run_reference
from chimera.targets.registry import target_class
from chimera.targets.sharded import sharded
from chimera.testbed.replay import ReplayConfig

from builders import holding_the_testbed_lock
from test_shards import _check, prior_on  # noqa: F401  (prior_on: the module fixture, built here once too)


@pytest.mark.root
def test_shards_as_ray_tasks_on_a_local_two_node_cluster(prior_on, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The cluster path: two Ray nodes, each advertising one testbed; each shard a Ray task on one of them.

    The nodes are this test's children and see it as the testbed lock's owner, so their tasks nest in its hold
    (as a local run's shard processes nest in the run's): the two shards come up at once, and no other worker's
    testbed comes up between them. The hold covers the sharded run only: each node's worker has imported the
    project before it, so the other testbed worker does not wait through Ray's start and the imports. (Before,
    the tasks took the lock on their own: in full runs the test took 50-100 s, against 13 s alone.)"""
    cls = target_class("ebpf")
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"ebpf cannot run here: {why}")
    import ray
    from ray.cluster_utils import Cluster

    from chimera.testbed.topology import LOCK_OWNER_ENV
    with pytest.MonkeyPatch.context() as mp:  # the nodes' environment, and so their workers', is fixed at start
        mp.setenv(LOCK_OWNER_ENV, str(os.getpid()))
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"testbed": 1}})
        cluster.add_node(num_cpus=1, resources={"testbed": 1})
    try:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)

        def warm() -> None:
            import chimera.targets.ebpf
            import chimera.targets.sharded  # noqa: F401

        warmed = [ray.remote(warm).options(num_cpus=1, resources={"testbed": 1}).remote() for _ in range(2)]
        art, table = prior_on.art, prior_on.data.replay_table
        # meanwhile, the reference's kernels for the artifact as a task receives it (Ray hands its arrays over
        # read-only, a numba specialization of their own), compiled here once into numba's cache: each node's
        # worker loads them from there, instead of both compiling them inside the hold below
        run_reference(ray.get(ray.put(art)), table.take(np.arange(min(len(table), 64))))
        ray.get(warmed)
        t = sharded(cls(build_dir=tmp_path / "build"), 2, address=cluster.address)
        with holding_the_testbed_lock():
            res = t.run(art, table, tmp_path, "ray", replay=ReplayConfig(clock="trace", mode="pps", pps=20_000))
        _check(res, art, table, 2)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    finally:
        ray.shutdown()
        cluster.shutdown()
