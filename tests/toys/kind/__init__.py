"""A toy kind: the verdict counts per class of the testbed's replay of the test split."""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NightlyTrack, one_cell
from chimera.experiments.kinds.toy import config, render, run
from chimera.experiments.kinds.toy import tables as T

KIND = Kind("toy", "a toy kind: verdict counts per class on a testbed", config.ToyExperiment, run.run, render.render,
            (T.COUNTS,), one_cell, NightlyTrack(T.COUNTS, "label", "share"), needs_testbed=True,
            section_model=config.ToySection)
