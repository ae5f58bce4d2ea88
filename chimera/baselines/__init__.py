"""The paper's baselines and the yardsticks: models trained on exactly Chimera's training flows and scored on
the same test packets, with a per-packet verdict each."""
