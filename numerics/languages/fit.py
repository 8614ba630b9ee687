"""Fit an n-gram language to a text: the engine's ground truth for *real* text.

``fit_text(text, level=..., order=n, smoothing=...)`` counts the n-grams of a text and returns a
:class:`FittedLanguage`: an ordinary :class:`~numerics.languages.hmm.NGram` (so every command and
experiment that takes a language takes it), its :class:`FitProvenance` and a :class:`FitSummary`.
``docs/methods/languages.md`` ("Languages fitted to a text") states the same definitions.

Tokenization (exact)
--------------------
The text is the file's bytes decoded with the given encoding (strict; default UTF-8), with no
other normalization (no Unicode normalization; ``\\r\\n`` stays two characters). With
``lowercase`` it is first passed through ``str.lower``.

* ``char``: every code point is a token, whitespace and newlines included.
* ``word``: the tokens are the matches of the regular expression ``\\w+|[^\\w\\s]`` (Python ``re``,
  Unicode): maximal runs of word characters (letters, digits, underscore), and every other
  non-whitespace character on its own (so ``"don't."`` is ``don ' t .``). Whitespace separates
  tokens and is dropped; line breaks carry no token.

Vocabulary: the distinct tokens sorted by decreasing count, ties by code-point order of the
token. With ``vocab_cap = C`` and more than ``C`` distinct tokens, the ``C - 1`` first are kept
and every other token becomes the symbol ``<unk>`` (:data:`UNK`), which then takes its place in
the same ordering by its own count (so ``V = C``; neither level can produce ``<unk>`` as a token of
the text: a word-level ``<unk>`` is the three tokens ``< unk >``). Token ids are the positions in this vocabulary.

Counting (the corpus is read as a cycle)
----------------------------------------
For ``T`` tokens ``t_0..t_{T-1}`` and order ``n >= 2`` the counted n-grams are the ``T`` windows
``(t_i, .., t_{i+n-1})``, indices mod ``T``: the ``T - n + 1`` n-grams of the text and ``n - 1``
across the junction from its end back to its start. Reading the text as a cycle makes every
window that occurs have an observed continuation, and makes the window counts
``c(w) = sum_v c(w, v)`` the counts of the ``(n-1)``-grams of the same cycle.

* ``initial[w] = c(w) / T`` (``none``) or ``(c(w) + k) / (T + k V^(n-1))`` (``add-k``): the law of
  the first window (pre-history and ``x_1``, see :class:`~numerics.languages.hmm.NGram`). Under
  ``none`` it is exactly a stationary law of the fitted chain (the flow of counts into a window
  of a cycle equals the flow out), so the language is a stationary process: sequences of length
  ``L`` look like excerpts of the text at a uniformly random offset.
* ``conditional[w, v] = c(w, v) / c(w)`` (``none``; the maximum-likelihood estimate: it
  maximizes ``sum_{w, v} c(w, v) log P(v | w)`` over stochastic ``P``) or
  ``(c(w, v) + k) / (c(w) + k V)`` (``add-k``, ``k > 0``; an unseen window gets the uniform row).
* Unseen windows under ``none`` (``c(w) = 0``): the row is a point mass on token 0 (the most
  frequent token). Such a window has ``initial = 0`` and no observed n-gram leads into it, so it is
  never reached and its row does not change the language ``q``; one non-zero keeps the row cheap
  for a sparse conditional. The support of ``q`` is then exactly the token sequences all of whose
  ``n``-grams (and whose first window) were observed, so SER is meaningful; under ``add-k`` every
  sequence is in the support and every sampler's SER is 0.
* Order 1 (a unigram: i.i.d. tokens with the token frequencies, smoothed the same way). The
  engine's :class:`NGram` has order ``>= 2`` (the presets start at 2-grams), so a unigram is
  stored as the order-2 ``NGram`` whose ``initial`` and every ``conditional`` row are the unigram
  law; its provenance says order 1. Under ``none`` every vocabulary token occurs, so its support
  is complete (SER 0).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import zipfile
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import entr

from numerics.languages.hmm import NGram
from numerics.machine import check_memory

__all__ = [
    "Corpus",
    "LEVELS",
    "MAX_CONDITIONAL_BYTES",
    "MAX_ORDER",
    "PROVENANCE_KEY",
    "SMOOTHINGS",
    "SUMMARY_KEY",
    "UNK",
    "BinaryCorpusError",
    "CorpusEncodingError",
    "CorpusError",
    "CorpusTooSmallError",
    "EmptyCorpusError",
    "FitProvenance",
    "FitSummary",
    "FittedLanguage",
    "build_vocabulary",
    "cyclic_ngram_counts",
    "decode_corpus",
    "fit_bytes",
    "fit_text",
    "fitted_npz_bytes",
    "ngram_log_likelihood",
    "read_fit_provenance",
    "tokenize",
    "fit_memory_bytes",
    "read_corpus",
    "CorpusFileError",
]

LEVELS = ("char", "word")
SMOOTHINGS = ("none", "add-k")
UNK = "<unk>"
MAX_ORDER = 4  # the presets' orders are 2..4; 1 is the unigram
MAX_CONDITIONAL_BYTES = 2 << 30  # the dense (V^(n-1), V) float64 conditional, checked before it is allocated
FIT_DENSE_COPIES = 3  # the fit's peak in dense conditionals (the array, its checks; summary by rows): 2.2 measured
CORPUS_BYTES_PER_BYTE = 100  # peak memory of tokenizing per corpus byte (a Python str per token, ids, n-gram codes)

_WORD_RE = re.compile(r"\w+|[^\w\s]")


class CorpusError(ValueError):
    """A text that cannot be fitted; the subclasses name the reason."""


class EmptyCorpusError(CorpusError):
    """The file is empty or holds no token."""


class BinaryCorpusError(CorpusError):
    """The file holds NUL bytes: a binary file, not text."""


class CorpusEncodingError(CorpusError):
    """The bytes are not valid in the encoding asked for."""


class CorpusTooSmallError(CorpusError):
    """Fewer tokens than the order needs, or fewer than two distinct symbols."""


class CorpusFileError(CorpusError):
    """The path is not a regular file (a FIFO, a device, a socket) or too large to read into memory."""


def read_corpus(path) -> bytes:
    """The bytes of the corpus file ``path``, refusing what cannot be read whole and in time.

    The file is examined before it is opened: a FIFO would block ``open`` until a writer comes
    (forever, with none), a device such as ``/dev/zero`` never ends, so anything but a regular
    file is a :class:`CorpusFileError`. Its size is then checked against this machine's memory
    (about :data:`CORPUS_BYTES_PER_BYTE` bytes of peak per corpus byte while tokenizing) and its
    first 64 KiB for a NUL byte (:class:`BinaryCorpusError`), before the rest is read.
    """
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a character device"
                if stat.S_ISCHR(info.st_mode) else "a block device" if stat.S_ISBLK(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "a directory" if stat.S_ISDIR(info.st_mode)
                else "not a regular file")
        raise CorpusFileError(f"{path} is {kind}, not a regular file: a corpus is read whole, so it must be a "
                              "file (save the text to a file first)")
    check_memory(CORPUS_BYTES_PER_BYTE * info.st_size, f"fitting a corpus of {info.st_size} bytes",
                 "fit a smaller part of the text")
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
        if b"\x00" in head:
            decode_corpus(head)  # names the NUL byte's offset (BinaryCorpusError) before the rest is read
        return head + fh.read()


@dataclass(frozen=True)
class FitProvenance:
    """Where a fitted language comes from: enough to fit it again and check it is the same text.

    Attributes
    ----------
    corpus_sha256 : str
        SHA-256 of the corpus bytes as read (before decoding).
    corpus_bytes : int
    corpus_name : str
        The file name or resource the text came from (informative only).
    encoding : str
    level : str
        ``char`` or ``word`` (module docstring).
    order : int
        ``n`` as asked (1 = unigram; the stored :class:`NGram` then has order 2).
    smoothing : str
        ``none`` or ``add-k``.
    k : float or None
        The add-k constant (``None`` for ``none``).
    lowercase : bool
    vocab_cap : int or None
    vocabulary : tuple of str
        Token id -> token (``<unk>`` included when the cap merged tokens).
    tokens : int
        ``T``, the number of tokens of the text.
    unk_tokens : int
        Tokens of the text mapped to ``<unk>``.
    """

    corpus_sha256: str
    corpus_bytes: int
    corpus_name: str
    encoding: str
    level: str
    order: int
    smoothing: str
    k: float | None
    lowercase: bool
    vocab_cap: int | None
    vocabulary: tuple
    tokens: int
    unk_tokens: int

    def to_json(self) -> str:
        """The fields as one JSON string (the ``fit_provenance`` key of a fitted ``.npz``)."""
        d = asdict(self)
        d["vocabulary"] = list(self.vocabulary)
        return json.dumps(d, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> FitProvenance:
        d = json.loads(text)
        d["vocabulary"] = tuple(d["vocabulary"])
        return cls(**d)


@dataclass(frozen=True)
class FitSummary:
    """What the fitted language is like.

    Attributes
    ----------
    vocab_size : int
        ``V``.
    n_states : int
        ``V^(n-1)`` windows of the stored :class:`NGram`.
    ngrams_seen : int
        ``T - n + 1``, the n-grams of the text itself (without the cycle's junction).
    distinct_ngrams : int
        Distinct n-grams of the cycle: the non-zero transitions under ``none``.
    observed_contexts : int
        Windows with ``c(w) > 0`` (the reachable states under ``none``).
    zero_transition_share : float
        Share of zero entries of ``conditional`` in the rows of the observed windows:
        ``1 - distinct_ngrams / (observed_contexts V)`` under ``none``, 0 under ``add-k``.
    entropy_rate : float
        ``sum_w initial[w] H(conditional[w])`` in nats per token: the conditional entropy of the
        next token given a window drawn from ``initial``. Under ``none`` ``initial`` is stationary,
        so this is exactly the entropy rate ``lim H(X_1..X_L) / L`` of the language (for a unigram:
        the token entropy).
    perplexity : float
        ``exp(entropy_rate)``: the data perplexity per token in the long-sequence limit.
    initial_is_stationary : bool
        ``initial P = initial`` up to float64 round-off (always under ``none``).
    """

    vocab_size: int
    n_states: int
    ngrams_seen: int
    distinct_ngrams: int
    observed_contexts: int
    zero_transition_share: float
    entropy_rate: float
    perplexity: float
    initial_is_stationary: bool


@dataclass(frozen=True, eq=False)
class FittedLanguage:
    """A fitted n-gram language: ``language`` (an ordinary :class:`NGram`), its provenance and summary."""

    language: NGram
    provenance: FitProvenance
    summary: FitSummary


# ----- text -> tokens -> ids ---------------------------------------------------------------------


def decode_corpus(data: bytes, encoding: str = "utf-8") -> str:
    """The text of ``data``, refusing what is not text.

    Raises :class:`EmptyCorpusError` (no bytes), :class:`BinaryCorpusError` (a NUL byte, with its
    offset) or :class:`CorpusEncodingError` (invalid bytes for ``encoding``, with their offset).
    """
    if len(data) == 0:
        raise EmptyCorpusError("the corpus is empty (0 bytes)")
    nul = data.find(b"\x00")
    if nul >= 0 and encoding.lower().replace("_", "-") not in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        raise BinaryCorpusError(f"the corpus holds a NUL byte at offset {nul}: a binary file, not text")
    try:
        return data.decode(encoding)
    except LookupError:
        raise CorpusEncodingError(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        raise CorpusEncodingError(
            f"the corpus is not valid {encoding}: bytes {data[exc.start:exc.end]!r} at offset {exc.start} "
            f"({exc.reason}); pass the file's encoding") from None


def tokenize(text: str, level: str, lowercase: bool = False) -> list[str]:
    """The tokens of ``text`` at ``level`` (module docstring: code points, or ``\\w+|[^\\w\\s]``)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose one of {LEVELS}")
    if lowercase:
        text = text.lower()
    return list(text) if level == "char" else _WORD_RE.findall(text)


def build_vocabulary(tokens: list[str], vocab_cap: int | None = None) -> tuple[tuple, np.ndarray, int]:
    """``(vocabulary, ids, unk_tokens)``: the vocabulary of the module docstring and the token ids.

    ``vocab_cap`` (``None``: no cap) must be an integer ``>= 2``.
    """
    if vocab_cap is not None and (int(vocab_cap) != vocab_cap or vocab_cap < 2):
        raise ValueError(f"vocabulary cap must be an integer >= 2 (one symbol is a constant text), got {vocab_cap!r}")
    uniq, inverse, counts = np.unique(np.array(tokens, dtype=object), return_inverse=True, return_counts=True)
    uniq = [str(u) for u in uniq]
    unk_tokens = 0
    if vocab_cap is not None and len(uniq) > vocab_cap:
        order = sorted(range(len(uniq)), key=lambda i: (-counts[i], uniq[i]))
        keep = order[: vocab_cap - 1]
        merged = np.ones(len(uniq), dtype=bool)
        merged[keep] = False
        unk_tokens = int(counts[merged].sum())
        names = [uniq[i] for i in keep] + [UNK]
        cnt = [int(counts[i]) for i in keep] + [unk_tokens]
        old_to_new = np.full(len(uniq), len(keep), dtype=np.int64)
        old_to_new[keep] = np.arange(len(keep))
        rank = sorted(range(len(names)), key=lambda i: (-cnt[i], names[i]))
        pos = np.empty(len(names), dtype=np.int64)
        pos[rank] = np.arange(len(names))
        vocabulary = tuple(names[i] for i in rank)
        ids = pos[old_to_new[inverse]]
    else:
        rank = sorted(range(len(uniq)), key=lambda i: (-counts[i], uniq[i]))
        pos = np.empty(len(uniq), dtype=np.int64)
        pos[rank] = np.arange(len(uniq))
        vocabulary = tuple(uniq[i] for i in rank)
        ids = pos[inverse]
    return vocabulary, np.asarray(ids, dtype=np.int64).reshape(-1), unk_tokens


def cyclic_ngram_counts(ids: np.ndarray, order: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, counts)``: the distinct n-grams of the cycle ``ids`` and how often each occurs.

    An n-gram ``(a_1..a_n)`` has code ``sum_k a_k V^(n-k)`` = ``window * V + next`` with ``window``
    the :class:`NGram` state index of ``(a_1..a_{n-1})``; ``codes`` is sorted, ``counts`` sums to ``T``.
    """
    ids = np.asarray(ids, dtype=np.int64)
    T = ids.shape[0]
    ext = np.concatenate([ids, ids[np.arange(order - 1) % T]])
    codes = np.zeros(T, dtype=np.int64)
    for j in range(order):
        codes = codes * vocab + ext[j:j + T]
    return np.unique(codes, return_counts=True)


def ngram_log_likelihood(conditional: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> float:
    """``sum_{w, v} c(w, v) log conditional[w, v]`` (nats): the objective the ``none`` fit maximizes.

    ``-inf`` when an observed n-gram has probability 0.
    """
    V = conditional.shape[1]
    p = conditional[codes // V, codes % V]
    with np.errstate(divide="ignore"):
        return float(np.dot(counts, np.log(p)))


# ----- the fit -----------------------------------------------------------------------------------


def _conditional_matrix(S: int, V: int, windows: np.ndarray, nexts: np.ndarray, values: np.ndarray,
                        fill_row: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """The ``(S, V)`` conditional: ``values`` at ``(windows, nexts)``, row ``fill_row`` in the rows where ``fill``.

    The one place that builds the array, so a sparse (CSR) conditional can be switched on here.
    """
    cond = np.zeros((S, V))
    cond[fill] = fill_row
    cond[windows, nexts] = values
    return cond


def fit_memory_bytes(V: int, order: int) -> int:
    """Estimated peak bytes of fitting an order-``order`` n-gram over ``V`` tokens: :data:`FIT_DENSE_COPIES`
    dense ``(V^(n-1), V)`` float64 conditionals (the array and the checks on it; the summary works by
    blocks of rows)."""
    return FIT_DENSE_COPIES * 8 * V ** max(order, 2)


def _check_size(V: int, order: int) -> None:
    """Refuse a fit whose conditional exceeds :data:`MAX_CONDITIONAL_BYTES` or whose estimated peak
    (:func:`fit_memory_bytes`) exceeds this machine's memory limit, before any dense array exists."""
    need = 8 * V ** max(order, 2)
    if need > MAX_CONDITIONAL_BYTES:
        raise ValueError(
            f"a dense {max(order, 2)}-gram conditional over V = {V} tokens needs {need / 2**30:.1f} GiB "
            f"(limit {MAX_CONDITIONAL_BYTES / 2**30:.0f} GiB); lower --vocab-cap or --order")
    check_memory(fit_memory_bytes(V, order), f"fitting a {max(order, 2)}-gram over V = {V} tokens "
                 f"({FIT_DENSE_COPIES} dense conditionals of {need / 2**30:.3g} GiB at the peak)",
                 "lower --vocab-cap or --order")


def _check_args(level: str, order: int, smoothing: str, k: float | None) -> float | None:
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose one of {LEVELS}")
    if int(order) != order or not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be an integer in 1..{MAX_ORDER}, got {order!r}")
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"unknown smoothing {smoothing!r}; choose one of {SMOOTHINGS}")
    if smoothing == "none":
        if k is not None:
            raise ValueError("k is the add-k constant; it is not used with smoothing 'none'")
        return None
    k = 1.0 if k is None else k
    if not (np.isfinite(k) and k > 0):
        raise ValueError(f"add-k needs a finite k > 0, got {k!r}")
    return float(k)


