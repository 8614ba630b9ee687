"""The sampler registry: every entry builds, its declared ranges are the ones its class enforces,
and its knob directions are what the samplers do (a registry that lied would mislead calibrate)."""

from __future__ import annotations

import pytest

from numerics.sampling.registry import DECODERS, OPTIONS, Options, build_sampler, option_takers, spec
from numerics.schedules import make_schedule

L = 4


def _needs(s):
    return {"steps": 4 if "steps" in s.needs else None,
            "schedule": make_schedule("linear", 4) if "schedule" in s.needs else None}


def _valid(s) -> dict:
    """The smallest options that build ``s``: its required ones (fast-dllm: a threshold)."""
    out = {o.name: (0.5 if o.type is float else o.choices[0]) for o in s.options if o.required}
    if s.name == "fast-dllm":
        out["threshold"] = 0.9
    if s.name == "fast-dllm-v2":  # its defaults (blocks of 32, sub-blocks of 8) do not fit L = 4
        out.update(block_length=4, sub_block=2)
    return out


@pytest.mark.parametrize("name", list(DECODERS))
def test_every_entry_builds_its_kind_with_defaults(name):
    s = spec(name)
    sampler = s.build(_valid(s), **_needs(s), length=L)
    assert isinstance(sampler, s.cls)
    assert sampler.kind == s.kind


@pytest.mark.parametrize("name", list(DECODERS))
def test_compiled_field_is_what_the_sampler_runs(name):
    """``DecoderSpec.compiled`` is the built sampler's own answer: a block decoder's ``compiled(L)`` at its defaults, and
    always for the random order and the adaptive rules (their oracle paths are the numba kernels, no generic fallback)."""
    s = spec(name)
    sampler = s.build(_valid(s), **_needs(s), length=L)
    if hasattr(sampler, "compiled"):
        assert s.compiled == sampler.compiled(L)
    else:
        assert s.kind in ("random", "adaptive")
        assert s.compiled


@pytest.mark.parametrize("name, option", [(n, o) for n, s in DECODERS.items() for o in s.options
                                          if o.low is not None or o.high is not None])
def test_declared_range_is_enforced(name, option):
    """Just outside each declared end is refused with the option's name; the end itself as declared."""
    s = spec(name)
    base = _valid(s)
    if name == "fast-dllm" and option.name == "factor":
        base = {}
    for end, is_open, step in ((option.low, option.low_open, -1), (option.high, False, +1)):
        if end is None:
            continue
        outside = end + step * (1 if option.type is int else 1e-6)
        with pytest.raises(ValueError):
            s.build({**base, option.name: outside}, **_needs(s), length=L)
        if not is_open and option.type is float:
            assert option.contains(end)
            s.build({**base, option.name: end}, **_needs(s), length=L)
        assert not option.contains(outside)


def test_misplaced_missing_and_unknown_options_are_named():
    with pytest.raises(ValueError, match="the eb decoder does not take threshold"):
        build_sampler("eb", {"gamma": 0.5, "threshold": 0.9})
    with pytest.raises(ValueError, match=r"unknown decoder option\(s\) treshold"):
        build_sampler("fast-dllm", {"treshold": 0.9})
    with pytest.raises(ValueError, match="eb needs gamma"):
        build_sampler("eb", {})
    with pytest.raises(ValueError, match="llada needs steps"):
        build_sampler("llada", {})
    with pytest.raises(ValueError, match="unknown decoder 'greedy'"):
        spec("greedy")


def test_options_mapping_is_frozen_sorted_and_hashable():
    a, b = Options({"eta": 0.1, "remdm_variant": "cap", "block_length": None}), Options(remdm_variant="cap", eta=0.1)
    assert a == b and hash(a) == hash(b) and list(a) == ["eta", "remdm_variant"]
    assert option_takers("remasking") == ("llada",)
    assert set(OPTIONS) >= {"block_length", "temperature", "threshold", "eta"}


def test_every_registered_decoder_has_a_test_row():
    """A registry entry of the decoder kind without a row in the shared table would go untested."""
    from tests.decoder_cases import CASES

    names = {n for n, s in DECODERS.items() if s.kind == "decoder"}
    assert names <= {c.name for c in CASES}


def test_threshold_rule_selects_as_fast_dllm_at_temperature_zero():
    """One rule with a parameter (registry docstring): the adaptive ``threshold`` (maxprob >= gamma, at
    least the most confident) chooses the same positions as ``fast-dllm --threshold gamma`` at ``T = 0``
    (whose score, the probability of the argmax draw, is the maxprob); they differ only in the values
    drawn (the marginal against the argmax). Checked on random marginal rows, ties included."""
    import numpy as np

    from numerics.sampling.adaptive import AdaptiveSampler, tie_priority
    from numerics.sampling.block_decoder import FastDllm, step_rows

    rng = np.random.default_rng(0)
    L, V = 6, 3
    for gamma in (0.4, 0.5, 0.7):
        a, d = AdaptiveSampler("threshold", gamma=gamma), FastDllm(threshold=gamma, temperature=0)
        prio = tie_priority(L, 0)
        for _ in range(200):
            probs = rng.dirichlet(np.ones(V) * 0.7, size=L)
            probs[rng.random(L) < 0.3] = [0.5, 0.5, 0.0]  # equal maxprobs: the tie priority decides
            masked = rng.random(L) < 0.7
            masked[rng.integers(L)] = True
            chosen, _ = a.choose(probs, masked, prio, 0)
            cand = np.flatnonzero(masked)
            rows = step_rows(probs[cand], 0)
            picked = d.select(rows, np.argmax(rows.draw_law, axis=1), None, prio[cand], 0, None)
            np.testing.assert_array_equal(chosen, np.sort(cand[picked]))
