"""How to install and run, and how long ``make report`` takes: stated once, read by every page.

The report page (:mod:`validation.report`), ``docs/getting-started.md`` (its marked block is
rewritten by ``mdm-theory docs``, :mod:`validation.docs`) and the ``report`` command's help all
take their text from here, so they cannot disagree. Text is Markdown (code in backticks).
"""

from __future__ import annotations

__all__ = ["MAKE_REPORT_MINUTES", "SECTION_SECONDS", "run_time_sentence", "setup_sentences"]

MAKE_REPORT_MINUTES = 14
"""Wall-clock minutes of ``make report`` (``mdm-theory report --train`` from an empty cache) on an
idle 2-core CPU: the one place the run time is stated (measured 2026-11-25 in a fresh clone after its
installation, numba kernels already compiled by the test suite: 855 s, of which the learned section
586 s; 2026-11-23: 528 s with installation; plus the real-text section's learned models, one to two
minutes estimated from a loaded machine, not re-timed). Set it from a measurement on an idle
machine, then run ``mdm-theory docs`` to refresh docs/getting-started.md."""


SECTION_SECONDS: dict[str, float] = {}
"""Seconds of each report section in ``make report`` as measured (section -> seconds), for the progress
lines' estimate of the time left (:func:`validation.report.run_experiments`); empty: no estimate."""


def run_time_sentence() -> str:
    """The run time of ``make report`` as one sentence (Markdown; code in backticks)."""
    return (f"`make report` (which runs `mdm-theory report --train`) takes about {MAKE_REPORT_MINUTES} minutes "
            "on an idle 2-core CPU from an empty cache; a re-run reuses every cached point.")


def setup_sentences() -> list[str]:
    """How to install and run, for a CPU and for a GPU user, matching the Makefile (Markdown)."""
    return [
        run_time_sentence(),
        "The Makefile creates `.venv`, installs `torch==2.13.0` from pip's default index, then this package "
        "with its `dev` extras; a torch already in `.venv` that satisfies the pin is kept. On Linux x86-64 "
        "the PyPI wheel of torch is a CUDA build (several GB of CUDA libraries). On a CPU-only machine, install "
        "the CPU build first so they are never pulled: `python3 -m venv .venv && .venv/bin/pip install "
        "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu`, then `make report` (where pip "
        "already finds a local CPU wheel, as through `find-links` on the project's development machine, "
        "plain `make report` installs that one).",
        "A GPU user (Linux x86-64 with an NVIDIA driver recent enough for PyPI's CUDA build) runs exactly "
        "`make report`: training and evaluation of the MDM use the GPU when torch sees one (the oracle "
        "experiments run on the CPU either way). With an older driver, first install the CUDA build of "
        "torch that matches it into `.venv` the same way, with the index URL pytorch.org gives for that CUDA "
        "version. The paper's scale, after `make install`: `.venv/bin/mdm-theory report --full --train`.",
    ]
