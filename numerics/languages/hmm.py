"""Languages as hidden Markov models: the dense :class:`HMM` and the sparse :class:`NGram`.

Every language of the engine is a distribution ``q`` over token sequences ``x_1..x_L`` given by
an HMM (``docs/methods/languages.md``): hidden states ``z_1..z_L`` with ``z_1 ~ initial``,
``z_{j+1} | z_j ~ transition[z_j]`` and ``x_j | z_j ~ emission[z_j]``.

An n-gram language (order ``n``) is the HMM whose state is the window of the last ``n-1``
tokens. Its transition matrix has only ``V`` non-zeros per row, so it is stored sparsely as
``conditional[s, v] = q(next token = v | window s)``; see :class:`NGram` for the state layout.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np

from numerics.draws import inverse_cdf_rows
from numerics.tolerances import PROB_SUM_ATOL

#: An n-gram whose conditional has at most this share of non-zero entries gets the sparse layout
#: (``numerics.languages.arrays.kernel_arrays``, ``layout="auto"``) and is saved in the sparse form.
#: At this density a sparse step (about ``3 nnz`` reads) costs well under the dense step's ``S V``
#: multiply-adds; the presets (random rows, at most 30% pruned) stay dense.
SPARSE_DENSITY = 0.05

#: Loaders of the ``.npz`` forms that other modules define, by their exact key set: the interval
#: language (``numerics.languages.interval``, which imports this module) registers ``interval_l``.
FILE_LOADERS: dict[frozenset, Callable[[dict, str], object]] = {}

__all__ = ["HMM", "NGram", "KernelLanguage", "Language", "load_language_file", "MAX_DENSE_ENTRIES", "SPARSE_KEYS",
           "SPARSE_DENSITY", "FILE_LOADERS"]

#: Largest ``S V`` of an n-gram conditional held dense (2 GiB of float64): a sparse input or file
#: beyond it is refused before anything is allocated.
MAX_DENSE_ENTRIES = 2**28
#: ``.npz`` keys of an n-gram saved in the sparse (CSR) form, besides ``order`` and ``initial``.
SPARSE_KEYS = ("conditional_shape", "conditional_indptr", "conditional_indices", "conditional_data")


def _dense_from_csr(name: str, shape, indptr, indices, data) -> np.ndarray:
    """The dense ``(S, V)`` array of a CSR triple, after checking it (named errors, sizes first)."""
    shape = np.asarray(shape)
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or np.any(shape < 1):
        raise ValueError(f"{name}: shape must be two positive integers, got {shape.tolist()!r}")
    S, V = (int(d) for d in shape)
    if S * V > MAX_DENSE_ENTRIES:
        raise ValueError(f"{name}: a {S} x {V} conditional ({S * V} entries) exceeds the {MAX_DENSE_ENTRIES} entries "
                         "the engine holds dense (an n-gram this large does not fit the oracle's messages either)")
    indptr, indices, data = np.asarray(indptr), np.asarray(indices), np.asarray(data)
    if indptr.shape != (S + 1,) or indptr.dtype.kind not in "iu" or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}: indptr must be {S + 1} non-decreasing integers from 0")
    nnz = int(indptr[-1])
    if indices.shape != (nnz,) or data.shape != (nnz,) or indices.dtype.kind not in "iu":
        raise ValueError(f"{name}: indices and data must hold indptr[-1] = {nnz} entries, got {indices.shape} and {data.shape}")
    if nnz and (indices.min() < 0 or indices.max() >= V):
        raise ValueError(f"{name}: a column index is outside 0..{V - 1}")
    dense = np.zeros((S, V))
    rows = np.repeat(np.arange(S), np.diff(indptr))
    if np.any(np.bincount(rows * V + indices.astype(np.int64), minlength=S * V) > 1):
        raise ValueError(f"{name}: an entry is given twice")
    dense[rows, indices] = data
    return dense


def _check_distribution(name: str, array: np.ndarray, ndim: int) -> np.ndarray:
    """Return ``array`` as float64 after checking it is a (batch of) probability row(s).

    Raises ``ValueError`` naming ``name`` and the first offending row.
    """
    if np.iscomplexobj(array):  # float64 conversion would drop the imaginary part with only a warning
        raise ValueError(f"{name} must hold real numbers, got a complex array")
    try:
        arr = np.array(array, dtype=np.float64)  # a copy: freezing it must not freeze the caller's array
    except (TypeError, ValueError) as exc:  # strings, ragged rows, objects
        raise ValueError(f"{name} is not an array of real numbers ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} has a non-finite entry at index {tuple(int(i) for i in bad)}")
    if np.any(arr < 0):
        bad = np.argwhere(arr < 0)[0]
        raise ValueError(
            f"{name} has a negative entry {float(arr[tuple(bad)])!r} at index {tuple(int(i) for i in bad)}"
        )
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > PROB_SUM_ATOL
    if np.any(off):
        if ndim == 1:
            raise ValueError(f"{name} sums to {float(sums)!r}, not 1 (tolerance {PROB_SUM_ATOL})")
        row = int(np.argwhere(off)[0][0])
        raise ValueError(
            f"{name} row {row} sums to {float(sums[row])!r}, not 1 (tolerance {PROB_SUM_ATOL}); "
            "it is not a stochastic matrix"
        )
    arr.setflags(write=False)
    return arr


def _sample_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``weights`` ``(n, K)`` (rows of positive sum), drawn exactly.

    The engine's float64 inverse CDF (:func:`numerics.draws.inverse_cdf_rows`) at one fresh
    uniform per row (``rng.random(n)``); an index of probability zero is never drawn.
    """
    return inverse_cdf_rows(np.ascontiguousarray(weights, dtype=np.float64), rng.random(weights.shape[0]))


