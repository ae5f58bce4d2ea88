"""controlplane stage."""
