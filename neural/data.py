"""Training data drawn from a ``numerics`` language: seeded, split, generated once and stored.

A data set is ``n_train`` + ``n_val`` i.i.d. sequences of length ``L`` from the language ``q``,
drawn with two independent streams of one ``SeedSequence`` (so the validation set does not
depend on ``n_train``). It is stored as ``.npz`` (``uint8`` tokens when ``V <= 256``) under a
name derived from the language's content and the data config, written atomically; a later run
with the same inputs loads it instead of drawing again. The file also stores the exact
``log q(x)`` of every validation sequence, the reference the validation NELBO is compared with.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.inference import log_q
from numerics.languages.hmm import Language, load_language_file
from numerics.languages.presets import load_language
from numerics.provenance import atomic_write_bytes

from .config import DataConfig

__all__ = ["Dataset", "resolve_language", "language_fingerprint", "make_dataset", "load_or_make_dataset",
           "exact_loglik"]


@dataclass(frozen=True)
class Dataset:
    """Token arrays of a language.

    Attributes
    ----------
    train : (n_train, L) uint8 or int64
    val : (n_val, L) uint8 or int64
    val_loglik : (n_val,) float64
        Exact ``log q(x)`` of each validation sequence (forward algorithm).
    vocab_size : int
    """

    train: np.ndarray
    val: np.ndarray
    val_loglik: np.ndarray
    vocab_size: int

    @property
    def length(self) -> int:
        return self.train.shape[1]

    @property
    def val_nll_per_token(self) -> float:
        """``-mean log q(x) / L`` over the validation set: the target of the validation NELBO."""
        return float(-self.val_loglik.mean() / self.length)


def resolve_language(spec: str) -> Language:
    """A preset name (:func:`numerics.languages.presets.load_language`) or a path to a language ``.npz``,
    in the form the kernels read (``kernel_language()``: the interval language as its minimal HMM),
    so that training data, validation sets and fingerprints are those of the HMM the models were
    always trained on."""
    if spec.endswith(".npz") or Path(spec).is_file():
        return load_language_file(spec).kernel_language()
    return load_language(spec).kernel_language()


def language_fingerprint(language: Language) -> str:
    """A 16-hex-digit hash of the language's parameters (so a changed preset never reuses old data)."""
    if not hasattr(language, "kernel_language"):
        raise TypeError(f"not a language: {type(language).__name__}")
    language = language.kernel_language()  # the interval language: its HMM, as when the preset loaded as one
    h = hashlib.sha256(type(language).__name__.encode())
    parts = language.arrays().values()  # HMM: initial, transition, emission; NGram: order, initial, conditional
    for p in parts:
        h.update(np.ascontiguousarray(p, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def exact_loglik(language: Language, tokens: np.ndarray, batch: int = 4096) -> np.ndarray:
    """Exact ``log q(x)`` of fully observed sequences (``(n,)`` float64, ``-inf`` outside the support), in batches."""
    tokens = np.asarray(tokens, dtype=np.int64)
    out = np.empty(tokens.shape[0])
    for s in range(0, tokens.shape[0], batch):
        out[s : s + batch] = log_q(language, tokens[s : s + batch])
    return out


def make_dataset(language: Language, length: int, cfg: DataConfig) -> Dataset:
    """Draw the data set (no caching): train and validation from two spawned seed streams."""
    train_seed, val_seed = np.random.SeedSequence(cfg.seed).spawn(2)
    dtype = np.uint8 if language.vocab_size <= 256 else np.int64
    train = language.sample(cfg.n_train, length, np.random.default_rng(train_seed)).astype(dtype)
    val = language.sample(cfg.n_val, length, np.random.default_rng(val_seed)).astype(dtype)
    return Dataset(train, val, exact_loglik(language, val), language.vocab_size)


def _dataset_path(root: Path, language: Language, length: int, cfg: DataConfig) -> Path:
    key = f"{language_fingerprint(language)}-L{length}-n{cfg.n_train}-v{cfg.n_val}-s{cfg.seed}"
    return root / f"data-{key}.npz"


def load_or_make_dataset(language: Language, length: int, cfg: DataConfig, root: str | Path) -> Dataset:
    """Load the stored data set for these inputs from ``root``, or draw and store it (atomically).

    A stored file that cannot be read or does not match its key is rebuilt.
    """
    path = _dataset_path(Path(root), language, length, cfg)
    meta = {"fingerprint": language_fingerprint(language), "length": length,
            "n_train": cfg.n_train, "n_val": cfg.n_val, "seed": cfg.seed}
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as f:
                if json.loads(str(f["meta"])) == meta:
                    return Dataset(f["train"], f["val"], f["val_loglik"], language.vocab_size)
        except (OSError, ValueError, KeyError):
            pass  # unreadable or stale: draw again below
    ds = make_dataset(language, length, cfg)
    buf = io.BytesIO()
    np.savez(buf, train=ds.train, val=ds.val, val_loglik=ds.val_loglik, meta=np.array(json.dumps(meta)))
    atomic_write_bytes(path, buf.getvalue())
    return ds
