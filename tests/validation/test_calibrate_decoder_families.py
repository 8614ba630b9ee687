"""calibrate's decoder families (validation.calibrate.family): what each setting is.

* Each family builds a valid :class:`~validation.sweep.PointConfig` whose decoder has the stated
  parameters (llada's steps a multiple of the number of blocks ``L/B``, the value being the total ``N``).
* Along each family's parameter, the cheap end costs no more expected calls than the dear end
  (exact laws on a tiny language, :func:`numerics.metrics.point_metrics`): the direction
  ``more_calls_when`` says.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from numerics.languages.presets import load_language
from numerics.metrics import point_metrics
from validation.calibrate import REMDM_DEFAULT_ETA, build_sampler, family
from validation.sweep import PointConfig

DECODER_FAMILIES = ("llada", "llada-b8", "llada-b16", "fast-dllm", "fast-dllm-factor", "fast-dllm:factor", "eb",
                    "remdm")


def test_llada_families_step_in_multiples_of_the_blocks():
    """Any block length (16 too); the value is the total N, which the label and the decoder carry."""
    base = PointConfig("2gram", 64, 1)
    for B in (None, 8, 16, 32):
        fam = family("llada" if B is None else f"llada-b{B}")
        space = fam.space(64, 8, 1 << 12)
        assert space.unit == (1 if B is None else 64 // B) and space.high == 64
        for m in (1, 3):
            N = m * space.unit
            d = fam.build(base, N).make_sampler()
            assert d.name == "llada" and d.block_length == B and d.steps == N and f"steps={N}" in d.label
    assert replace(family("llada", {"block_length": 16}), name="x") == replace(family("llada-b16"), name="x")
    assert family("remdm").build(base, 5).make_sampler().eta == REMDM_DEFAULT_ETA
    assert family("remdm", {"eta": 0.2}).build(base, 5).make_sampler().eta == 0.2
    ft = family("fast-dllm").build(base, 0.7).make_sampler()
    ff = family("fast-dllm-factor").build(base, 1.5).make_sampler()
    assert (ft.threshold, ft.factor, ff.threshold, ff.factor) == (0.7, None, None, 1.5)
    assert family("fast-dllm").parameter == "threshold" and family("fast-dllm:factor").parameter == "factor"
    fb = family("fast-dllm", {"block_length": 32, "temperature": 0.5}).build(PointConfig("2gram", 128, 1), 0.9)
    d = fb.make_sampler()
    assert (d.block_length, d.temperature, d.threshold) == (32, 0.5, 0.9)


@pytest.mark.parametrize("name, options, message", [
    ("bogus", None, "unknown sampler family"),
    ("fast-dllm:gamma", None, "knobs are threshold, factor"),
    ("fast-dllm", {"threshold": 0.9}, "do not fix it"),
])
def test_bad_families_are_named(name, options, message):
    with pytest.raises(ValueError, match=message):
        family(name, options)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("lang") / "two.npz"
    np.savez(path, order=np.int64(2), initial=np.array([0.6, 0.4]), conditional=np.array([[0.7, 0.3], [0.0, 1.0]]))
    return str(path)


@pytest.mark.parametrize("name", [n for n in DECODER_FAMILIES if not n.startswith(("llada-b", "fast-dllm:"))])
def test_the_dear_end_costs_at_least_the_cheap_end(tiny, name):
    fam, L = family(name), 4
    lang = load_language(tiny)
    low, high = fam.space(L, lang.vocab_size, 8).grid(2)
    ends = (low, high) if fam.more_calls_when == "higher" else (high, low)
    calls = [point_metrics(lang, L, build_sampler(fam, PointConfig(tiny, L, 1), v), method="dp").calls.value
             for v in ends]
    assert calls[0] < calls[1], (name, ends, calls)
