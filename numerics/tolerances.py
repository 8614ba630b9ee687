"""Named tolerances shared by the whole engine, each with the reason for its size.

Exact computations carry no tolerance at all; these only decide whether *user input* (a
probability row, a table) is accepted as a distribution.
"""

__all__ = ["PROB_SUM_ATOL"]

PROB_SUM_ATOL = 1e-9  # a probability row/table must sum to 1 within this (float64 round-off of generators)
