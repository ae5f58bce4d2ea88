"""Nightly regression: the fixed suite, the golden baseline, the history and its trends."""
