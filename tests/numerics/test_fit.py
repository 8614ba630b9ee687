"""Languages fitted to a text: hand-counted corpora, the maximum-likelihood property, the Lee corpus.

The expected numbers are counted by hand in the comments (the corpus read as a cycle) and written
as ``fractions.Fraction``; a float64 quotient of two small integers is the correctly rounded
fraction, so the comparisons are exact equalities.
"""

from __future__ import annotations

import hashlib
import io
from fractions import Fraction

import numpy as np
import pytest

from numerics.exact.entropy import ngram_sequence_entropy
from numerics.inference import log_q
from numerics.languages import fit as F
from numerics.languages.corpus import LEE_SHA256, fit_lee, lee_corpus_bytes
from numerics.languages.hmm import load_language_file
from numerics.languages.presets import get_preset, load_language
from tests.tolerances import ATOL_PROB, RTOL_EXACT


def _fr(a: int, b: int) -> float:
    return float(Fraction(a, b))


def test_char_bigram_hand_counted():
    # "abcab" as a cycle: ab bc ca ab ba -> c(a,b) = 2, c(b,c) = 1, c(b,a) = 1, c(c,a) = 1; T = 5
    f = F.fit_text("abcab", level="char", order=2)
    assert f.provenance.vocabulary == ("a", "b", "c")  # counts 2, 2, 1: ties by code point
    lang = f.language
    assert lang.order == 2
    assert lang.initial.tolist() == [_fr(2, 5), _fr(2, 5), _fr(1, 5)]
    assert lang.conditional.tolist() == [[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [1.0, 0.0, 0.0]]
    s = f.summary
    assert (s.ngrams_seen, s.distinct_ngrams, s.observed_contexts) == (4, 4, 3)
    assert s.zero_transition_share == pytest.approx(1 - 4 / 9, rel=RTOL_EXACT)
    # only b's row is random: H = (2/5) log 2
    assert s.entropy_rate == pytest.approx(0.4 * np.log(2), rel=RTOL_EXACT)
    assert s.initial_is_stationary
    assert f.provenance.corpus_sha256 == hashlib.sha256(b"abcab").hexdigest()


def test_char_trigram_hand_counted_and_unseen_windows():
    # "aabab" as a cycle: aab aba bab aba baa -> windows aa:1 (->b), ab:2 (->a,a), ba:2 (->b,a)
    f = F.fit_text("aabab", level="char", order=3)
    lang, V = f.language, 2
    idx = {w: 2 * "ab".index(w[0]) + "ab".index(w[1]) for w in ("aa", "ab", "ba", "bb")}
    assert lang.initial[idx["aa"]] == _fr(1, 5) and lang.initial[idx["ab"]] == _fr(2, 5)
    assert lang.initial[idx["ba"]] == _fr(2, 5) and lang.initial[idx["bb"]] == 0.0
    assert lang.conditional[idx["aa"]].tolist() == [0.0, 1.0]
    assert lang.conditional[idx["ab"]].tolist() == [1.0, 0.0]
    assert lang.conditional[idx["ba"]].tolist() == [0.5, 0.5]
    assert lang.conditional[idx["bb"]].tolist() == [1.0, 0.0]  # unseen: point mass on token 0 ('a')
    # the unseen window is unreachable: no observed n-gram leads into it
    succ = lang.successors()
    reach = {s for s in range(lang.n_states) if lang.initial[s] > 0}
    frontier = set(reach)
    while frontier:
        frontier = {int(succ[s, v]) for s in frontier for v in range(V) if lang.conditional[s, v] > 0} - reach
        reach |= frontier
    assert idx["bb"] not in reach
    assert f.summary.zero_transition_share == _fr(2, 6)  # 4 distinct trigrams in 3 observed rows of 2


def test_word_tokenization_is_exactly_the_documented_regex():
    text = "Don't stop,  2 cats_x!\n\tÉté"
    assert F.tokenize(text, "word") == ["Don", "'", "t", "stop", ",", "2", "cats_x", "!", "Été"]
    assert F.tokenize(text, "word", lowercase=True)[0] == "don"
    assert F.tokenize("a b\n", "char") == ["a", " ", "b", "\n"]


def test_vocabulary_cap_maps_the_rarest_to_unk_which_takes_its_rank():
    # counts: the 3, . 1, cat 1, end 1, mat 1, on 1, sat 1; cap 4 keeps the, ., cat; 4 tokens -> <unk>
    f = F.fit_text("the cat sat on the mat . the end", level="word", order=2, vocab_cap=4)
    assert f.provenance.vocabulary == ("<unk>", "the", ".", "cat")
    assert (f.provenance.unk_tokens, f.provenance.tokens) == (4, 9)
    assert f.language.initial.tolist() == [_fr(4, 9), _fr(3, 9), _fr(1, 9), _fr(1, 9)]
    # no cap reached: no <unk>
    g = F.fit_text("b a b", level="word", order=2, vocab_cap=2)
    assert g.provenance.vocabulary == ("b", "a") and g.provenance.unk_tokens == 0


def test_add_k_hand_counted():
    # "abcab", k = 1/2, V = 3: row a: c = (0, 2, 0), c(a) = 2 -> (1/2, 5/2, 1/2) / 7/2
    f = F.fit_text("abcab", level="char", order=2, smoothing="add-k", k=0.5)
    c = f.language.conditional
    np.testing.assert_allclose(c[0], [1 / 7, 5 / 7, 1 / 7], rtol=RTOL_EXACT)
    np.testing.assert_allclose(c[2], [3 / 5, 1 / 5, 1 / 5], rtol=RTOL_EXACT)
    np.testing.assert_allclose(f.language.initial, [2.5 / 6.5, 2.5 / 6.5, 1.5 / 6.5], rtol=RTOL_EXACT)
    assert f.summary.zero_transition_share == 0.0
    assert f.provenance.k == 0.5
    # an unseen window under add-k is uniform
    g = F.fit_text("aabab", level="char", order=3, smoothing="add-k", k=2.0)
    np.testing.assert_allclose(g.language.conditional[3], [0.5, 0.5], rtol=RTOL_EXACT)


def test_order_one_is_a_unigram_stored_as_identical_bigram_rows():
    f = F.fit_text("abcab", level="char", order=1)
    assert f.provenance.order == 1 and f.language.order == 2
    law = [_fr(2, 5), _fr(2, 5), _fr(1, 5)]
    assert f.language.initial.tolist() == law
    assert all(row == law for row in f.language.conditional.tolist())
    assert f.summary.entropy_rate == pytest.approx(-sum(p * np.log(p) for p in law), rel=RTOL_EXACT)


def _random_rows(rng, shape):
    return rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])


