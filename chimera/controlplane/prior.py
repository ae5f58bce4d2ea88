"""Prior-shift correction from what a switch's control plane can see: the token sample, no labels.

Label shift (the class mix moves, each class's traffic stays as it was) is the one drift a control plane can
correct without labels, by the classic EM of Saerens, Latinne and Decaestecker (Neural Computation 14(1), 2002):
given calibrated posteriors p_train(y | x) of recent inputs x under the training priors pi_train, iterate

    p(y | x) ∝ pi(y) / pi_train(y) * p_train(y | x),    pi(y) <- mean over x of p(y | x)

to the maximum-likelihood priors pi of the recent traffic. The classifier then adds log(pi / pi_train) to its
class scores. Here (pi_train in that log is the EM's own estimate on the training tokens, so that the estimator's
error cancels and the training mix asks for no bias):

- x is a sampled token's Map key read with the *training* length bins (a sample word carries the exact
  length, so a re-binned Map does not move it), and p_train(y | key) is a count table over the training
  tokens (``TokenPosterior``), Laplace-smoothed toward pi_train: the control plane's own small model,
  trained offline with the switch model. It is calibrated on the training hours by construction.
- The bias is installed through the fusion's soft term: ``compile.prior_logits`` reserves a soft rule that
  matches every parsed packet (chimera.rules.spec.PRIOR_RULE), and the loop writes its per-class weights
  into the inactive version and flips, exactly like a Map update. The dataplanes' integer semantics do not
  change. The weights are anchored at the largest class (it gets the full weight; a class more than
  ``prior_logits`` below it is clipped at 0), so only differences between classes matter, as for argmax.

EM assumes p(x | y) is fixed. Under covariate or concept shift (lengths and timings that grow) it
misreads the new keys as a new class mix; the stability report measures both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from chimera.errors import ConfigError
from chimera.formats.artifact import Artifact
from chimera.model.tokenizer import MAP_KEYS, flag_class, len_bin, map_key
from chimera.reference.pipeline import unpack_sample
from chimera.data.tokens import Tokens, proto_class

#: smallest prior EM may report for a class (log of it stays finite)
PRIOR_FLOOR = 1e-4


def token_keys(len_lo: np.ndarray, ip_len: np.ndarray, iat_bucket: np.ndarray, direction: np.ndarray,
               fclass: np.ndarray, pclass: np.ndarray) -> np.ndarray:
    """Map keys of tokens under the length bins ``len_lo`` (the drift analysis and the EM read the same keys)."""
    return map_key(len_bin(ip_len, len_lo), iat_bucket, direction, fclass, pclass)


def keys_of_tokens(tok: Tokens, rows: np.ndarray, len_lo: np.ndarray) -> np.ndarray:
    """Map keys of packets ``rows`` (offline tokens) under ``len_lo``."""
    return token_keys(len_lo, tok.ip_len[rows], tok.iat_bucket[rows], tok.direction[rows],
                      flag_class(tok.tcp_flags[rows]), proto_class(tok.proto[rows]))


def keys_of_sample(words: np.ndarray, len_lo: np.ndarray) -> np.ndarray:
    """Map keys of sampled token words (chimera.reference.pipeline.unpack_sample) under ``len_lo``."""
    s = unpack_sample(words)
    return token_keys(len_lo, s["ip_len"], s["iat_bucket"], s["direction"], s["flag_class"], s["proto_class"])


@dataclass(frozen=True)
class TokenPosterior:
    """p_train(y | key) from labelled training tokens, and the training priors."""

    len_lo: np.ndarray      # the training coarse length bins
    posterior: np.ndarray   # [MAP_KEYS, Y]
    prior: np.ndarray       # [Y] training class shares (packets)
    reference: np.ndarray   # [Y] what the EM itself estimates on the training tokens (the zero of the bias)

    @staticmethod
    def fit(keys: np.ndarray, y: np.ndarray, n_classes: int, len_lo: np.ndarray,
            smoothing: float = 1.0) -> "TokenPosterior":
        """The count table, and the EM's own estimate on the training tokens: the bias is measured from that
        estimate, not from the true training shares, so the estimator's own error (smoothing, confusable classes)
        cancels and undrifted traffic asks for no bias."""
        keys = np.asarray(keys, np.int64)
        counts = np.zeros((MAP_KEYS, n_classes))
        np.add.at(counts, (keys, np.asarray(y, np.int64)), 1.0)
        prior = counts.sum(0) / max(counts.sum(), 1.0)
        post = (counts + smoothing * prior) / (counts.sum(1, keepdims=True) + smoothing)
        return TokenPosterior(np.asarray(len_lo, np.int64).copy(), post, prior, em_priors(post[keys], prior))

    def of_sample(self, words: np.ndarray) -> np.ndarray:
        return self.posterior[keys_of_sample(words, self.len_lo)]


@dataclass(frozen=True)
class EMFit:
    """The EM's estimate, how many iterations it took, and whether it converged (within ``tol``) before its cap."""

    priors: np.ndarray
    iterations: int
    converged: bool


