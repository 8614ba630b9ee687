"""The paper's random languages (Table 1, Appendix E.1), the interval language, and a preset registry.

Generator (:mod:`numerics.languages.generators`, ``docs/methods/languages.md``; the paper's
Algorithms 1-2 are not recoverable, this is our documented definition): every probability row
(initial, transition, and for the HMM also emission) is ``softmax(temperature * g)`` with ``g``
i.i.d. standard normal drawn from ``numpy.random.default_rng(seed)``; entries below ``threshold``
are set to 0 and the row is renormalized (always keeping each row's largest entry, so no row is
ever emptied). The normals are drawn in a fixed order that does not depend on the threshold
(n-gram: ``initial`` then ``conditional`` row by row; HMM: ``initial``, ``transition``,
``emission``), so a pruned preset is exactly its unpruned twin with small entries removed.

For an n-gram the ``initial`` row is the law of the first state, a window of ``n-1`` tokens
(pre-history and ``x_1``; see :class:`~numerics.languages.hmm.NGram`), one row of ``V^(n-1)`` entries.

Presets (:data:`PRESETS`; seeds in :data:`SEEDS`):

============== ===================================================== =========
name           language                                              threshold
============== ===================================================== =========
2gram          2-gram, V = 8, temperature 2                           0 (TER)
3gram          3-gram, V = 8, temperature 2                           0
4gram          4-gram, V = 8, temperature 2                           0
hmm            HMM, 32 states, V = 8, temperature 3.2                 0
2gram-pruned   as 2gram                                               0.008 (SER)
3gram-pruned   as 3gram                                               0.008
4gram-pruned   as 4gram                                               0.005
hmm-pruned     as hmm                                                 0.05 (*)
hmm-pruned-paper  as hmm, the paper's threshold (complete support)    0.003
interval       Theorem 4.4 language, l = 5, V = 16 (minimal HMM, 544 states)
interval-l{l}  the same for interval length l, 2 <= l <= 7
lee-char-{n}gram  n-gram (n = 1..4) fitted to the Lee news corpus, characters, V = 55
lee-word[-v{C}]-{n}gram  the same over words, vocabulary cap C (default 256) with <unk>
============== ===================================================== =========

The interval presets load as :class:`~numerics.languages.interval.IntervalLanguage` objects, so
every function finds their closed forms (SER, KL, entropy, direct sampling) from the object; the
compiled kernels read its minimal HMM (``kernel_language()``, dense while it has <= 4096 states:
``l <= 5``). Its ``.npz`` (``save``) holds ``interval_l`` and loads back as the same object.

The ``lee-*`` languages are fitted on first use (:mod:`numerics.languages.corpus`; the corpus
ships in the ``gensim`` wheel, the ``realtext`` extra) and, like ``interval-l{l}``, are accepted by
name but not listed by :func:`preset_names`.

(*) A finding about our generator (docs/findings.md): with the paper's threshold 0.003 the
pruned 32-state HMM still has *complete support* -- from every reachable set of hidden states
every token can be emitted next (subset construction, :func:`support_is_complete`), so every
sequence of every length is valid and the SER of every sampler is exactly 0 (96 of 100 seeds
behave so). The SER preset ``hmm-pruned`` therefore uses threshold 0.05, the smallest of
{0.003, 0.03, 0.05, 0.1} whose one-step SER at L = 64 is near 1 like the n-gram presets
(0.98, Clopper-Pearson [0.966, 0.992] from 500 samples); ``hmm-pruned-paper`` keeps 0.003.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from numerics.languages.corpus import LEE_NAME_RE, fit_lee, parse_lee_name
from numerics.languages.generators import prune_rows, random_hmm, random_ngram, softmax_rows
from numerics.languages.hmm import Language, load_language_file
from numerics.languages.interval import IntervalLanguage

__all__ = [
    "softmax_rows",  # re-exported from numerics.languages.generators, the generators' one home
    "prune_rows",
    "random_ngram",
    "random_hmm",
    "Preset",
    "PRESETS",
    "SEEDS",
    "HMM_SER_THRESHOLD",
    "preset_names",
    "get_preset",
    "load_language",
    "support_is_complete",
]

#: Fixed seeds of the Table 1 presets: the arXiv id 2502.09622 followed by the order (32: the HMM's
#: states). Pruned and unpruned twins share the seed, hence the same normals.
SEEDS = {"2gram": 2502_0962_2, "3gram": 2502_0962_3, "4gram": 2502_0962_4, "hmm": 2502_0962_32}

#: Table 1 parameters: order/states, vocabulary, temperature, pruning threshold of the SER variant.
TABLE1 = {
    "2gram": dict(order=2, vocab=8, temperature=2.0, threshold=0.008),
    "3gram": dict(order=3, vocab=8, temperature=2.0, threshold=0.008),
    "4gram": dict(order=4, vocab=8, temperature=2.0, threshold=0.005),
    "hmm": dict(states=32, vocab=8, temperature=3.2, threshold=0.003),
}

#: Threshold of the ``hmm-pruned`` SER preset: 0.003 (Table 1) leaves the support complete, see above.
HMM_SER_THRESHOLD = 0.05

INTERVAL_DEFAULT_L = 5  # Theorem 4.4 uses l = 5 (vocabulary 16)


@dataclass(frozen=True)
class Preset:
    """A named language of the registry.

    Attributes
    ----------
    name : str
    description : str
    build : callable
        ``build() -> Language`` (deterministic): an ``HMM``, ``NGram`` or ``IntervalLanguage``.
    seed : int or None
        The generator seed (None for the deterministic interval language).
    params : dict
        The generator's parameters.
    """

    name: str
    description: str
    build: Callable[[], Language] = field(repr=False)
    seed: int | None = None
    params: dict = field(default_factory=dict)


def _table1_preset(base: str, pruned: bool, threshold: float | None = None, suffix: str = "-pruned") -> Preset:
    params = dict(TABLE1[base])
    if not pruned:
        params["threshold"] = 0.0
    elif threshold is not None:
        params["threshold"] = threshold
    seed = SEEDS[base]
    name = f"{base}{suffix}" if pruned else base
    if base == "hmm":
        desc = f"random HMM, {params['states']} states, V = {params['vocab']}, temperature {params['temperature']}"
        build = functools.partial(random_hmm, seed=seed, **params)
    else:
        desc = f"random {params['order']}-gram, V = {params['vocab']}, temperature {params['temperature']}"
        build = functools.partial(random_ngram, seed=seed, **params)
    desc += f", threshold {params['threshold']} ({'SER' if pruned else 'TER'})"
    return Preset(name, desc, build, seed, params)


def _interval_preset(l: int, name: str) -> Preset:
    lang = IntervalLanguage(l)
    return Preset(
        name,
        f"Theorem 4.4 interval language, l = {l}, V = {lang.vocab_size} (minimal HMM, {lang.n_states} states)",
        lambda: lang,
        None,
        {"l": l, "vocab": lang.vocab_size},
    )


PRESETS: dict[str, Preset] = {
    **{b: _table1_preset(b, False) for b in TABLE1},
    **{f"{b}-pruned": _table1_preset(b, True) for b in TABLE1 if b != "hmm"},
    "hmm-pruned": _table1_preset("hmm", True, HMM_SER_THRESHOLD),
    "hmm-pruned-paper": _table1_preset("hmm", True, suffix="-pruned-paper"),
    "interval": _interval_preset(INTERVAL_DEFAULT_L, "interval"),
}

_INTERVAL_RE = re.compile(r"interval-l(\d+)")


def preset_names() -> list[str]:
    """The registered names (``interval-l{l}`` is accepted too for any ``l >= 2``)."""
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """The :class:`Preset` called ``name``; ``ValueError`` listing the presets for an unknown name."""
    if name in PRESETS:
        return PRESETS[name]
    m = _INTERVAL_RE.fullmatch(name)
    if m:
        return _interval_preset(int(m.group(1)), name)
    if LEE_NAME_RE.fullmatch(name):
        return _lee_preset(name)
    raise ValueError(f"unknown language preset {name!r}; presets: {', '.join(preset_names())}, interval-l<l>, "
                     "lee-char-<n>gram, lee-word[-v<C>]-<n>gram")


def _lee_preset(name: str) -> Preset:
    level, cap, order = parse_lee_name(name)
    desc = (f"{order}-gram fitted to the Lee news corpus (gensim), {level} level, lowercased, smoothing none"
            + (f", vocabulary cap {cap} with <unk>" if cap is not None else ""))
    return Preset(name, desc, lambda: fit_lee(name).language, None, {"level": level, "order": order, "vocab_cap": cap})


@functools.lru_cache(maxsize=32)
def _build(name: str) -> Language:
    return get_preset(name).build()


def load_language(spec: str | Path) -> Language:
    """A language from a preset name (see :data:`PRESETS`) or a path to an ``.npz`` language file.

    Raises ``ValueError`` naming the presets when ``spec`` is neither a preset nor an existing file.
    """
    text = str(spec)
    if isinstance(spec, str) and (text in PRESETS or _INTERVAL_RE.fullmatch(text) or LEE_NAME_RE.fullmatch(text)):
        return _build(text)
    path = Path(spec)
    if path.is_file():
        return load_language_file(path)
    if path.is_dir():
        raise ValueError(f"{text!r} is a directory, not a language .npz file")
    raise ValueError(
        f"{text!r} is neither a language preset nor an existing .npz file; "
        f"presets: {', '.join(preset_names())}, interval-l<l>"
    )


# ----- support ----------------------------------------------------------------------------------


def support_is_complete(language: Language, *, max_sets: int = 100_000) -> bool | None:
    """Exactly: is every token sequence, of every length, in the support ``L_q``?

    Subset construction on the support graph: the set ``R_j`` of hidden states possible after
    ``x_1..x_j`` is ``{t : exists s in R_{j-1}, A[s,t] > 0, B[t,x_j] > 0}``; the support is complete
    iff no reachable set, for any next token, becomes empty (``R_1`` from ``initial``). When it is
    complete, ``SER(p) = 0`` for *every* sampler ``p``, so the language is useless for SER
    experiments. Returns None when more than ``max_sets`` sets are reachable (undecided).
    """
    hmm = language.kernel_language().to_hmm()
    A, E = hmm.transition > 0, hmm.emission > 0
    first = hmm.initial > 0
    V = hmm.vocab_size
    frontier = [frozenset(np.flatnonzero(first & E[:, v]).tolist()) for v in range(V)]
    seen: set = set()
    while frontier:
        nxt = []
        for R in frontier:
            if not R:
                return False
            if R in seen:
                continue
            seen.add(R)
            if len(seen) > max_sets:
                return None
            reach = A[sorted(R)].any(axis=0)
            nxt.extend(frozenset(np.flatnonzero(reach & E[:, v]).tolist()) for v in range(V))
        frontier = nxt
    return True
