"""The resources kind (the paper's Table 2): what each method allocates, measured.

Chimera: compiled for the first dataset, then the eBPF object's map declarations
(libbpf) and chimera.p4's register arrays (p4c's BMv2 JSON where p4c exists, the
P4 schema otherwise) give the per-flow state as allocated; its tables are split
by match kind (exact = SRAM, ternary/range = TCAM-like). Leo: its range and leaf
tables as built. The other baselines are software: their measured parameter
bits and the fields a switch would have to store for their window.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.resources import config, render, run
from chimera.experiments.kinds.resources import tables as T

KIND = Kind("resources", "Table 2: what each method allocates in the switch, measured", config.ResourcesExperiment, run.run,
            render.render, (T.RESOURCES, T.CHIMERA_TABLES, T.EBPF_MAPS, T.P4_REGISTERS, T.P4_TABLES,
                            T.COMPILES),
            first_dataset_only=True,
            section_model=config.ResourcesSection)
