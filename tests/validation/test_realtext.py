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
