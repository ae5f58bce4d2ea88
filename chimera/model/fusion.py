"""The float cascade fusion: what the software classifier computes from the float model and the rules.

The integer form (fused_y = ALPHA*A_y + BETA*S_y*Z, docs/pipeline.md step 8) is
compiled by chimera.compile.build and executed by the reference and the
dataplanes; this is its float counterpart, used to pick beta on the validation
split and as the prediction of software-only (†) configurations.
"""

from __future__ import annotations

import numpy as np

from chimera.model.config import FusionConfig


def float_fused(s_nn: np.ndarray, fires: np.ndarray, W: np.ndarray, hard: np.ndarray, fusion: FusionConfig,
                beta: float) -> np.ndarray:
    """Predicted class per token: argmax of alpha*s_nn + beta*s_sym, with the hard veto when lambda_h."""
    a, b = fusion.coefficients(beta)
    fused = a * s_nn + b * (fires.astype(np.float64) @ W)
    pred = np.argmax(fused, axis=1)
    if fusion.lambda_h:
        pred = np.where(hard >= 0, hard, pred)
    return pred
