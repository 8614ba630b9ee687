"""``mdm-theory languages fit``: the written file, its use by other commands, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from numerics.languages.fit import fit_text, read_fit_provenance
from numerics.languages.hmm import load_language_file
from tests.strict_json import strict_json
from validation.cli import main


def _fit(tmp_path, text: bytes, *args: str):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(text)
    out = tmp_path / "lang.npz"
    res = CliRunner().invoke(main, ["languages", "fit", str(corpus), "--out", str(out), *args])
    return res, out


def test_fit_writes_the_language_with_its_provenance(tmp_path):
    res, out = _fit(tmp_path, b"abcab", "--level", "char", "--order", "2", "--json")
    assert res.exit_code == 0, res.output
    data = strict_json(res.output)
    assert data["provenance"]["vocabulary"] == ["a", "b", "c"] and data["summary"]["distinct_ngrams"] == 4
    lang = load_language_file(out)
    want = fit_text("abcab", level="char", order=2).language
    np.testing.assert_array_equal(lang.conditional, want.conditional)
    assert read_fit_provenance(out).corpus_sha256 == data["provenance"]["corpus_sha256"]
    # its own file may be overwritten; the text output names the summary
    res2, _ = _fit(tmp_path, b"abcab", "--level", "char", "--smoothing", "add-k", "--k", "0.5")
    assert res2.exit_code == 0, res2.output
    assert "entropy rate" in res2.output and "zero transitions" in res2.output


def test_exact_and_sweep_take_a_fitted_file(tmp_path):
    res, out = _fit(tmp_path, b"the cat sat on the mat. the dog sat on the cat.", "--level", "word", "--vocab-cap", "4")
    assert res.exit_code == 0, res.output
    runner = CliRunner()
    ex = runner.invoke(main, ["exact", "--language", str(out), "-L", "3", "-N", "2", "--json"])
    assert ex.exit_code == 0, ex.output
    got = json.loads(ex.output)
    assert got["method"] in ("dp", "enumerate") and got["ser"]["value"] > 0  # unseen bigrams: invalid sequences
    sw = runner.invoke(main, ["sweep", "--languages", str(out), "--lengths", "3", "-N", "1,2",
                              "--out", str(tmp_path / "s.jsonl"), "--json"])
    assert sw.exit_code == 0, sw.output
    assert json.loads(sw.output)["computed"] == 2


@pytest.mark.parametrize(("text", "args", "words"), [
    (b"", ["--level", "char"], "empty"),
    (b"\x00\x01\x02binary", ["--level", "char"], "BinaryCorpusError"),
    (b"caf\xe9", ["--level", "char"], "not valid utf-8"),
    (b"ab", ["--level", "char", "--order", "3"], "0 3-grams seen"),
    (b"abc", ["--level", "char", "--vocab-cap", "0"], "vocabulary cap must be >= 2"),
    (b"abc", ["--level", "char", "--order", "5"], "order must be 1..4"),
    (b"abc", ["--level", "char", "--k", "2"], "--smoothing add-k"),
])
def test_bad_input_is_named_exits_2_and_writes_nothing(tmp_path, text, args, words):
    res, out = _fit(tmp_path, text, *args, "--json")
    assert res.exit_code == 2, res.output
    err = strict_json(res.output)["error"]
    assert words in err["message"] and err["exit_code"] == 2
    assert not out.exists()


def test_a_file_it_did_not_write_is_not_overwritten(tmp_path):
    foreign = tmp_path / "lang.npz"
    foreign.write_bytes(b"precious")
    res, _ = _fit(tmp_path, b"abcab", "--level", "char")
    assert res.exit_code == 2 and "refusing to overwrite" in res.output
    assert foreign.read_bytes() == b"precious"
