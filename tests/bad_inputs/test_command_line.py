"""The bad-input suite (issue 13): every bad input is refused with an error that names the problem.

Each row of :data:`CASES` is one distinct bad input to the ``mdm-theory`` command line; each is
checked with ``--json`` (a strict-JSON error object on stdout) and without (``Error: ...`` on
stderr), always a non-zero exit and no traceback (:func:`tests.bad_inputs._helpers.refused`).
The other modules of ``tests/bad_inputs/`` (the one home of the bad-input suite) hold damaged
checkpoints, corrupt caches, shared output folders, killed runs, a peaked HMM at ``L = 4096``, the
guards of issue 19 and the reliability cases of issue 35. ``{d}`` in an argument is the folder of
bad files made by :func:`bad_files`.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from numerics.schedules import MAX_STEPS, Schedule, from_u, make_schedule
from tests.bad_inputs._helpers import refused

GOOD_HMM = {"initial": np.array([0.5, 0.5]), "transition": np.array([[0.9, 0.1], [0.2, 0.8]]),
            "emission": np.array([[0.7, 0.3], [0.4, 0.6]])}
GOOD_2GRAM = {"order": np.int64(2), "initial": np.array([0.5, 0.5]), "conditional": np.array([[0.9, 0.1], [0.2, 0.8]])}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """A folder of broken language files (and a few other things that are not language files)."""
    d = tmp_path_factory.mktemp("bad_files")

    def npz(name, **arrays):
        np.savez(d / f"{name}.npz", **arrays)

    npz("non_stochastic", **{**GOOD_HMM, "transition": np.array([[0.9, 0.2], [0.2, 0.8]])})
    npz("negative", **{**GOOD_HMM, "emission": np.array([[1.2, -0.2], [0.4, 0.6]])})
    npz("nan", **{**GOOD_HMM, "initial": np.array([np.nan, 0.5])})
    npz("inf_ngram", **{**GOOD_2GRAM, "conditional": np.array([[np.inf, 0.1], [0.2, 0.8]])})
    npz("transition_shape", **{**GOOD_HMM, "transition": np.eye(3)})
    npz("emission_rows", **{**GOOD_HMM, "emission": np.full((3, 2), 0.5)})
    npz("transition_1d", **{**GOOD_HMM, "transition": np.array([0.5, 0.5])})
    npz("ngram_rows", **{**GOOD_2GRAM, "order": np.int64(3)})  # a 3-gram needs V^2 = 4 rows
    npz("ngram_initial", **{**GOOD_2GRAM, "initial": np.full(3, 1 / 3)})
    npz("wrong_keys", weights=np.eye(2))
    npz("no_arrays")
    npz("zero_size", initial=np.zeros(0), transition=np.zeros((0, 0)), emission=np.zeros((0, 2)))
    npz("order_1", **{**GOOD_2GRAM, "order": np.int64(1)})
    npz("order_2_5", **{**GOOD_2GRAM, "order": np.float64(2.5)})
    npz("order_array", **{**GOOD_2GRAM, "order": np.array([2, 3])})
    npz("strings", **{**GOOD_HMM, "initial": np.array(["a", "b"])})
    npz("complex", **{**GOOD_HMM, "initial": np.array([0.5 + 0.5j, 0.5])})
    npz("objects", **{**GOOD_HMM, "initial": np.array([{"p": 0.5}, 0.5], dtype=object)})
    (d / "text.npz").write_text("initial 0.5 0.5\n")
    (d / "empty.npz").write_bytes(b"")
    np.save(d / "array.npy", np.eye(2))
    npz("whole", **GOOD_HMM)
    whole = (d / "whole.npz").read_bytes()
    (d / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    (d / "folder.npz").mkdir()
    (d / "a_file").write_text("not a folder\n")
    (d / "out_dir").mkdir()
    (d / "counterexamples_dir").mkdir()
    return d


L3N2 = ["-L", "3", "-N", "2"]


def lang(name: str) -> list[str]:
    """``exact`` on the language file ``{d}/NAME``."""
    return ["exact", "--language", f"{{d}}/{name}", *L3N2]


CASES = [
    # --- language files ------------------------------------------------------------------------------
    ("non-stochastic rows", lang("non_stochastic.npz"), r"transition row 0 sums to 1\.1, not 1 .*not a stochastic matrix"),
    ("negative entry", lang("negative.npz"), r"emission has a negative entry -0\.2 at index \(0, 1\)"),
    ("NaN entry", lang("nan.npz"), r"initial has a non-finite entry at index \(0,\)"),
    ("inf in an n-gram", lang("inf_ngram.npz"), r"conditional has a non-finite entry"),
    ("transition of the wrong shape", lang("transition_shape.npz"), r"transition has shape \(3, 3\), expected \(2, 2\)"),
    ("emission with too many rows", lang("emission_rows.npz"), r"emission has 3 rows, expected 2"),
    ("one-dimensional transition", lang("transition_1d.npz"), r"transition must be 2-dimensional"),
    ("n-gram rows do not match its order", lang("ngram_rows.npz"), r"conditional has 2 rows, expected V\^\(n-1\) = 2\^2 = 4"),
    ("n-gram initial of the wrong size", lang("ngram_initial.npz"), r"initial has shape \(3,\), expected \(2,\)"),
    ("wrongly keyed file", lang("wrong_keys.npz"), r"holds keys \['weights'\]; expected initial/transition/emission"),
    ("npz without arrays", lang("no_arrays.npz"), r"holds keys \[\]"),
    ("arrays of size zero", lang("zero_size.npz"), r"initial is empty"),
    ("n-gram order 1", lang("order_1.npz"), r"order must be an integer >= 2, got 1"),
    ("n-gram order 2.5", lang("order_2_5.npz"), r"order must be an integer >= 2, got 2\.5"),
    ("n-gram order as an array", lang("order_array.npz"), r"order in .* must be one integer, got an array of shape \(2,\)"),
    ("strings for probabilities", lang("strings.npz"), r"initial is not an array of real numbers"),
    ("complex probabilities", lang("complex.npz"), r"initial must hold real numbers"),
    ("pickled objects", lang("objects.npz"), r"cannot read language file .*Object arrays cannot be loaded"),
    ("a text file named .npz", lang("text.npz"), r"not an \.npz archive .*another format"),
    ("an empty file", lang("empty.npz"), r"not an \.npz archive .*it is empty"),
    ("a .npy instead of a .npz", lang("array.npy"), r"not an \.npz archive"),
    ("a truncated npz", lang("truncated.npz"), r"not an \.npz archive .*truncated"),
    ("a directory as a language file", lang("folder.npz"), r"is a directory, not a language \.npz file"),
    ("a missing language file", lang("missing.npz"), r"neither a language preset nor an existing \.npz file"),
    ("a broken language file for train", ["train", "--language", "{d}/nan.npz", "--config", "tiny", "--out", "{d}/run"],
     r"initial has a non-finite entry"),
    # --- presets and schedules ----------------------------------------------------------------------------
    ("unknown preset", ["exact", "--language", "5gram", *L3N2], r"'5gram' is neither a language preset.*presets: 2gram"),
    ("unknown SER language", ["exact", "--language", "2gram", "--ser-language", "2gram-prunned", *L3N2],
     r"'2gram-prunned' is neither a language preset"),
    ("interval length 1", ["exact", "--language", "interval-l1", *L3N2], r"interval length l must be an integer in 2\.\.7, got 1"),
    ("unknown preset to export", ["languages", "export", "hmm-2", "{d}/x.npz"], r"unknown language preset 'hmm-2'"),
    ("unknown preset to summarize", ["languages", "--language", "4-gram"], r"'4-gram' is neither a language preset"),
    ("unknown schedule", ["exact", "--language", "2gram", *L3N2, "--schedule", "cosinus"],
     r"unknown schedule 'cosinus'; known: \['cosine', 'linear', 'loglinear', 'mdlm', 'polynomial'\]"),
    ("unknown schedule for bounds", ["bounds", "--lemma", "C.5.jensen", "--N", "4", "--l", "5", "--schedule", "log"],
     r"'log' is not one of 'cosine', 'linear', 'loglinear', 'mdlm', 'polynomial'"),
    ("unknown method", ["exact", "--language", "2gram", *L3N2, "--method", "exact"], r"'exact' is not one of 'auto'"),
    # --- sizes: L, N <= 0, and too large for the method ---------------------------------------------------
    ("L = 0", ["exact", "--language", "2gram", "-L", "0", "-N", "2"], r"length must be an integer >= 1, got 0"),
    ("L < 0 in a sweep", ["sweep", "--languages", "2gram", "--lengths", "-3", "-N", "2", "--out", "{d}/t.jsonl"],
     r"length must be an integer >= 1, got -3"),
    ("N = 0", ["exact", "--language", "2gram", "-L", "3", "-N", "0"], r"steps must be an integer >= 1, got 0"),
    ("N < 0", ["exact", "--language", "2gram", "-L", "3", "-N", "-1"], r"steps must be an integer >= 1, got -1"),
    ("N = 0 for bounds", ["bounds", "--lemma", "C.5.jensen", "--N", "0", "--l", "5"], r"0 is not in the range x>=1"),
    ("L = 0 for steps-needed", ["steps-needed", "--language", "2gram", "-L", "0", "--metric", "ser", "--target", "0.1"],
     r"0 is not in the range x>=1"),
    ("N beyond any schedule", ["exact", "--language", "2gram", "-L", "3", "-N", str(10**11)],
     r"N = 100000000000 steps is too many: the schedule alone would need 745 GiB"),
    ("N beyond any schedule for bounds", ["bounds", "--lemma", "C.5.jensen", "--N", str(10**11), "--l", "5"],
     r"steps is too many.*GiB"),
    ("L too large for Monte Carlo", ["exact", "--language", "2gram", "-L", str(10**8), "-N", "8", "--samples", "100000"],
     r"needs about 372529\.0 GiB of arrays \(limit 8 GiB\)"),
    ("L too large for the DP", ["exact", "--language", "2gram", "-L", "40", "-N", "8", "--method", "dp"],
     r"--method dp cannot compute 2gram at L = 40, N = 8: .*words > .*estimated 10\^\d+ s"),
    ("L too large to enumerate", ["exact", "--language", "2gram", "-L", "40", "-N", "8", "--method", "enumerate"],
     r"--method enumerate cannot compute .*step assignments > .*estimated"),
    ("no closed form", ["exact", "--language", "2gram", "-L", "10", "-N", "8", "--method", "closed-form"],
     r"no closed form for 2gram \(only the interval language has one\)"),
    ("closed form needs l | L", ["exact", "--language", "interval", "-L", "41", "-N", "8", "--method", "closed-form"],
     r"needs l = 5 to divide L = 41"),
    ("L too large to summarize", ["languages", "--language", "interval", "--length", str(10**7), "--samples", "2"],
     r"summarizing interval at L = 10000000 \(544 states, 2 samples\) needs about 83\.7 GiB"),
    ("L too large for steps-needed", ["steps-needed", "--language", "2gram", "-L", str(10**9), "--metric", "ter",
                                      "--target", "9"], r"needs about .* GiB of arrays \(limit 8 GiB\)"),
    # --- samples, seeds, targets ----------------------------------------------------------------------------
    ("--samples 0", ["exact", "--language", "2gram", *L3N2, "--samples", "0"], r"samples must be an integer >= 1, got 0"),
    ("one Monte Carlo sample", ["exact", "--language", "2gram", *L3N2, "--method", "mc", "--samples", "1"],
     r"Monte Carlo needs samples >= 2"),
    ("--samples 0 in a sweep", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--samples", "0",
                                "--out", "{d}/t.jsonl"], r"samples must be an integer >= 1, got 0"),
    ("--samples 1 to summarize", ["languages", "--samples", "1"], r"1 is not in the range x>=2"),
    ("--samples 0 for steps-needed", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "ser", "--target",
                                      "0.1", "--samples", "0"], r"0 is not in the range x>=2"),
    ("--samples 0 to evaluate", ["evaluate", "{d}/whole.npz", "--samples", "0"], r"0 is not in the range x>=1"),
    ("--batch-size 0", ["exact", "--language", "2gram", *L3N2, "--batch-size", "0"], r"batch_size must be an integer >= 1"),
    ("negative seed", ["exact", "--language", "2gram", *L3N2, "--seed", "-1"], r"seed must be an integer >= 0, got -1"),
    ("negative target", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "ser", "--target", "-0.5"],
     r"the target must be a finite number >= 0, got -0\.5"),
    ("NaN target", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "kl", "--target", "nan"],
     r"the target must be a finite number >= 0, got nan"),
    ("TER target below the data's TER", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "ter",
                                         "--target", "1.0"], r"is the floor of every sampler's TER"),
    ("--confidence 1", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "ser", "--target", "0.1",
                        "--confidence", "1"], r"1\.0 is not in the range 0\.5<x<1"),
    # --- --pi and lemma ids -----------------------------------------------------------------------------------
    ("--pi with a word", ["bounds", "--lemma", "C.5.jensen", "--pi", "0.3,abc", "--l", "5"],
     r"Invalid value for '--pi': '0\.3,abc' must be comma-separated numbers or fractions p/q"),
    ("--pi with 1/0", ["bounds", "--lemma", "C.5.jensen", "--pi", "1/0,1", "--l", "5"], r"'1/0,1' must be comma-separated"),
    ("--pi with an empty entry", ["bounds", "--lemma", "C.5.jensen", "--pi", "0.5,,0.5", "--l", "5"],
     r"'0\.5,,0\.5' must be comma-separated"),
    ("--pi empty", ["bounds", "--lemma", "C.5.jensen", "--pi", "", "--l", "5"], r"'--pi': '' must be comma-separated"),
    ("--pi not summing to 1", ["bounds", "--lemma", "C.5.jensen", "--pi", "0.3,0.3", "--l", "5"],
     r"pi must sum to 1 exactly, got 3/5"),
    ("--pi with a negative step (a non-monotone schedule)", ["bounds", "--lemma", "C.5.jensen", "--pi", "-0.3,1.3",
                                                              "--l", "5"], r"pi entries must lie in \[0, 1\]"),
    ("unknown lemma to list", ["bounds", "--lemma", "Z.99"], r"no claim matches 'Z\.99'"),
    ("unknown lemma to evaluate", ["bounds", "--lemma", "Z.99", "--N", "4"], r"unknown claim 'Z\.99'; known: 4\.2"),
    ("unknown lemma to check", ["check", "--lemma", "Q"], r"no claim matches 'Q'"),
    ("unknown lemma to search", ["counterexamples", "--lemma", "Z.99", "--out", "{d}/ce.json"], r"no claim matches 'Z\.99'"),
    ("a lemma without its values", ["bounds", "--lemma", "B.11", "--L", "10"], r"B\.11 needs the options --n, --u-prev, --pi-i"),
    ("a lemma given a value it does not take", ["bounds", "--lemma", "B.11", "--N", "4"], r"B\.11 does not take --n-steps"),
    ("--schedule for a lemma without steps", ["bounds", "--lemma", "A.1", "--schedule", "cosine"],
     r"A\.1 takes no step probabilities, so no --schedule"),
    # --- output paths (root writes anywhere: these fail for root too) ----------------------------------------
    ("sweep table under a regular file", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2",
                                          "--out", "{d}/a_file/t.jsonl"], r"a_file is a file, not a folder"),
    ("sweep table that is a directory", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2",
                                         "--out", "{d}/out_dir"], r"is a directory"),
    ("sweep table that is a device", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--out", os.devnull],
     r"it is a character device, not a regular file"),
    ("report folder under a regular file", ["report", "--tiny", "--only", "lemmas", "--out", "{d}/a_file/report"],
     r"cannot create .*a_file/report: .*a_file is a file, not a folder"),
    ("report folder that is a file", ["report", "--tiny", "--only", "lemmas", "--out", "{d}/a_file"], r"is a file"),
    ("report cache under a regular file", ["report", "--tiny", "--only", "lemmas", "--out", "{d}/out_dir",
                                           "--cache", "{d}/a_file/cache"], r"a_file is a file, not a folder"),
    ("export under a regular file", ["languages", "export", "2gram", "{d}/a_file/2gram.npz"], r"a_file is a file, not a folder"),
    ("counterexamples file that is a directory", ["counterexamples", "--lemma", "A.1", "--budget", "1",
                                                  "--out", "{d}/counterexamples_dir"], r"is a directory"),
    ("counterexamples under a regular file", ["counterexamples", "--lemma", "A.1", "--budget", "1",
                                              "--out", "{d}/a_file/ce.json"], r"a_file is a file, not a folder"),
    ("train folder under a regular file", ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "1",
                                           "--no-progress", "--out", "{d}/a_file/run"], r"a_file is a file, not a folder"),
    # --- sweep grids -------------------------------------------------------------------------------------------
    ("empty sweep grid", ["sweep", "--languages", ",", "--lengths", "3", "-N", "2", "--out", "{d}/t.jsonl"],
     r"the grid is empty"),
    ("steps that are not integers", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "a,b", "--out", "{d}/t.jsonl"],
     r"not a comma-separated list of integers: 'a,b'"),
    ("an ellipsis that reaches nothing", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "8,16,...,100",
                                          "--out", "{d}/t.jsonl"], r"neither a doubling nor an arithmetic pattern"),
    ("--scheduler without dask", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--out", "{d}/t.jsonl",
                                  "--scheduler", "tcp://127.0.0.1:1"], r"--scheduler needs --executor dask"),
    ("training steps 0", ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "0", "--out", "{d}/run"],
     r"steps must be an integer >= 1, got 0"),
]

#: Issue 13 asks for at least 45 distinct bad inputs and faults; this table holds the command-line
#: ones (the checkpoint, cache, concurrency and kill faults in tests/bad_inputs/ come on top).
MIN_CASES = 45


def test_the_table_holds_enough_distinct_bad_inputs():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids), "two cases share an id"
    assert len({tuple(c[1]) for c in CASES}) == len(CASES), "two cases give the same arguments"
    assert len(CASES) >= MIN_CASES


@pytest.mark.parametrize("args, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_refused_with_a_named_error(bad_files, args, pattern):
    refused([a.replace("{d}", str(bad_files)) for a in args], pattern)


def test_nothing_is_written_when_an_output_path_is_refused(bad_files):
    """A refused output path leaves nothing behind: no table, no lock, no flat copies."""
    before = sorted(p.name for p in bad_files.iterdir())
    refused(["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--out", bad_files / "out_dir"], r"is a directory")
    refused(["exact", "--language", bad_files / "nan.npz", *L3N2], r"non-finite")
    assert sorted(p.name for p in bad_files.iterdir()) == before


# --- user schedules (the API: the command line takes schedule families and --pi) ----------------------------

@pytest.mark.parametrize("u, pattern", [
    ([0.0, 0.6, 0.4, 1.0], r"schedule is not monotone: u_2 = 0\.4 < u_1 = 0\.6"),
    ([0.0, 0.5, 0.9], r"u_N must be 1"),
    ([0.0, np.nan, 1.0], r"u has a non-finite entry at step 1"),
    ([0.0, 1.5, 1.0], r"schedule is not monotone"),
    ([], r"u must be a vector u_0\.\.u_N with N >= 1 steps"),
], ids=["decreasing", "not ending at 1", "NaN", "above 1", "no steps"])
def test_a_bad_user_schedule_is_refused(u, pattern):
    with pytest.raises(ValueError, match=pattern):
        from_u(u)


def test_a_schedule_not_starting_at_zero_and_hopeless_step_counts_are_refused():
    with pytest.raises(ValueError, match=r"u_0 must be 0"):
        Schedule(np.array([0.1, 0.5, 1.0]))
    with pytest.raises(ValueError, match=r"N must be an integer >= 1, got 0"):
        make_schedule("linear", 0)
    with pytest.raises(ValueError, match=r"N = \d+ steps is too many: the schedule alone would need 128 GiB"):
        make_schedule("cosine", 16 * 2**30)  # refused before allocating (N+1) float64s
    assert make_schedule("linear", MAX_STEPS // 4096).n_steps == MAX_STEPS // 4096
    assert math.isclose(make_schedule("linear", 4).u[-1], 1.0)
