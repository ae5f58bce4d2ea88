"""Benchmarks (``invoke bench --what ...``): ratios measured in one run, never asserted in tests."""
