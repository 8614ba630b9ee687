"""Optimal schedules on the information curve: the left-Riemann error against enumeration over orders,
the DP against brute force over compositions, the optimized i.i.d. schedule against enumeration
and a grid, and our reading of Lavenant-Zanella's optimum on hand-made curves."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.exact.enumerate import enumerate_output_law, instance_output_law
from numerics.exact.information_curve import InformationCurve, jensen_bound_from_curve
from numerics.exact.joint_table import joint_table, subset_entropies
from numerics.exact.markov import MarkovChain
from numerics.exact.schedule_opt import (
    _iid_objective,
    block_error,
    iid_error,
    information_curve,
    lz_schedule,
    lz_u,
    optimal_blocks,
    optimize_iid_schedule,
    schedule_from_sizes,
    sizes_from_u,
)
from numerics.languages.generators import random_hmm
from numerics.languages.presets import load_language
from numerics.schedules import cosine, from_u, linear
from tests._exact_helpers import assume_representable
from tests.strategies import small_hmms, small_ngrams
from tests.tolerances import ATOL_ENTROPY, RTOL_EXACT

RTOL_GRAD = 1e-6  # central finite differences with step 1e-6 on an O(1) smooth objective


def _composition(L: int, cuts) -> list[int]:
    s = [0, *sorted(cuts), L]
    return [b - a for a, b in itertools.pairwise(s)]


def _partitions_with_sizes(L: int, sizes) -> set:
    """Every ordered set partition of range(L) into blocks of these sizes (equally likely under a random order)."""
    out = set()
    for order in itertools.permutations(range(L)):
        blocks, at = [], 0
        for k in sizes:
            blocks.append(tuple(sorted(order[at:at + k])))
            at += k
        out.add(tuple(blocks))
    return out


def _chain_rule_kl(H: np.ndarray, partition) -> float:
    """(I1): sum_t [sum_{i in D_t} H(X_i | X_S) - H(X_D | X_S)] from subset entropies."""
    total, S = 0.0, 0
    for block in partition:
        D = sum(1 << j for j in block)
        total += sum(H[S | (1 << j)] - H[S] for j in block) - (H[S | D] - H[S])
        S |= D
    return total


@settings(max_examples=40)
@given(lang=st.one_of(small_hmms(max_states=3, max_vocab=3), small_ngrams(max_order=3, max_vocab=2)),
       length=st.integers(1, 4), data=st.data())
def test_left_riemann_error_equals_enumeration_over_all_orders(lang, length, data):
    assume_representable(lang, length)
    sizes = _composition(length, data.draw(st.sets(st.integers(1, length - 1)) if length > 1 else st.just(set())))
    q = joint_table(lang, length)
    parts = _partitions_with_sizes(length, sizes)
    by_law = np.mean([instance_output_law(q, None, p).kl for p in parts])  # the sampler's product law
    H = subset_entropies(q)
    by_chain_rule = np.mean([_chain_rule_kl(H, p) for p in parts])
    got = block_error(information_curve(q), sizes)
    assert got.total.value == pytest.approx(by_law, rel=RTOL_EXACT, abs=ATOL_ENTROPY)
    assert got.total.value == pytest.approx(by_chain_rule, rel=RTOL_EXACT, abs=ATOL_ENTROPY)
    assert got.total.method == "left-riemann-table" and list(got.sizes) == sizes


def test_markov_and_table_curves_give_the_same_block_errors():
    chain = MarkovChain(np.array([0.2, 0.5, 0.3]), np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]))
    L = 7
    markov, table = information_curve(chain, L), information_curve(joint_table(chain.to_hmm(), L))
    assert (markov.method, table.method) == ("markov", "table")
    for sizes in ([7], [1, 6], [3, 3, 1], [2, 2, 2, 1], [1] * 7):
        assert block_error(markov, sizes).total.value == pytest.approx(
            block_error(table, sizes).total.value, rel=RTOL_EXACT, abs=ATOL_ENTROPY)


def test_hand_computed_three_position_curve():
    """Z = (0, a, b): T=1 costs a + b; T=2 costs min over (1,2) -> b - a and (2,1) -> a; T=3 costs 0."""
    a, b = 0.3, 0.5
    curve = InformationCurve(np.array([0.0, a, b]), "hand")
    assert block_error(curve, [3]).total.value == pytest.approx(a + b, rel=RTOL_EXACT)
    assert block_error(curve, [1, 2]).total.value == pytest.approx(b - a, rel=RTOL_EXACT)
    assert block_error(curve, [2, 1]).total.value == pytest.approx(a, rel=RTOL_EXACT)
    opt = optimal_blocks(curve, 4)
    np.testing.assert_allclose(opt.errors, [a + b, b - a, 0.0, 0.0], rtol=RTOL_EXACT, atol=ATOL_ENTROPY)
    assert list(opt.sizes(2)) == [1, 2] and list(opt.sizes(4)) == [1, 1, 1]


@pytest.mark.parametrize("seed", range(4))
def test_dp_equals_brute_force_over_all_compositions(seed):
    L = 8
    curve = information_curve(joint_table(random_hmm(3, 2, 1.0, seed=seed), L))
    opt = optimal_blocks(curve, L + 2)
    best = np.full(L, np.inf)
    for mask in range(1 << (L - 1)):
        sizes = _composition(L, [c for c in range(1, L) if mask >> (c - 1) & 1])
        T = len(sizes)
        best[T - 1] = min(best[T - 1], block_error(curve, sizes).total.value)
    brute = np.minimum.accumulate(best)  # "at most T blocks"
    np.testing.assert_allclose(opt.errors[:L], brute, rtol=RTOL_EXACT, atol=ATOL_ENTROPY)
    assert opt.errors[L] == opt.errors[L + 1] == opt.errors[L - 1]
    for T in range(1, L + 1):
        sizes = opt.sizes(T)
        assert len(sizes) <= T and sizes.sum() == L
        assert block_error(curve, sizes).total.value == pytest.approx(opt.errors[T - 1], rel=RTOL_EXACT, abs=ATOL_ENTROPY)


def test_iid_objective_value_and_gradient():
    curve = information_curve(load_language("2gram"), 24)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=6)
    F, grad = _iid_objective(curve.z, theta)
    pi = np.exp(theta) / np.exp(theta).sum()
    sched = from_u(np.concatenate([[0.0], np.cumsum(pi)]))
    # E_tau KL = TC + L F (the telescoped form) against the per-step form of jensen_bound_from_curve
    assert curve.total_correlation + curve.length * F == pytest.approx(iid_error(curve, sched).value, rel=RTOL_EXACT)
    h = 1e-6
    fd = np.array([(_iid_objective(curve.z, theta + h * e)[0] - _iid_objective(curve.z, theta - h * e)[0]) / (2 * h)
                   for e in np.eye(6)])
    np.testing.assert_allclose(grad, fd, rtol=RTOL_GRAD, atol=RTOL_GRAD * np.abs(fd).max())


@pytest.mark.parametrize("seed", range(3))
def test_optimized_iid_schedule_is_exact_and_beats_a_fine_grid(seed):
    lang, L = random_hmm(2, 2, 1.0, seed=seed), 4
    curve = information_curve(joint_table(lang, L))
    opt = optimize_iid_schedule(curve, 2, [cosine(2)])
    enum = enumerate_output_law(lang, L, opt.schedule).kl_jensen_bound.value
    assert opt.value.value == pytest.approx(enum, rel=RTOL_EXACT, abs=ATOL_ENTROPY)
    assert all(opt.value.value <= v for v in opt.start_values.values())
    # N = 2 has one free parameter u_1: the optimum is at most the best of 2001 grid points
    grid = min(iid_error(curve, from_u([0.0, u1, 1.0])).value for u1 in np.linspace(0.0, 1.0, 2001))
    assert opt.value.value <= grid * (1 + RTOL_EXACT) + ATOL_ENTROPY


def test_optimized_iid_schedule_on_a_markov_chain_improves_on_its_starts():
    curve = information_curve(load_language("2gram"), 64)
    N = 8
    dp = optimal_blocks(curve, N)
    opt = optimize_iid_schedule(curve, N, [lz_schedule(curve, N), schedule_from_sizes(dp.sizes(N), "dp")])
    assert opt.schedule.n_steps == N and set(opt.start_values) == {"linear(N=8)", "lavenant-zanella-reading(N=8)", "dp"}
    assert opt.value.value < min(opt.start_values.values())
    assert opt.value.value == pytest.approx(jensen_bound_from_curve(curve, opt.schedule).total.value, rel=RTOL_EXACT)


def test_lz_reading_on_hand_made_curves():
    L, T = 10, 4
    linear_z = InformationCurve(np.arange(L) * 0.1, "hand")  # f(i) = 0.1 for i >= 1, f(0) = 0
    t = np.arange(1, T)
    np.testing.assert_allclose(lz_u(linear_z, T)[1:-1], (1 + (L - 1) * t / T) / L, rtol=RTOL_EXACT)
    np.testing.assert_array_equal(lz_u(InformationCurve(np.zeros(L), "hand"), T), np.arange(T + 1) / T)
    quad = InformationCurve(np.cumsum(np.arange(L) ** 2.0) - 0.0, "hand")  # f(i) = i^2: sqrt f = i
    u = lz_u(quad, T)
    assert u[0] == 0.0 and u[-1] == 1.0 and np.all(np.diff(u) > 0)
    c = np.concatenate([[0.0], np.cumsum(np.arange(L, dtype=float))])  # Phi at the nodes i/L, unnormalized
    np.testing.assert_allclose(np.interp(u * L, np.arange(L + 1), c) / c[-1], np.arange(T + 1) / T, rtol=RTOL_EXACT)


def test_sizes_from_u_keeps_blocks_non_empty():
    assert list(sizes_from_u(linear(4).u, 8)) == [2, 2, 2, 2]
    assert list(sizes_from_u([0.0, 0.01, 0.02, 1.0], 10)) == [1, 1, 8]
    assert list(sizes_from_u([0.0, 0.98, 0.99, 1.0], 10)) == [8, 1, 1]
    assert list(sizes_from_u(cosine(5).u, 5)) == [1, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="T <= L"):
        sizes_from_u(linear(6).u, 5)


def test_bad_inputs_are_refused_with_clear_errors():
    curve = InformationCurve(np.array([0.0, 0.2, 0.1]), "hand")
    with pytest.raises(ValueError, match="decreases at j = 3"):
        optimal_blocks(curve, 2)
    good = InformationCurve(np.array([0.0, 0.1, 0.2]), "hand")
    with pytest.raises(ValueError, match="sum to 2, not to the length L = 3"):
        block_error(good, [1, 1])
    with pytest.raises(ValueError, match="at least one position"):
        block_error(good, [3, 0])
    with pytest.raises(ValueError, match="length is required"):
        information_curve(load_language("2gram"))
    with pytest.raises(ValueError, match="n_steps"):
        optimal_blocks(good, 2).sizes(3)
