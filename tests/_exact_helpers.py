"""Shared assumption of the exact-method tests: the tiny case is inside float64's range."""

from hypothesis import assume

from numerics.exact.joint_table import joint_table

SMALLEST_PRODUCT = 1e-290  # p(x | tau) >= q(x)^L must stay a normal float64 (the methods fail loudly below)


def assume_representable(language, length: int) -> None:
    """``assume`` that ``q(x)^L`` is a normal float64 for every ``x`` in the support.

    The brute-force methods work in linear space and raise ``FloatingPointError`` when the
    sampler's probability of a supported sequence underflows; hypothesis can draw such
    languages (entries like 1e-298), which are outside what the methods claim to handle.
    """
    q = joint_table(language, length)
    assume(float(q[q > 0].min()) ** length > SMALLEST_PRODUCT)
