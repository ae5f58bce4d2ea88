"""Chimera testbed: reproducible harness for in-switch traffic classification.

Subpackages, one per stage: ``data`` (pcaps -> flows -> tokens), ``model``
(training), ``rules`` (symbolic path), ``compile`` (tables + budgets + artifact),
``pipeline`` (the bit-exact integer reference), ``metrics``, ``results``,
``report``, ``experiments`` (configs and the runner), ``targets`` and
``testbed`` (dataplanes and the Mininet harness).
"""

__version__ = "0.1.0"
