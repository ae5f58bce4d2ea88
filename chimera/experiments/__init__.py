"""experiments stage."""
