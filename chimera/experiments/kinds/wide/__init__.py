"""The wide kind: a widened search for the rows whose budgeted choice binds at an edge of its search.

Under the comparison's budget (chimera.baselines.budget) every method gets the same four configurations, and a
kept value at an edge is flagged (``at_edge``) and said to bind where validation still rises toward it
(``edge_binds``). A row whose edge binds may be under-tuned, which makes "Chimera beats it" easier. This kind
trains each named variant on every rung of a wider learning-rate ladder (13 rungs against the budget's walk of
4), keeps the best on validation and scores the kept model on the test split, on the same dataset, split and
seed as the experiment it widens. More configurations can only favour the widened row, so a verdict that
Chimera is ahead which survives the widening no longer rests on an under-tuned opponent (chimera.book.claims).
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.variants import tables as T
from chimera.experiments.kinds.variants.config import VariantsSection
from chimera.experiments.kinds.wide import config, render, run

KIND = Kind("wide", "a widened learning-rate search for rows whose budgeted choice binds at an edge",
            config.WideExperiment, run.run, render.render, (T.ABLATION, T.METRICS, T.PER_CLASS, T.CONFUSION, T.FLOWS, T.PACKETS),
            run.cells, section_model=VariantsSection, section_name="variants")
