"""The stages of an experiment, in pipeline order: dataset -> rules -> train -> compile -> target -> metrics -> outputs.

Each module is one stage with typed inputs and outputs; ``chimera.experiments.runner``
strings them together over a ``RunContext``.
"""
