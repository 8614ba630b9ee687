"""calibrate's decoder families (validation.calibrate, appended to FAMILIES): what each setting is.

* Each family builds a valid :class:`~validation.sweep.PointConfig` whose decoder has the stated
  parameters (llada's steps a multiple of the number of blocks ``L/B``).
* Along each family's parameter, the cheap end costs no more expected calls than the dear end
  (exact laws on a tiny language, :func:`numerics.metrics.point_metrics`): the direction
  ``more_calls_when`` says.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.languages.presets import load_language
from numerics.metrics import point_metrics
from validation.calibrate import LLADA_BLOCK_LENGTHS, REMDM_DEFAULT_ETA, build_sampler, family
from validation.sweep import PointConfig

DECODER_FAMILIES = ("llada", *(f"llada-b{B}" for B in LLADA_BLOCK_LENGTHS), "fast-dllm", "fast-dllm-factor", "eb",
                    "remdm")


def test_llada_families_step_in_multiples_of_the_blocks():
    base = PointConfig("2gram", 64, 1)
    for B in (None, *LLADA_BLOCK_LENGTHS):
        fam = family("llada" if B is None else f"llada-b{B}")
        for v in (1, 3):
            d = fam.build(base, v).make_sampler()
            assert d.name == "llada" and d.block_length == B and d.steps == v * (1 if B is None else 64 // B)
    assert family("remdm").build(base, 5).make_sampler().eta == REMDM_DEFAULT_ETA
    assert family("remdm").build(PointConfig("2gram", 64, 1, sampler="remdm", eta=0.2), 5).make_sampler().eta == 0.2
    ft = family("fast-dllm").build(base, 0.7).make_sampler()
    ff = family("fast-dllm-factor").build(base, 1.5).make_sampler()
    assert (ft.threshold, ft.factor, ff.threshold, ff.factor) == (0.7, None, None, 1.5)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("lang") / "two.npz"
    np.savez(path, order=np.int64(2), initial=np.array([0.6, 0.4]), conditional=np.array([[0.7, 0.3], [0.0, 1.0]]))
    return str(path)


@pytest.mark.parametrize("name", [n for n in DECODER_FAMILIES if not n.startswith("llada-b")])
def test_the_dear_end_costs_at_least_the_cheap_end(tiny, name):
    fam, L = family(name), 4
    lang = load_language(tiny)
    low, high = fam.range_for(L, lang.vocab_size, 8)
    ends = (low, high) if fam.more_calls_when == "higher" else (high, low)
    calls = [point_metrics(lang, L, build_sampler(fam, PointConfig(tiny, L, 1), v), method="dp").calls.value
             for v in ends]
    assert calls[0] < calls[1], (name, ends, calls)