def em_fit(post: np.ndarray, train_prior: np.ndarray, iterations: int = 200, tol: float = 1e-7) -> EMFit:
    """Saerens et al.'s EM: the class priors of the inputs whose training-prior posteriors are ``post``; where it
    reaches ``iterations`` without converging it says so (the loop then holds the prior, and control.csv shows
    it)."""
    base = np.maximum(train_prior, PRIOR_FLOOR)
    pi = base.copy()
    for i in range(iterations):
        p = post * (pi / base)[None, :]
        p /= np.maximum(p.sum(1, keepdims=True), 1e-300)
        new = np.maximum(p.mean(0), PRIOR_FLOOR)
        new /= new.sum()
        if np.abs(new - pi).max() < tol:
            return EMFit(new, i + 1, True)
        pi = new
    return EMFit(pi, iterations, False)


def em_priors(post: np.ndarray, train_prior: np.ndarray, iterations: int = 200, tol: float = 1e-7) -> np.ndarray:
    """The EM's class priors alone (em_fit)."""
    return em_fit(post, train_prior, iterations, tol).priors


@dataclass(frozen=True)
class PriorEstimate:
    """One tick's estimate and the weights it asks for."""

    priors: np.ndarray      # [Y] the EM estimate
    bias: np.ndarray        # [Y] log(pi / pi_train), anchored at its largest (<= 0), in logits
    weights: np.ndarray     # [Y] the prior rule's integer weights
    clipped: int            # classes whose bias fell below what the reserved range holds
    iterations: int = 0     # the EM's iterations
    converged: bool = True  # False: the EM hit its iteration cap (the loop holds the prior)


#: what the class bias is measured from (control.prior_base)
PriorBase = Literal["trained", "uniform"]


@dataclass(frozen=True)
class PriorShift:
    """The prior rule of an artifact, the EM that sets it, and the bias's zero (``base``)."""

    model: TokenPosterior
    rule: int               # the prior rule's index among the artifact's soft rules
    weight_per_logit: float
    vtop: int               # the largest weight
    base: np.ndarray        # [Y] the class mix that asks for no bias

    @staticmethod
    def of(art: Artifact, model: TokenPosterior, base: PriorBase = "trained", truth: bool = False) -> "PriorShift":
        """``base``: trained (the EM's own training estimate where the EM estimates, ``truth``: the training's
        true shares, so that each arm's undrifted traffic asks for no bias) or uniform."""
        pr = art.provenance.get("prior_rule")
        if not pr:
            raise ConfigError("control.prior is set, but the artifact has no prior rule",
                              "compile with compile.prior_logits > 0 (e.g. 2.0)")
        y = len(model.prior)
        zero = (np.full(y, 1.0 / y) if base == "uniform" else model.prior if truth else model.reference)
        return PriorShift(model, int(pr["rule"]), float(pr["weight_per_logit"]),
                          (1 << (art.c("TABLE_BITS") - 1)) - 1, np.asarray(zero, np.float64))

    def estimate(self, words: np.ndarray, iterations: int = 200) -> PriorEstimate:
        """The EM's estimate of the sampled tokens' class mix, and the weights it asks for."""
        fit = em_fit(self.model.of_sample(words), self.model.prior, iterations)
        return self.weights_for(fit.priors, fit.iterations, fit.converged)

    def weights_for(self, pi: np.ndarray, iterations: int = 0, converged: bool = True,
                    hold: np.ndarray | None = None, current: np.ndarray | None = None) -> PriorEstimate:
        """The bias log(pi / base), anchored at its largest, as the rule's integer weights. ``hold`` (a class
        mask): those classes keep the bias the installed weights ``current`` stand for."""
        pi = np.asarray(pi, np.float64)
        bias = np.log(np.where(pi > 0, pi, PRIOR_FLOOR) / np.maximum(self.base, PRIOR_FLOOR))  # a true share of 0
        if hold is not None and current is not None and hold.any():
            bias = bias - bias[~hold].max() if (~hold).any() else bias
            bias[hold] = self.bias_of(current)[hold]
        bias -= bias.max()
        raw = self.vtop + np.rint(bias * self.weight_per_logit)
        return PriorEstimate(pi, bias, np.clip(raw, 0, self.vtop).astype(np.int64), int((raw < 0).sum()),
                             iterations, converged)

    def bias_of(self, weights: np.ndarray) -> np.ndarray:
        """The bias (logits, anchored at its largest) that installed weights stand for."""
        w = np.asarray(weights, np.float64)
        return (w - w.max()) / self.weight_per_logit
