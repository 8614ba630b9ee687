"""Named tolerances of the test suite, each with the reason for its size.

The engine's own tolerances (accepting user input) live in ``numerics/tolerances.py``; these
decide when two computations of the same number agree. A module-specific tolerance (a long
sequence, a float32 network) stays next to its test with its own reason.
"""

__all__ = ["RTOL_EXACT", "RTOL_TWIN", "ATOL_PROB", "ATOL_LOG", "ATOL_ZERO", "ATOL_ENTROPY", "ATOL_METRIC"]

RTOL_EXACT = 1e-12  # an exact float64 method vs brute-force enumeration / another exact method (sums in different orders)
RTOL_TWIN = 1e-12  # two float64 implementations of the same recursion (compiled kernel vs its NumPy twin)
ATOL_PROB = 1e-15  # absolute round-off of a probability in [0, 1] (terms of size ~1 summed)
ATOL_LOG = 1e-14  # absolute round-off of a log-probability near 0 (a sum of a few logs of numbers ~1)
ATOL_ZERO = 1e-15  # a quantity that is exactly 0 in one method and float64 round-off of O(1) terms in the other
ATOL_ENTROPY = 1e-14  # an exactly-0 quantity reached through round-off of O(1) entropies (sums of p log p)
ATOL_METRIC = 1e-13  # KL/TER/SER as differences of sums of size <= L log V (~10): an exact 0 reached by round-off
