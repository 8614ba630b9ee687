"""Brute-force output law of the factorized oracle sampler: hand-derived fixtures and invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.exact.enumerate import (
    enumerate_metrics,
    enumerate_output_law,
    instance_output_law,
)
from numerics.exact.joint_table import all_sequences, joint_table, masked_marginal_table
from numerics.exact.output_law import law_metrics
from numerics.inference.forward_backward import forward_backward_numpy
from numerics.languages.hmm import HMM
from numerics.sampling.denoiser import OracleDenoiser
from numerics.schedules import from_u, linear
from tests._exact_helpers import assume_representable
from tests.strategies import schedules, small_hmms, small_ngrams
from tests.tolerances import ATOL_METRIC, ATOL_ZERO, RTOL_EXACT


def _bits_equal() -> np.ndarray:
    """q(0,0) = q(1,1) = 1/2: two perfectly correlated fair bits."""
    return np.array([[0.5, 0.0], [0.0, 0.5]])


def test_hand_fixture_two_correlated_bits_one_step():
    # N = 1: both bits drawn independently from their marginals (1/2, 1/2): p uniform on {0,1}^2.
    # KL = sum_q q log(q/p) = log(1/2 / 1/4) = log 2; SER = p(01) + p(10) = 1/2;
    # the only instance is the mixture itself, so the Jensen bound equals the KL.
    m = enumerate_metrics(_bits_equal(), None, linear(1))
    assert m.kl.value == pytest.approx(math.log(2), rel=RTOL_EXACT)
    assert m.kl_jensen_bound.value == pytest.approx(math.log(2), rel=RTOL_EXACT)
    assert m.ser.value == pytest.approx(0.5, rel=RTOL_EXACT)
    assert m.ter_data.value == pytest.approx(math.sqrt(2), rel=RTOL_EXACT)  # exp(H/L) = exp(log2 / 2)
    assert m.ter.value == pytest.approx(2.0, rel=RTOL_EXACT)  # exp((log 2 + log 2) / 2)
    assert m.gen_ppl.value == math.inf  # p leaves the support
    assert m.kl.method == "enumerate" and m.kl.stderr == 0.0


def test_hand_fixture_two_correlated_bits_two_steps():
    # N = 2, linear: pi = (1/2, 1/2). Instances: both at one step (prob 1/4 + 1/4) -> product law;
    # one at each step (prob 1/2) -> the second bit copies the first -> p = q. Hence
    # p = 1/2 * uniform + 1/2 * q: p(00) = p(11) = 3/8, p(01) = p(10) = 1/8.
    # KL = log((1/2)/(3/8)) = log(4/3); SER = 1/4; Jensen bound = 1/2 * log 2 + 1/2 * 0.
    # The SER certificate 1 - exp(-KL) = 1 - 3/4 = 1/4 is tight here.
    result = enumerate_output_law(_bits_equal(), None, linear(2))
    np.testing.assert_allclose(result.law.p, [[3 / 8, 1 / 8], [1 / 8, 3 / 8]], rtol=RTOL_EXACT)
    m = law_metrics(result.law, result.kl_jensen_bound)
    assert m.kl.value == pytest.approx(math.log(4 / 3), rel=RTOL_EXACT)
    assert m.log_ter_gap.value == pytest.approx(math.log(4 / 3) / 2, rel=RTOL_EXACT)
    assert m.ser.value == pytest.approx(0.25, rel=RTOL_EXACT)
    assert m.ser_kl_certificate.value == pytest.approx(0.25, rel=RTOL_EXACT)
    assert m.kl_jensen_bound.value == pytest.approx(math.log(2) / 2, rel=RTOL_EXACT)
    assert result.n_instances == 4 and result.n_partitions == 3


def test_hand_fixture_undefined_branches():
    # q uniform on {000, 111}, N = 2 linear: 8 instances of prob 1/8 each.
    # - all three at one step (2 instances): product of marginals, uniform 1/8 on {0,1}^3;
    # - a singleton first (3 instances): the other two copy it, p = q;
    # - a pair first (3 instances): the pair disagrees with prob 1/2, then the oracle is undefined
    #   for the last bit; otherwise it is copied, giving q with total weight 1/2.
    # p(000) = 2/8 * 1/8 + 3/8 * 1/2 + 3/8 * 1/4 = 10/32; undefined = 3/8 * 1/2 = 3/16;
    # the six invalid sequences get 2/8 * 1/8 = 1/32 each; SER = 6/32 + 3/16 = 3/8.
    q = np.zeros((2, 2, 2))
    q[0, 0, 0] = q[1, 1, 1] = 0.5
    law = enumerate_output_law(q, None, linear(2)).law
    assert law.undefined_mass == pytest.approx(3 / 16, rel=RTOL_EXACT)
    expected = np.full(8, 1 / 32)
    expected[[0, 7]] = 10 / 32
    np.testing.assert_allclose(law.p.ravel(), expected, rtol=RTOL_EXACT)
    assert law_metrics(law).ser.value == pytest.approx(3 / 8, rel=RTOL_EXACT)
    # the samplers' convention: the last bit of an undefined branch is uniform. The branch has the
    # pair's disagreeing values (01 or 10 on the pair, prob 1/4 each within the branch), so each
    # undefined branch (weight 3/8 * 1/2) puts 1/4 * 1/2 on each of 4 invalid sequences containing
    # the disagreeing pair: pairs (0,1), (0,2), (1,2) each cover 4 of the 6 invalid sequences.
    uniform = enumerate_output_law(q, None, linear(2), undefined="uniform").law
    assert uniform.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    np.testing.assert_allclose(uniform.p.ravel()[[0, 7]], 10 / 32, rtol=RTOL_EXACT)
    # each invalid x: 1/32 (from the one-step instances) + 2 pairs disagree in x, each 1/8 * 1/4 * 1/2
    np.testing.assert_allclose(uniform.p.ravel()[1:7], 1 / 32 + 2 * (1 / 8) * (1 / 4) * (1 / 2), rtol=RTOL_EXACT)
    assert law_metrics(uniform).ser.value == pytest.approx(3 / 8, rel=RTOL_EXACT)


def test_one_step_is_the_product_of_marginals_and_length_one_is_exact():
    hmm = HMM(np.array([0.3, 0.7]), np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([[0.6, 0.4], [0.1, 0.9]]))
    q = joint_table(hmm, 3)
    p = enumerate_output_law(hmm, 3, linear(1)).law.p
    marg = [q.sum(axis=tuple(k for k in range(3) if k != j)) for j in range(3)]
    np.testing.assert_allclose(p, np.einsum("a,b,c->abc", *marg), rtol=RTOL_EXACT)
    m = enumerate_metrics(hmm, 1, linear(5))  # one position: every instance reveals it from q
    assert abs(m.kl.value) <= ATOL_ZERO and m.ser.value == 0.0


def test_joint_table_matches_the_forward_pass():
    hmm = HMM(np.array([0.5, 0.5]), np.array([[0.7, 0.3], [0.4, 0.6]]), np.array([[0.2, 0.8], [0.9, 0.1]]))
    x = all_sequences(2, 4)
    loglik = forward_backward_numpy(hmm, x, np.zeros_like(x, dtype=bool)).loglik
    np.testing.assert_allclose(joint_table(hmm, 4).ravel(), np.exp(loglik), rtol=RTOL_EXACT)
    Q = masked_marginal_table(joint_table(hmm, 4))
    assert Q.shape == (3,) * 4 and Q[(2,) * 4] == pytest.approx(1.0, rel=RTOL_EXACT)


@settings(max_examples=15)
@given(hmm=small_hmms(max_states=3, max_vocab=2), data=st.data())
def test_instance_law_equals_sequential_oracle_draws(hmm, data):
    """p(x | tau) from table marginals == product of forward-backward posteriors (the sampler's oracle)."""
    L = 3
    order = data.draw(st.permutations(range(L)))
    cut = data.draw(st.integers(1, L))
    partition = [list(order[:cut]), list(order[cut:])] if cut < L else [list(order)]
    inst = instance_output_law(hmm, L, partition)
    x = all_sequences(hmm.vocab_size, L)
    q = joint_table(hmm, L).ravel()
    oracle = OracleDenoiser(hmm, backend="numpy")
    expected = np.ones(x.shape[0])
    for b in range(x.shape[0]):
        revealed: list[int] = []
        for block in partition:
            mask = np.ones((1, L), dtype=bool)
            mask[0, revealed] = False
            if revealed and q.reshape((hmm.vocab_size,) * L).sum(
                axis=tuple(j for j in range(L) if j not in revealed)
            )[tuple(x[b, sorted(revealed)])] == 0:
                expected[b] = 0.0  # undefined branch: not part of p
                break
            probs = oracle(x[b : b + 1], mask)[0]
            expected[b] *= np.prod([probs[j, x[b, j]] for j in block])
            revealed += block
    np.testing.assert_allclose(inst.p.ravel(), expected, rtol=RTOL_EXACT, atol=ATOL_ZERO)


@given(lang=st.one_of(small_hmms(max_states=3, max_vocab=2), small_ngrams(max_order=3, max_vocab=2)), schedule=schedules(max_steps=3))
def test_invariants(lang, schedule):
    L = 3
    assume_representable(lang, L)
    result = enumerate_output_law(lang, L, schedule)
    law = result.law
    m = law_metrics(law, result.kl_jensen_bound)
    assert np.all(law.p >= 0)
    assert law.p.sum() + law.undefined_mass == pytest.approx(1.0, rel=RTOL_EXACT)
    # SER computed from the outside mass equals 1 - p(supp q)
    assert m.ser.value == pytest.approx(1.0 - law.p[law.q > 0].sum(), abs=1e-12)
    assert m.kl.value >= -ATOL_METRIC
    # Lemma B.2: KL of the mixture <= mean KL of the instances
    assert m.kl.value <= m.kl_jensen_bound.value + ATOL_METRIC
    # SER certificate (docs/methods/exact.md): SER <= 1 - exp(-KL)
    assert m.ser.value <= m.ser_kl_certificate.value + 1e-12
    assert math.isfinite(m.kl.value)  # the oracle sampler never gives a supported x probability 0


def test_refuses_too_many_instances():
    with pytest.raises(ValueError, match="numerics.exact.dp"):
        enumerate_output_law(_bits_equal(), None, linear(3), max_instances=8)
    with pytest.raises(ValueError, match="ordered partition"):
        instance_output_law(_bits_equal(), None, [[0], [0, 1]])
    with pytest.raises(ValueError, match="length is required"):
        enumerate_output_law(HMM(np.ones(1), np.ones((1, 1)), np.ones((1, 1))), None, from_u([0.0, 1.0]))


def test_underflow_fails_loudly():
    # q(1, 1) = 1e-200: p(1, 1) = q_1(1) q_2(1) ~ 1e-400 underflows at N = 1, while q(1,1) > 0
    q = np.array([[1.0 - 2e-200, 1e-200], [1e-200 / 2, 1e-200 / 2]])
    q = q / q.sum()
    with pytest.raises(FloatingPointError, match="underflow"):
        enumerate_output_law(q, None, linear(1))
