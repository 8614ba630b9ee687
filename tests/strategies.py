"""hypothesis strategies shared by every test module: stochastic matrices, small languages, masks, schedules."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.languages.hmm import HMM, NGram
from numerics.schedules import Schedule

_weights = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False)


@st.composite
def stochastic_rows(draw, rows: int, cols: int, zeros: bool = True) -> np.ndarray:
    """A ``(rows, cols)`` row-stochastic matrix; with ``zeros`` some entries are structural zeros."""
    w = draw(hnp.arrays(np.float64, (rows, cols), elements=_weights if zeros else st.floats(0.05, 1.0)))
    for r in range(rows):
        if w[r].sum() == 0.0:
            w[r, draw(st.integers(0, cols - 1))] = 1.0
    return w / w.sum(axis=1, keepdims=True)


@st.composite
def small_hmms(draw, max_states: int = 4, max_vocab: int = 3, zeros: bool = True) -> HMM:
    """A random HMM with 1..max_states states and 1..max_vocab tokens."""
    S = draw(st.integers(1, max_states))
    V = draw(st.integers(1, max_vocab))
    return HMM(
        draw(stochastic_rows(1, S, zeros))[0],
        draw(stochastic_rows(S, S, zeros)),
        draw(stochastic_rows(S, V, zeros)),
    )


@st.composite
def small_ngrams(draw, max_order: int = 3, max_vocab: int = 3, zeros: bool = True) -> NGram:
    """A random n-gram with order 2..max_order and 2..max_vocab tokens."""
    n = draw(st.integers(2, max_order))
    V = draw(st.integers(2, max_vocab))
    S = V ** (n - 1)
    return NGram(n, draw(stochastic_rows(1, S, zeros))[0], draw(stochastic_rows(S, V, zeros)))


@st.composite
def observations(draw, vocab: int, length: int, batch: int = 1):
    """``(tokens, mask)`` of shape ``(batch, length)``; mask True = masked, any pattern."""
    tokens = draw(hnp.arrays(np.int64, (batch, length), elements=st.integers(0, vocab - 1)))
    mask = draw(hnp.arrays(np.bool_, (batch, length)))
    return tokens, mask


@st.composite
def schedules(draw, max_steps: int = 6) -> Schedule:
    """A random valid schedule with 1..max_steps steps (some steps may have probability 0)."""
    N = draw(st.integers(1, max_steps))
    w = draw(hnp.arrays(np.float64, N, elements=_weights))
    if w.sum() == 0.0:
        w[-1] = 1.0
    u = np.minimum(np.concatenate([[0.0], np.cumsum(w / w.sum())]), 1.0)  # cumsum can overshoot 1 by an ulp
    u[-1] = 1.0
    return Schedule(u, "hypothesis")


# ----- theory/ (claims of the appendix) ------------------------------------------------------

_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False)


@st.composite
def probability_vectors(draw, min_size: int = 1, max_size: int = 8, zeros: bool = True) -> np.ndarray:
    """A probability vector (float64, sums to 1); with ``zeros`` some entries may be 0."""
    w = draw(hnp.arrays(np.float64, draw(st.integers(min_size, max_size)), elements=_weights if zeros else st.floats(0.05, 1.0)))
    if w.sum() == 0.0:
        w[-1] = 1.0
    return w / w.sum()


@st.composite
def rational_probability_vectors(draw, min_size: int = 1, max_size: int = 6) -> list:
    """A probability vector of ``fractions.Fraction`` (exact rationals), some entries possibly 0."""
    from fractions import Fraction

    w = draw(st.lists(st.integers(0, 7), min_size=min_size, max_size=max_size))
    if sum(w) == 0:
        w[-1] = 1
    return [Fraction(v, sum(w)) for v in w]


@st.composite
def step_instances(draw, max_L: int = 48, divisible: bool = True) -> dict:
    """A reverse step ``(L, n, u_{i-1}, pi_i)`` of Lemmas B.10/B.11: ``u_{i-1} > 0``, ``pi_i > 0``,
    ``u_{i-1} + pi_i <= 1`` and (``divisible``) ``n - 1 | L``."""
    n = draw(st.integers(2, 4))
    L = draw(st.integers(1, max(1, max_L // (n - 1)))) * (n - 1) if divisible else draw(st.integers(1, max_L))
    a = draw(st.floats(0.01, 0.99))
    b = draw(st.floats(0.001, 1.0)) * (1.0 - a)
    return {"L": L, "n": n, "u_prev": a, "pi_i": b, "d": draw(st.floats(0.01, 0.99))}


@st.composite
def joint_tables(draw, max_k: int = 3, max_vocab: int = 3) -> np.ndarray:
    """A joint law of ``k`` tokens over ``V`` symbols, shape ``(V,) * k``."""
    k = draw(st.integers(1, max_k))
    V = draw(st.integers(2, max_vocab))
    w = draw(hnp.arrays(np.float64, V**k, elements=_weights))
    if w.sum() == 0.0:
        w[0] = 1.0
    return (w / w.sum()).reshape((V,) * k)