class Corpus(NamedTuple):
    """Where a text came from, as its provenance records it (:class:`FitProvenance`'s ``corpus_*`` and ``encoding``)."""

    sha256: str
    n_bytes: int
    name: str
    encoding: str

    @classmethod
    def of_bytes(cls, data: bytes, name: str, encoding: str) -> Corpus:
        """The corpus of the bytes ``data`` (decoded with ``encoding``)."""
        return cls(hashlib.sha256(data).hexdigest(), len(data), name, encoding)


def fit_text(text: str, *, level: str, order: int, smoothing: str = "none", k: float | None = None,
             vocab_cap: int | None = None, lowercase: bool = False, corpus: Corpus | None = None) -> FittedLanguage:
    """Fit the order-``order`` n-gram language of ``text`` (module docstring for every rule).

    ``corpus`` defaults to ``text`` encoded as UTF-8, named ``<text>``.
    Raises :class:`EmptyCorpusError` (no token), :class:`CorpusTooSmallError` (fewer than
    ``order`` tokens -- the message says how many n-grams were seen -- or one distinct symbol),
    ``ValueError`` for a bad argument or a conditional too large to allocate.
    """
    k = _check_args(level, order, smoothing, k)
    tokens = tokenize(text, level, lowercase)
    if not tokens:
        raise EmptyCorpusError(f"the corpus holds no {level} token ({len(text)} characters, "
                               + ("all whitespace)" if level == "word" else "nothing)"))
    n = int(order)
    T = len(tokens)
    if T < n:
        raise CorpusTooSmallError(
            f"the corpus has {T} {level} token(s): {max(T - n + 1, 0)} {n}-grams seen, an order-{n} fit needs at "
            f"least 1 (at least {n} tokens)")
    vocabulary, ids, unk_tokens = build_vocabulary(tokens, vocab_cap)
    V = len(vocabulary)
    if V < 2:
        raise CorpusTooSmallError(f"the corpus has one distinct {level} token ({vocabulary[0]!r}): a constant text")
    _check_size(V, n)
    if corpus is None:
        corpus = Corpus.of_bytes(text.encode("utf-8"), "<text>", "utf-8")
    language, distinct, observed = _fit_ids(ids, n, V, smoothing, k)
    provenance = FitProvenance(corpus.sha256, int(corpus.n_bytes), corpus.name, corpus.encoding, level, n, smoothing, k,
                               bool(lowercase), None if vocab_cap is None else int(vocab_cap), vocabulary, T,
                               unk_tokens)
    return FittedLanguage(language, provenance, _summarize(language, T - n + 1, distinct, observed, smoothing))


