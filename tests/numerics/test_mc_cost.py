"""Monte Carlo's time estimate (:func:`numerics.methods.mc_seconds`) and its up-front refusal; the
``bounds`` size check reading each size from the field that carries it (issue 19)."""

from __future__ import annotations

import numpy as np
import pytest

from numerics import methods
from numerics.languages.hmm import HMM
from numerics.languages.presets import load_language
from numerics.schedules import linear
from validation.guards import GuardError, check_claim_size


def _dense_hmm(S: int, V: int = 4) -> HMM:
    rng = np.random.default_rng(0)
    T, E = rng.random((S, S)), rng.random((S, V))
    return HMM(np.full(S, 1 / S), T / T.sum(1, keepdims=True), E / E.sum(1, keepdims=True))


@pytest.fixture(autouse=True)
def default_limit(monkeypatch):
    monkeypatch.delenv(methods.MAX_SECONDS_ENV, raising=False)


def test_step_work_counts_the_multiply_adds_of_each_kind():
    assert methods.step_work(_dense_hmm(30)) == 30 * 30  # every entry of a random transition is non-zero
    assert methods.step_work(load_language("4gram")) == 8**3 * 8  # S = V^(n-1) windows, V successors each
    interval = load_language("interval")
    minimal = interval.kernel_language()
    # the interval language's minimal HMM is sparse: far fewer multiply-adds than S^2
    assert methods.step_work(interval) == np.count_nonzero(minimal.transition) < minimal.n_states**2 // 4


def test_the_estimate_is_the_stated_formula_and_scales_with_each_size():
    lang = _dense_hmm(50)
    one = methods.mc_seconds(lang, 64, 100)
    assert one == pytest.approx(methods.MC_PASSES * 100 * 64 * (methods.MC_POSITION_S + methods.MC_UNIT_S * 2500),
                                rel=1e-12)
    assert methods.mc_seconds(lang, 128, 100) == pytest.approx(2 * one, rel=1e-12)
    assert methods.mc_seconds(lang, 64, 300) == pytest.approx(3 * one, rel=1e-12)


def test_a_hopeless_run_is_refused_with_its_estimate_and_the_samples_that_fit(monkeypatch):
    lang = _dense_hmm(400)
    est = methods.mc_seconds(lang, 1024, 1000)
    assert est > methods.MC_MAX_S
    fit = int(methods.MC_MAX_S // (est / 1000))
    with pytest.raises(ValueError, match=rf"would take about .* \(rough estimate; limit 60 min\): use fewer --samples "
                                         rf"\({fit} fit the limit\)"):
        methods.choose_method("auto", lang, 1024, linear(16), 1000, name="h400")
    methods.check_mc_time(lang, 1024, fit)  # as many samples as the message says fit
    with pytest.raises(ValueError, match="would take about"):
        methods.check_mc_time(lang, 1024, fit + 1)
    monkeypatch.setenv(methods.MAX_SECONDS_ENV, str(2 * est))  # a cluster job's own limit
    choice = methods.choose_method("auto", lang, 1024, linear(16), 1000, name="h400")
    assert choice.method == "mc" and choice.as_dict()["mc_estimated_s"] == pytest.approx(est, rel=1e-12)
    monkeypatch.setenv(methods.MAX_SECONDS_ENV, "an hour")
    with pytest.raises(ValueError, match=r"MDM_THEORY_MAX_SECONDS='an hour' is not a finite number > 0"):
        methods.check_mc_time(lang, 1024, 10)


def test_exact_methods_carry_no_monte_carlo_estimate():
    choice = methods.choose_method("auto", load_language("2gram"), 4, linear(2), 1000)
    assert choice.method != "mc" and "mc_estimated_s" not in choice.as_dict()


def test_bounds_sizes_are_read_by_field_name_not_as_the_largest_integer():
    # Theorem 4.4's argument at L = 30 with N = 1500 steps: N sizes no recursion (its interval has l = 5)
    check_claim_size("4.4.argument", {"L": 30, "N": 1500, "l": 5}, exact=True)
    check_claim_size("C.5", {"l": 5, "pi": [0.5, 0.5], "N": 10**6}, exact=False)
    with pytest.raises(GuardError, match=r"C\.5 at l = 1001 .*use --l up to 1000"):
        check_claim_size("C.5", {"l": 1001, "pi": [0.5, 0.5]}, exact=False)
    with pytest.raises(GuardError, match=r"C\.1 at L = 1001 .*use --length up to 1000"):
        check_claim_size("C.1", {"L": 1001, "pi": [0.5, 0.5]}, exact=False)


def test_a_sparse_first_order_chain_is_costed_by_its_closed_form_sampler():
    from numerics.languages.hmm import NGram

    V = 400  # a sparse chain: 3 successors per token (0.75% of the table)
    rng = np.random.default_rng(1)
    cond = np.zeros((V, V))
    for s in range(V):
        cond[s, rng.choice(V, 3, replace=False)] = rng.dirichlet(np.ones(3))
    chain = NGram(2, np.full(V, 1 / V), cond)
    assert methods.step_work(chain) == min(3 * V, methods.CHAIN_WORK_PER_TOKEN * V) == 3 * V
    dense = NGram(2, np.full(V, 1 / V), np.full((V, V), 1 / V))
    assert methods.step_work(dense) == V * V
