"""results stage."""