def fit_bytes(data: bytes, *, encoding: str = "utf-8", corpus_name: str = "<bytes>", **kwargs) -> FittedLanguage:
    """:func:`fit_text` of ``data`` decoded by :func:`decode_corpus` (its errors name the problem)."""
    text = decode_corpus(data, encoding)
    return fit_text(text, corpus=Corpus.of_bytes(data, corpus_name, encoding), **kwargs)


def _fit_ids(ids: np.ndarray, n: int, V: int, smoothing: str, k: float | None) -> tuple[NGram, int, int]:
    """The fitted :class:`NGram`, the number of distinct n-grams and of observed windows."""
    T = ids.shape[0]
    if n == 1:
        c = np.bincount(ids, minlength=V).astype(np.float64)
        law = c / T if k is None else (c + k) / (T + k * V)
        cond = _conditional_matrix(V, V, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
                                   law, np.ones(V, dtype=bool))
        return NGram(2, law, cond), int(np.count_nonzero(c)), 1
    S = V ** (n - 1)
    codes, counts = cyclic_ngram_counts(ids, n, V)
    windows, nexts = codes // V, codes % V
    cw = np.bincount(windows, weights=counts, minlength=S)  # c(w), float64 (exact integers)
    seen = cw > 0
    if k is None:
        initial = cw / T
        fill_row = np.zeros(V)
        fill_row[0] = 1.0  # unseen (unreachable) windows: a point mass on the most frequent token
        cond = _conditional_matrix(S, V, windows, nexts, counts / cw[windows], fill_row, ~seen)
    else:
        initial = (cw + k) / (T + k * S)
        denom = cw + k * V  # add-k is dense: every entry is positive (an unseen window: k / (k V) = 1 / V)
        cond = np.repeat((k / denom)[:, None], V, axis=1)
        cond[windows, nexts] = (counts + k) / denom[windows]
    return NGram(n, initial, cond), int(codes.shape[0]), int(np.count_nonzero(seen))


