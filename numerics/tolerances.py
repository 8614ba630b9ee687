"""Named tolerances shared by the whole engine, each with the reason for its size.

Exact computations carry no tolerance at all; these decide whether *user input* (a probability
row, a table) is accepted as a distribution, and which differences are float64 round-off in a
reported number (a KL of -1e-16, Monte Carlo terms that agree to the last bits).
"""

__all__ = ["PROB_SUM_ATOL", "KL_ROUNDOFF_RTOL", "AGREE_RTOL"]

PROB_SUM_ATOL = 1e-9  # a probability row/table must sum to 1 within this (float64 round-off of generators)

#: An exact KL below 0 by at most this times its scale (``max(1, H(q))`` nats, the size of the
#: ``q log q`` terms summed) is round-off and reported as 0; a larger negative KL is an error.
KL_ROUNDOFF_RTOL = 1e-12  # sums of ~V^L float64 terms of size <= H: relative error ~1e-15 per term, far below

#: Monte Carlo terms whose spread (max - min) is at most this times their scale are equal up to
#: round-off (e.g. the chain-rule terms of a one-token-per-step rule, all 0 up to 1e-16): their
#: sample standard error (~1e-18) is no uncertainty, and is reported as 0 with "all samples agree".
AGREE_RTOL = 1e-12  # log-probabilities of ~L terms: round-off ~L * 1e-16 relative, far below