@pytest.mark.parametrize("order", [2, 3])
def test_none_fit_is_the_maximum_likelihood_conditional(order):
    """Brute force: no stochastic conditional gives the cyclic n-grams a higher log-likelihood
    (random rows, and every row moved on a grid toward each vertex), and the fit attains it."""
    text = "abbabaabbbab"
    f = F.fit_text(text, level="char", order=order)
    ids = np.array([f.provenance.vocabulary.index(ch) for ch in text])
    codes, counts = F.cyclic_ngram_counts(ids, order, 2)
    best = F.ngram_log_likelihood(f.language.conditional, codes, counts)
    # closed form of the maximum: sum c(w,v) log(c(w,v)/c(w)), counted here from the codes
    cw = {}
    for code, c in zip(codes.tolist(), counts.tolist()):
        cw[code // 2] = cw.get(code // 2, 0) + c
    closed = sum(c * np.log(c / cw[code // 2]) for code, c in zip(codes.tolist(), counts.tolist()))
    assert best == pytest.approx(closed, rel=RTOL_EXACT)
    rng = np.random.default_rng(0)
    S = 2 ** (order - 1)
    for _ in range(2000):
        assert F.ngram_log_likelihood(_random_rows(rng, (S, 2)), codes, counts) <= best
    for t in np.linspace(0.0, 1.0, 51)[1:]:
        for s in range(S):
            for v in range(2):
                other = f.language.conditional.copy()
                other[s] = (1 - t) * other[s] + t * np.eye(2)[v]
                assert F.ngram_log_likelihood(other, codes, counts) <= best + 1e-12 * abs(best)


def test_log_likelihood_through_the_forward_pass():
    """Independent path for a bigram: the engine's exact log q of the text followed by its first
    token (the cycle) is log initial(x_1) + the cyclic bigram log-likelihood."""
    text = "abcabbcaacb"
    f = F.fit_text(text, level="char", order=2)
    vocab = f.provenance.vocabulary
    ids = np.array([vocab.index(ch) for ch in text])
    codes, counts = F.cyclic_ngram_counts(ids, 2, 3)
    want = np.log(f.language.initial[ids[0]]) + F.ngram_log_likelihood(f.language.conditional, codes, counts)
    got = log_q(f.language, np.concatenate([ids, ids[:1]])[None, :])[0]
    assert got == pytest.approx(want, rel=RTOL_EXACT)


@pytest.mark.parametrize("order", [2, 3, 4])
def test_entropy_rate_is_the_increment_of_the_exact_sequence_entropy(order):
    """Under ``none`` the initial law is stationary, so ``H(X_1..X_{L+1}) - H(X_1..X_L)`` (the
    engine's chain rule, numerics.exact.entropy) is the summary's entropy rate for ``L >= n - 1``."""
    f = F.fit_text("the quick brown fox jumps over the lazy dog; the dog sleeps", level="char", order=order)
    lang = f.language
    inc = ngram_sequence_entropy(lang, 9) - ngram_sequence_entropy(lang, 8)
    assert inc == pytest.approx(f.summary.entropy_rate, rel=1e-11)  # two sums of ~60 terms of size ~1
    flow = np.bincount(lang.successors().ravel(), weights=(lang.initial[:, None] * lang.conditional).ravel(),
                       minlength=lang.n_states)
    np.testing.assert_allclose(flow, lang.initial, rtol=0, atol=ATOL_PROB * 10)


@pytest.mark.parametrize(("data", "kwargs", "error", "words"), [
    (b"", {}, F.EmptyCorpusError, "empty"),
    (b" \n\t ", {"level": "word"}, F.EmptyCorpusError, "no word token"),
    (b"ab\x00cd", {}, F.BinaryCorpusError, "NUL byte at offset 2"),
    (b"ab\xff\xfecd", {}, F.CorpusEncodingError, "not valid utf-8"),
    (b"abc", {"encoding": "no-such-codec"}, F.CorpusEncodingError, "unknown encoding"),
    (b"ab", {"order": 3}, F.CorpusTooSmallError, "0 3-grams seen"),
    (b"one two", {"level": "word", "order": 4}, F.CorpusTooSmallError, "2 word token(s): 0 4-grams seen"),
    (b"aaaa", {}, F.CorpusTooSmallError, "one distinct"),
    (b"abc", {"vocab_cap": 0}, ValueError, "vocabulary cap must be an integer >= 2"),
    (b"abc", {"vocab_cap": 1}, ValueError, "vocabulary cap must be an integer >= 2"),
    (b"abc", {"order": 0}, ValueError, "order must be an integer in 1..4"),
    (b"abc", {"order": 5}, ValueError, "order must be an integer in 1..4"),
    (b"abc", {"k": 1.0}, ValueError, "not used with smoothing 'none'"),
    (b"abc", {"smoothing": "add-k", "k": 0.0}, ValueError, "finite k > 0"),
    (b"abc", {"smoothing": "kneser-ney"}, ValueError, "unknown smoothing"),
])
def test_bad_corpora_are_named(data, kwargs, error, words):
    args = {"level": "char", "order": 2, **kwargs}
    encoding = args.pop("encoding", "utf-8")
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        F.fit_bytes(data, encoding=encoding, **args)


def test_a_conditional_too_large_is_refused_before_it_is_allocated(monkeypatch):
    monkeypatch.setattr(F, "MAX_CONDITIONAL_BYTES", 8 * 26**3 - 1)
    text = "".join(chr(97 + i) for i in range(26))
    F.fit_text(text, level="char", order=2)
    with pytest.raises(ValueError, match="lower --vocab-cap or --order"):
        F.fit_text(text, level="char", order=3)


def test_npz_round_trip_keeps_the_language_and_the_provenance(tmp_path):
    f = F.fit_text("the cat sat on the mat . the end", level="word", order=3, vocab_cap=5)
    path = tmp_path / "x.npz"
    path.write_bytes(F.fitted_npz_bytes(f))
    lang = load_language_file(path)
    assert lang.order == 3
    np.testing.assert_array_equal(lang.conditional, f.language.conditional)
    np.testing.assert_array_equal(lang.initial, f.language.initial)
    assert F.read_fit_provenance(path) == f.provenance
    other = tmp_path / "other.npz"
    buf = io.BytesIO()
    f.language.save(buf)
    other.write_bytes(buf.getvalue())
    assert F.read_fit_provenance(other) is None
    (tmp_path / "t.txt").write_text("not a zip")
    assert F.read_fit_provenance(tmp_path / "t.txt") is None


def test_lee_corpus_ships_in_the_gensim_wheel_and_fits():
    data = lee_corpus_bytes()
    assert hashlib.sha256(data).hexdigest() == LEE_SHA256 and len(data) == 360_082
    f = fit_lee("lee-char-2gram")
    assert f.summary.vocab_size == 55 and f.provenance.corpus_sha256 == LEE_SHA256
    assert 0.5 < f.summary.zero_transition_share < 0.8  # many character pairs never occur in English text
    assert f.summary.initial_is_stationary
    w = fit_lee("lee-word-v64-2gram")
    assert w.summary.vocab_size == 64 and w.provenance.vocabulary[-1] != "" and "<unk>" in w.provenance.vocabulary
    assert load_language("lee-word-v64-2gram") is load_language("lee-word-v64-2gram")  # cached
    assert "Lee news corpus" in get_preset("lee-char-2gram").description