SUMMARY_BLOCK = 1 << 22  # entries of the conditional summarized at a time (32 MiB of float64 temporaries)
_STATIONARY_ATOL = 1e-12  # |initial P - initial| of an exactly stationary law: float64 round-off of sums of ~1


def _summarize(lang: NGram, ngrams_seen: int, distinct: int, observed: int, smoothing: str) -> FitSummary:
    V, S = lang.vocab_size, lang.n_states
    h, flow = np.empty(S), np.zeros(S)
    step = max(1, SUMMARY_BLOCK // V)  # rows at a time: no temporary as large as the conditional
    for a in range(0, S, step):
        rows = np.arange(a, min(S, a + step))
        cond = lang.conditional[rows]
        h[rows] = entr(cond).sum(axis=1)
        successors = ((rows % (S // V)) * V)[:, None] + np.arange(V)[None, :]  # NGram.successors() of these rows
        flow += np.bincount(successors.ravel(), weights=(lang.initial[rows, None] * cond).ravel(), minlength=S)
    rate = float(lang.initial @ h)
    stationary = bool(np.max(np.abs(flow - lang.initial)) <= _STATIONARY_ATOL)
    zero_share = (observed * V - distinct) / (observed * V) if smoothing == "none" else 0.0
    return FitSummary(V, S, int(ngrams_seen), distinct, observed, float(zero_share), rate, float(np.exp(rate)),
                      stationary)


# ----- the .npz file -----------------------------------------------------------------------------

PROVENANCE_KEY = "fit_provenance"  # extra keys of a fitted .npz; load_language_file ignores them
SUMMARY_KEY = "fit_summary"


def fitted_npz_bytes(fitted: FittedLanguage) -> bytes:
    """The ``.npz`` of ``fitted``: what :meth:`NGram.save` writes, plus the keys ``fit_provenance``
    (:meth:`FitProvenance.to_json`) and ``fit_summary`` (the summary's fields), each a 0-d unicode
    array holding one JSON string (read without pickle)."""
    buffer = io.BytesIO()
    fitted.language.save(buffer)
    extra = {PROVENANCE_KEY: fitted.provenance.to_json(), SUMMARY_KEY: json.dumps(asdict(fitted.summary), sort_keys=True)}
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_STORED) as archive:
        for key, text in extra.items():
            with archive.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, np.array(text), allow_pickle=False)
    return buffer.getvalue()


def read_fit_provenance(path) -> FitProvenance | None:
    """The :class:`FitProvenance` stored in the ``.npz`` at ``path``, or ``None`` when it holds none
    (not a zip, not an ``.npz``, or an ``.npz`` that this module did not write)."""
    try:
        if not zipfile.is_zipfile(path):
            return None
        with np.load(path, allow_pickle=False) as data:
            if PROVENANCE_KEY not in data.files:
                return None
            return FitProvenance.from_json(str(data[PROVENANCE_KEY][()]))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
        return None
