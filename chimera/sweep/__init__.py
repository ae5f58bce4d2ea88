"""Sweeps over seeds, variants and datasets, spread over a Ray cluster (or run one after another)."""