@dataclass(frozen=True, eq=False)
class HMM:
    """A hidden Markov model over ``S`` hidden states and ``V`` tokens.

    Parameters
    ----------
    initial : (S,) array
        ``initial[s] = q(z_1 = s)``.
    transition : (S, S) array
        ``transition[s, t] = q(z_{j+1} = t | z_j = s)``.
    emission : (S, V) array
        ``emission[s, v] = q(x_j = v | z_j = s)``.
    """

    initial: np.ndarray
    transition: np.ndarray
    emission: np.ndarray

    def __post_init__(self) -> None:
        initial = _check_distribution("initial", self.initial, 1)
        transition = _check_distribution("transition", self.transition, 2)
        emission = _check_distribution("emission", self.emission, 2)
        S = initial.shape[0]
        if transition.shape != (S, S):
            raise ValueError(f"transition has shape {transition.shape}, expected ({S}, {S}) from initial")
        if emission.shape[0] != S:
            raise ValueError(f"emission has {emission.shape[0]} rows, expected {S} (one per hidden state)")
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "transition", transition)
        object.__setattr__(self, "emission", emission)

    @property
    def n_states(self) -> int:
        return self.initial.shape[0]

    @property
    def vocab_size(self) -> int:
        return self.emission.shape[1]

    kind = "hmm"  # what the language is (``Language.kind``): the key of every per-kind choice

    def to_hmm(self) -> HMM:
        return self

    def kernel_language(self) -> HMM:
        """The form the compiled kernels and the dense exact methods read: the HMM itself."""
        return self

    def arrays(self) -> dict[str, np.ndarray]:
        """The parameters as the ``.npz`` file holds them: ``initial``, ``transition``, ``emission``."""
        return {"initial": self.initial, "transition": self.transition, "emission": self.emission}

    def save(self, path: str | Path) -> None:
        """Write ``.npz`` with keys ``initial``, ``transition``, ``emission``."""
        np.savez(path, **self.arrays())

    def sample(self, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` i.i.d. sequences of ``length`` tokens; returns an ``(n, length)`` int64 array."""
        _check_sample_args(n, length, rng)
        z = _sample_rows(np.broadcast_to(self.initial, (n, self.n_states)), rng)
        out = np.empty((n, length), dtype=np.int64)
        for j in range(length):
            if j:
                z = _sample_rows(self.transition[z], rng)
            out[:, j] = _sample_rows(self.emission[z], rng)
        return out


@dataclass(frozen=True, eq=False)
class NGram:
    """An n-gram language over ``V`` tokens, the HMM whose state is the last ``n-1`` tokens.

    State layout: the window ``(a_1, .., a_{n-1})`` (``a_{n-1}`` the newest token) has index
    ``s = sum_k a_k V^(n-1-k)``; it emits ``s % V`` deterministically, and on token ``v`` moves to
    ``successor(s, v) = (s % V^(n-2)) * V + v``. The state at position 1 is a window whose last
    token is ``x_1`` and whose earlier tokens are an unobserved pre-history drawn with it from
    ``initial``; so ``x_1..x_{n-1}`` have the law of the window's marginal, and from position
    ``n-1`` on the state is a function of the visible tokens alone.

    Parameters
    ----------
    order : int
        ``n >= 2``; ``n = 2`` is a first-order Markov chain over tokens.
    initial : (V^(n-1),) array
        Law of the state at position 1.
    conditional : (V^(n-1), V) array or scipy.sparse matrix
        ``conditional[s, v] = q(x_{j+1} = v | state s at position j)``. A scipy.sparse matrix is
        stored dense (refused beyond :data:`MAX_DENSE_ENTRIES`); the kernels read a mostly-zero
        conditional through its non-zeros whichever way it was given
        (:func:`numerics.languages.arrays.kernel_arrays`).
    """

    order: int
    initial: np.ndarray
    conditional: np.ndarray

    def __post_init__(self) -> None:
        if int(self.order) != self.order or self.order < 2:
            raise ValueError(f"order must be an integer >= 2, got {self.order!r}")
        object.__setattr__(self, "order", int(self.order))
        cond = self.conditional
        if hasattr(cond, "tocsr") and hasattr(cond, "nnz"):  # scipy.sparse, without importing scipy here
            csr = cond.tocsr()
            csr.sort_indices()
            cond = _dense_from_csr("conditional", np.array(csr.shape), csr.indptr, csr.indices, csr.data)
        conditional = _check_distribution("conditional", cond, 2)
        initial = _check_distribution("initial", self.initial, 1)
        V = conditional.shape[1]
        rows = conditional.shape[0]
        if V > 1 and (self.order - 1) * math.log2(V) > math.log2(max(rows, 1)) + 1:  # V^(n-1) > rows: no big int
            raise ValueError(f"conditional has {rows} rows, expected V^(n-1) = {V}^{self.order - 1} rows "
                             f"(about 2^{(self.order - 1) * math.log2(V):.4g}): order {self.order} does not fit "
                             f"a table of {rows} rows")
        S = V ** (self.order - 1)
        if conditional.shape[0] != S:
            raise ValueError(
                f"conditional has {conditional.shape[0]} rows, expected V^(n-1) = {V}^{self.order - 1} = {S}"
            )
        if initial.shape != (S,):
            raise ValueError(f"initial has shape {initial.shape}, expected ({S},) = V^(n-1) windows")
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "conditional", conditional)

    @property
    def vocab_size(self) -> int:
        return self.conditional.shape[1]

    @property
    def n_states(self) -> int:
        return self.conditional.shape[0]

    def successors(self) -> np.ndarray:
        """``(S, V)`` int64 array: ``successors()[s, v]`` is the state after emitting ``v`` from ``s``."""
        V, S = self.vocab_size, self.n_states
        base = (np.arange(S) % (S // V)) * V
        return base[:, None] + np.arange(V)[None, :]

    def emitted_token(self) -> np.ndarray:
        """``(S,)`` int64 array: the token that state ``s`` emits (its newest token, ``s % V``)."""
        return np.arange(self.n_states) % self.vocab_size

    def to_hmm(self) -> HMM:
        """The same language as a dense ``V^(n-1)``-state :class:`HMM` (for references and tests)."""
        S, V = self.n_states, self.vocab_size
        transition = np.zeros((S, S))
        np.put_along_axis(transition, self.successors(), self.conditional, axis=1)
        emission = np.zeros((S, V))
        emission[np.arange(S), self.emitted_token()] = 1.0
        return HMM(self.initial, transition, emission)

    kind = "ngram"

    def kernel_language(self) -> NGram:
        """The form the compiled kernels read: the n-gram itself (its sparse kernels)."""
        return self

    def arrays(self, sparse: bool | None = None) -> dict[str, np.ndarray]:
        """The parameters as the ``.npz`` file holds them: ``order``, ``initial`` and ``conditional``
        (dense) or the CSR keys :data:`SPARSE_KEYS` (sparse: ``conditional_shape`` ``(S, V)``,
        ``conditional_indptr`` ``(S+1,)``, ``conditional_indices`` (tokens, ascending per row) and
        ``conditional_data``).

        ``sparse = None``: sparse when the kernels would read it sparse (at most
        :data:`SPARSE_DENSITY` non-zero). Both forms load to the same language.
        """
        cond = self.conditional
        if sparse is None:
            sparse = np.count_nonzero(cond) <= SPARSE_DENSITY * cond.size
        if not sparse:
            return {"order": np.int64(self.order), "initial": self.initial, "conditional": cond}
        rows, cols = np.nonzero(cond)
        indptr = np.zeros(cond.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=cond.shape[0]), out=indptr[1:])
        return {"order": np.int64(self.order), "initial": self.initial,
                "conditional_shape": np.array(cond.shape, dtype=np.int64), "conditional_indptr": indptr,
                "conditional_indices": cols.astype(np.int64), "conditional_data": cond[rows, cols]}

    def save(self, path: str | Path, *, sparse: bool | None = None) -> None:
        """Write ``.npz`` with the keys of :meth:`arrays` (dense or sparse form)."""
        np.savez(path, **self.arrays(sparse))

    def sample(self, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` i.i.d. sequences of ``length`` tokens; returns an ``(n, length)`` int64 array."""
        _check_sample_args(n, length, rng)
        V = self.vocab_size
        succ_base = (np.arange(self.n_states) % (self.n_states // V)) * V
        s = _sample_rows(np.broadcast_to(self.initial, (n, self.n_states)), rng)
        out = np.empty((n, length), dtype=np.int64)
        for j in range(length):
            if j:
                v = _sample_rows(self.conditional[s], rng)
                s = succ_base[s] + v
            out[:, j] = s % V
        return out


#: What the compiled kernels take (:func:`numerics.languages.arrays.kernel_arrays`); every language
#: gives its own with ``language.kernel_language()``.
KernelLanguage = HMM | NGram

#: Every kind of language the engine's functions accept. Each says what it is (``kind``: ``"hmm"``,
#: ``"ngram"``, ``"interval"``, ``"sparse-hmm"``), gives the form the kernels read
#: (``kernel_language()``), samples itself (``sample``) and writes itself (``arrays``, ``save``); a
#: function that has a closed form for one kind finds it from the object, never from a preset's name.
# the last two are numerics.languages.interval's, named as strings: it imports this module (no import circle)
Language = Union[HMM, NGram, "SparseHMM", "IntervalLanguage"]  # noqa: F821


def _check_sample_args(n: int, length: int, rng: np.random.Generator) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if n < 0 or length < 1:
        raise ValueError(f"need n >= 0 sequences and length >= 1, got n={n}, length={length}")


_HMM_KEYS = {"initial", "transition", "emission"}
_NGRAM_KEYS = {"order", "initial", "conditional"}


LOAD_COPIES = 3  # peak of loading a language per byte its arrays declare: the arrays, float64 copies, row checks


def _check_members(path: Path) -> None:
    """Before any array is read: refuse a file holding both an HMM and an n-gram, arrays whose ``.npy``
    headers declare shapes that cannot belong together (an ``initial`` of another length than the
    rows of ``transition``, ``emission`` or ``conditional``), and a file whose arrays together
    declare more than this machine can hold (:data:`LOAD_COPIES` times their bytes:
    :func:`numerics.machine.check_memory`), naming the file, the keys and the sizes.

    Files that are no zip archive are left to :func:`load_language_file`'s own messages.
    """
    from numerics.machine import check_memory, format_bytes

    declared: dict[str, tuple[tuple, np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as z:
            members = {n[:-4]: n for n in z.namelist() if n.endswith(".npy")}
            if _HMM_KEYS <= members.keys() and (_NGRAM_KEYS - {"initial"}) <= members.keys():
                raise ValueError(f"{str(path)!r} holds both an HMM (initial/transition/emission) and an n-gram "
                                 "(order/initial/conditional): which language is meant is ambiguous; keep one "
                                 "set of keys")
            for key, name in sorted(members.items()):
                with z.open(name) as fh:
                    try:
                        version = np.lib.format.read_magic(fh)
                        read = {(1, 0): np.lib.format.read_array_header_1_0,
                                (2, 0): np.lib.format.read_array_header_2_0}[version]
                        shape, _, dtype = read(fh)
                    except (ValueError, OSError, EOFError, KeyError, SyntaxError):
                        continue  # a damaged or unusual header: the loader below names it
                declared[key] = (tuple(int(d) for d in shape), dtype)
    except (OSError, zipfile.BadZipFile):
        return
    sizes = {k: math.prod(shape) * dtype.itemsize for k, (shape, dtype) in declared.items()}
    largest = max(sizes, key=sizes.get, default=None)
    if largest is not None:
        shape, dtype = declared[largest]
        check_memory(LOAD_COPIES * sum(sizes.values()),
                     f"{str(path)!r}: array {largest!r} declares shape {shape} of {dtype} "
                     f"({format_bytes(sizes[largest])}); loading the file ({format_bytes(sum(sizes.values()))} of "
                     f"arrays, {LOAD_COPIES} copies while they are checked)",
                     "it was not read; a language this large needs a larger machine (or MDM_THEORY_MEMORY_GIB)")
    shapes = {k: shape for k, (shape, _) in declared.items()}
    initial = shapes.get("initial", ())
    if len(initial) != 1:
        return  # the constructors name it
    S = initial[0]  # the constructors' own checks, on the headers: before a large array is read (and checked)
    if len(shapes.get("transition", ())) == 2 and shapes["transition"] != (S, S):
        raise ValueError(f"{str(path)!r}: transition has shape {shapes['transition']}, expected ({S}, {S}) from "
                         "initial (read from the headers; nothing was loaded)")
    if len(shapes.get("emission", ())) == 2 and shapes["emission"][0] != S:
        raise ValueError(f"{str(path)!r}: emission has {shapes['emission'][0]} rows, expected {S} (one per hidden "
                         "state; read from the headers, nothing was loaded)")
    if len(shapes.get("conditional", ())) == 2 and shapes["conditional"][0] != S:
        raise ValueError(f"{str(path)!r}: initial has shape {initial}, expected ({shapes['conditional'][0]},) = "
                         "V^(n-1) windows, one per conditional row (read from the headers; nothing was loaded)")


def load_language_file(path: str | Path) -> Language:
    """Load a language written by :meth:`HMM.save`, :meth:`NGram.save` or ``IntervalLanguage.save``.

    An ``.npz`` with keys ``initial``, ``transition``, ``emission`` is an :class:`HMM`; one with
    ``order``, ``initial``, ``conditional`` (or the sparse form's :data:`SPARSE_KEYS`) is an
    :class:`NGram`; one with ``interval_l`` is the interval language
    (:class:`~numerics.languages.interval.IntervalLanguage`, with its closed forms). Anything else
    is a ``ValueError`` naming the keys that were found.
    """
    path = Path(path)
    _check_members(path)
    try:
        with open(path, "rb") as fh:  # fh: closed even if not a zip
            size = os.fstat(fh.fileno()).st_size
            is_npz = zipfile.is_zipfile(fh)  # else np.load would try a .npy or a pickle instead
            if is_npz:
                fh.seek(0)
                with np.load(fh, allow_pickle=False) as data:
                    keys = set(data.files)
                    arrays = {k: data[k] for k in keys}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # missing, unreadable, damaged members
        raise ValueError(f"cannot read language file {str(path)!r}: {exc}") from exc
    if not is_npz:
        raise ValueError(f"cannot read language file {str(path)!r}: not an .npz archive (the zip file np.savez writes): "
                         + ("it is empty" if size == 0 else f"{size} bytes of another format or a truncated archive"))
    if {"initial", "transition", "emission"} <= keys:
        return HMM(arrays["initial"], arrays["transition"], arrays["emission"])
    sparse = set(SPARSE_KEYS) <= keys
    if {"order", "initial"} <= keys and ("conditional" in keys or sparse):
        order = arrays["order"]
        if order.shape != () or order.dtype.kind not in "iuf":
            raise ValueError(f"order in {str(path)!r} must be one integer, got an array of shape {order.shape} "
                             f"and dtype {order.dtype}")
        if "conditional" in keys:
            conditional = arrays["conditional"]
        else:
            conditional = _dense_from_csr(f"conditional in {str(path)!r}", *(arrays[k] for k in SPARSE_KEYS))
        return NGram(order.item(), arrays["initial"], conditional)  # NGram refuses 2.5, not truncated
    if frozenset(keys) in FILE_LOADERS:
        return FILE_LOADERS[frozenset(keys)](arrays, str(path))
    raise ValueError(
        f"{str(path)!r} holds keys {sorted(keys)}; expected initial/transition/emission (HMM), "
        "order/initial/conditional (n-gram; or order/initial/" + "/".join(SPARSE_KEYS) + ") or interval_l (interval language)"
    )
