"""testbed stage."""
