"""The runtimes experiment's answers to the trackers' questions are computed from its own rows (never typed in):
rows with other numbers give sentences with those numbers, and a verdict that follows them."""

from validation.experiments import runtimes as rt


def _row(lang, family, config, calls, ser, **params):
    return {"language": lang, "length": 64, "family": family, "config": config, "calls": calls, "ser": ser,
            "ser_upper": None, "ppl_gap": None, "method": "mc", **params}


def test_steps_note_pairs_each_configuration_with_its_own_fewer_steps():
    view = [_row("x", "dream", "dream origin (default)", 64, 0.25, steps=64),
            _row("x", "dream", "dream origin steps=16", 16, 0.125, steps=16),
            _row("x", "dream", "dream entropy (default)", 64, 0.5, steps=64, alg="entropy"),
            _row("x", "dream", "dream entropy steps=16", 16, 0.75, steps=16, alg="entropy")]
    note = rt._steps_note(view)
    assert "dream origin on x (L = 64) 0.25 at N = L, 0.125 at N = 16" in note
    assert "dream entropy on x (L = 64) 0.5 at N = L, 0.75 at N = 16" in note
    assert note.count("dream origin on x") == 1 and note.count("dream entropy on x") == 1  # not crossed
    assert "in 1 of 2 pairs" in note  # the verdict follows the numbers: origin's SER fell here


def test_threshold_note_counts_only_the_threshold_at_n_equal_l():
    view = [_row("x", "llada2", "llada2 (default)", 60, 0.0, steps=64),
            _row("x", "llada2", "llada2 steps=32", 32, 0.5, steps=32),  # fewer steps: not the threshold's saving
            _row("x", "credit", "credit threshold=0.7", 40, 0.0, threshold=0.7)]
    note = rt._threshold_note(view)
    assert "x (L = 64): 1.6x (credit threshold=0.7)" in note


def test_duplicates_and_floor_notes_read_their_tables():
    pb = [{"task": "shuffle", "rule": "threshold", "n": 5, "parameter": 0.3, "engine": 1.0},
          {"task": "shuffle", "rule": "top-k", "n": 5, "parameter": 5.0, "engine": 0.9616}]
    note = rt._duplicates_note(pb)
    assert "n = 5" in note and "1 at tau = 0.3" in note and "0.962 at k = 5" in note
    assert rt._duplicates_note([]) is None
    floor = [{"language": "y", "length": 64, "T": T, "ser_floor": v, "kind": "exact"}
             for T, v in ((1, 0.5), (2, 0.25), (3, 0.0))]
    rows = [_row("y", "dus", "dus (default)", 24, 0.0), _row("y", "llada", "llada B=32 N=L", 64, 0.0)]
    note = rt._floor_note(floor, rows)
    assert "y (L = 64): SER 0 in 3 calls (exact)" in note and "dus (default), 24 calls" in note
