"""The default real-text corpus, and the named languages fitted to it (``lee-char-2gram`` ...).

The corpus is the Lee news corpus (``lee_background.cor``: 300 Australian news articles, one per
line; 360,082 bytes of ASCII, 59,890 whitespace-separated words) that the ``gensim`` wheel
carries as test data at ``gensim/test/test_data/lee_background.cor``. ``gensim`` is in the
``realtext`` extra of ``pyproject.toml`` (installed by ``make`` through ``dev``); the numerics core
does not need it: only these functions do, and they raise :class:`CorpusUnavailableError` naming
the extra when it is missing. Nothing is downloaded at run time.

The file is found with ``importlib.util.find_spec("gensim")`` -- the package's location without
importing it (``importlib.resources.files("gensim")`` would import gensim and its dependencies,
seconds of work for one file) -- and its SHA-256 is checked against :data:`LEE_SHA256`, so a
named language means the same text everywhere.

Named languages: ``lee-<level>[-v<C>]-<n>gram`` fits :func:`~numerics.languages.fit.fit_text`
to the corpus lowercased with smoothing ``none``: ``level`` ``char`` (no cap: ``V = 55`` after lowercasing) or
``word`` (cap ``C``, default :data:`WORD_CAP` = 256), ``n`` in 1..4. Fits are cached per process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from pathlib import Path

from numerics.languages.fit import FittedLanguage, fit_bytes

__all__ = [
    "LEE_NAME_RE",
    "LEE_PACKAGE",
    "LEE_PATH",
    "LEE_SHA256",
    "WORD_CAP",
    "CorpusUnavailableError",
    "fit_lee",
    "lee_corpus_bytes",
    "lee_corpus_path",
    "parse_lee_name",
]

LEE_PACKAGE = "gensim"
LEE_PATH = ("test", "test_data", "lee_background.cor")
LEE_SHA256 = "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb"  # gensim 4.4.0's copy
WORD_CAP = 256
LEE_NAME_RE = re.compile(r"lee-(char|word)(?:-v(\d+))?-([1-4])gram")


class CorpusUnavailableError(ImportError):
    """The package that ships the default corpus is not installed, or its copy is not the expected text."""


def lee_corpus_path() -> Path:
    """Where the installed ``gensim`` keeps ``lee_background.cor`` (gensim is not imported)."""
    spec = importlib.util.find_spec(LEE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusUnavailableError(
            f"the default corpus ships inside the '{LEE_PACKAGE}' wheel, which is not installed: "
            "pip install 'mdm-theory[realtext]' (make installs it through the dev extra)")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*LEE_PATH)
    if not path.is_file():
        raise CorpusUnavailableError(f"{LEE_PACKAGE} is installed but {path} is missing (a trimmed install?)")
    return path


@functools.lru_cache(maxsize=1)
def lee_corpus_bytes() -> bytes:
    """The corpus bytes, after checking their SHA-256 against :data:`LEE_SHA256`."""
    path = lee_corpus_path()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != LEE_SHA256:
        raise CorpusUnavailableError(f"{path} has SHA-256 {digest}, not the Lee corpus the named languages are "
                                     f"defined on ({LEE_SHA256})")
    return data


def parse_lee_name(name: str) -> tuple[str, int | None, int] | None:
    """``(level, vocab_cap, order)`` of a named Lee language, or ``None`` when ``name`` is not one."""
    m = LEE_NAME_RE.fullmatch(name)
    if m is None:
        return None
    level, cap, order = m.group(1), m.group(2), int(m.group(3))
    if level == "char":
        return (level, None if cap is None else int(cap), order)
    return (level, WORD_CAP if cap is None else int(cap), order)


@functools.lru_cache(maxsize=8)
def fit_lee(name: str) -> FittedLanguage:
    """The fitted language called ``name`` (module docstring); ``ValueError`` for another name."""
    parsed = parse_lee_name(name)
    if parsed is None:
        raise ValueError(f"{name!r} is not a Lee language name (lee-char-<n>gram, lee-word[-v<C>]-<n>gram, n in 1..4)")
    level, cap, order = parsed
    return fit_bytes(lee_corpus_bytes(), corpus_name=f"{LEE_PACKAGE}/{'/'.join(LEE_PATH)}", level=level,
                     order=order, smoothing="none", vocab_cap=cap, lowercase=True)
