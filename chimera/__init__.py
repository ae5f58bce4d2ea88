"""Chimera testbed: reproducible harness for in-switch traffic classification.

One subpackage per stage; imports only point down this list (checked by
import-linter, see pyproject.toml):

    bench        benchmarks (invoke bench)
    experiments  configs, the stages of a run, the runner
    baselines    the paper's baselines and the yardsticks (decision tree, forest), on Chimera's split
    report       report.md and figures
    targets      dataplanes: reference, ebpf, bmv2, software classifier host
    testbed      the Mininet harness: topology, switch node contract, replay, collect
    reference    the bit-exact integer pipeline (spec: docs/pipeline.md)
    compile      quantization, budgets, the constants header
    model        Map stage, attention training, fusion
    rules        rule files, ternary match semantics, soft-rule weights
    data         pcap ingest, flows, tokens, datasets, generators, adapters
    metrics      packet-level classification metrics
    formats      the verdict header, the table artifact, the results layout
    errors       error types carrying the problem and the fix
"""

__version__ = "0.1.0"
