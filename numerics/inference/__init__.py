"""Masked forward-backward: exact posterior marginals and likelihoods of partially observed sequences.

The public API (:func:`masked_forward_backward`, :func:`log_likelihood`) dispatches to compiled
kernels; :func:`forward_backward_numpy` is the plain reference they are tested against.
"""

from numerics.inference.forward_backward import forward_backward_numpy, log_likelihood, log_q, masked_forward_backward
from numerics.inference.posterior import Observations, Posterior, check_observations

__all__ = ["Posterior", "Observations", "check_observations", "masked_forward_backward", "log_likelihood", "log_q", "forward_backward_numpy"]
