"""The reference target's engine: the bit-exact integer pipeline (docs/pipeline.md)."""
