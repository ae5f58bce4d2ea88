"""Differential fuzzing of the pipeline's implementations (``invoke fuzz``) and their mutation score
(``invoke mutate``): Hypothesis-generated frame sequences, with live installs between packets, run through the
reference, the independent oracle and every testbed target that can run here; every verdict and register must
agree (docs/fuzzing.md)."""
