"""The real-text experiment's exact numbers (docs/findings.md section 10) and its reading of the sentence."""

from __future__ import annotations

from validation.experiments import _engine as eng
from validation.experiments import realtext


def test_ter_steps_needed_do_not_grow_with_length_on_the_char_bigram():
    """Exact: the smallest N with Jensen bound / L <= 0.1 is 6 at L = 64 and at L = 256 (findings, section 10),
    and the search's answer is a crossing (the bound at N - 1 is above the gap)."""
    lang = eng.load_language("lee-char-2gram")
    for L in (64, 256):
        iota = eng.pair_informations(lang, L)
        r = realtext._ter_steps_needed(lang, "linear", L, 0.1, iota)
        assert r["steps_needed"] == 6, (L, r)
        assert r["bound_at"] <= 0.1 < r["bound_before"]
        direct = eng.jensen_bound_exact(lang, eng.schedule_for("linear", 6), L)["value"] / L
        assert direct == r["bound_at"]


def test_the_sentence_reading_is_computed_from_the_numbers():
    cfg = realtext.Config(languages=("x",), lengths=(64, 256), n_steps=(1, 2, 4, 8, 16))
    needed = [
        {"language": "x", "length": 64, "criterion": "TER gap bound <= 0.1", "steps_needed": 6, "lo": 6, "hi": 6},
        {"language": "x", "length": 256, "criterion": "TER gap bound <= 0.1", "steps_needed": 12, "lo": 12, "hi": 12},
        {"language": "x", "length": 64, "criterion": "SER <= 0.5", "steps_needed": 4, "lo": 4, "hi": 8},
        {"language": "x", "length": 256, "criterion": "SER <= 0.5", "steps_needed": 4, "lo": 2, "hi": 8},
    ]
    ter, ser = realtext._sentence(cfg, needed)
    assert ter["ratio"] == 2.0 and ter["as_paper_says"] is False and "NOT as the paper says" in ter["reading"]
    assert ser["as_paper_says"] is None and "undecided" in ser["reading"]
    needed[3].update(steps_needed=None, lo=None, hi=None)  # not met on the grid at the longer length: grows
    assert realtext._sentence(cfg, needed)[1]["as_paper_says"] is True


def test_learned_and_oracle_rows_share_the_adaptive_rule_and_its_random_stream():
    """The learned MDM runs the topk rule through ``AsDecoder`` on the generic path, the oracle on the
    fast kernel. With the oracle's marginals behind both (a plain function is not recognized as an
    oracle), the two draw the same tokens at the same calls, so a learned-vs-oracle row pair differs
    only by the denoiser."""
    import numpy as np

    from numerics.languages.fit import fit_text
    from numerics.sampling.adaptive import make_sampler
    from numerics.sampling.denoiser import OracleDenoiser
    from validation.experiments.realtext_learned import AsDecoder

    lang = fit_text("the cat sat on the mat; the dog sat on the cat", level="char", order=2).language  # zeros too
    oracle = OracleDenoiser(lang, strict=False)  # past an impossible reveal: undefined marginals, as the kernels

    class Plain:  # the oracle's marginals behind a type the adaptive sampler does not recognize
        vocab_size = oracle.vocab_size

        def __call__(self, tokens, mask):
            return oracle(tokens, mask)

    plain = Plain()

    dec = AsDecoder(make_sampler("topk", schedule=eng.schedule_for("linear", 3)))
    assert dec.name == "topk" and dec.parameters()["n_steps"] == 3
    fast = dec.sample(oracle, 24, 7, np.random.default_rng(5), batch_size=24)
    generic = dec.sample(plain, 24, 7, np.random.default_rng(5), batch_size=24)
    np.testing.assert_array_equal(fast.tokens, generic.tokens)
    np.testing.assert_array_equal(fast.calls, generic.calls)
    assert np.all(fast.calls == 3)  # L = 7 over N = 3 linear steps: 2, 3, 2 positions, one call each


def test_untrained_learned_models_are_listed_as_missing_not_trained(tmp_path):
    """Without ``train`` (a report run without --train) the section trains nothing: the models absent
    from the cache are a missing part that names them and the flag that trains them."""
    import dataclasses

    from validation.cache import ResultCache

    cfg = dataclasses.replace(realtext.Config.tiny(), languages=(), train=False)
    out = realtext.run(cfg, cache=ResultCache(tmp_path), strict=True)
    assert out.status == "partial" and "learned" not in out.tables
    assert any("2gram-pruned MDM" in m and "2gram-pruned AR" in m and "--train" in m for m in out.missing)
    assert not (tmp_path / "train").exists()  # nothing trained
