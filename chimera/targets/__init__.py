"""targets stage."""
