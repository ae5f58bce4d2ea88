"""Formats shared by every target: the verdict header (the table artifact lives in chimera.compile.artifact)."""
