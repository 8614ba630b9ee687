"""How to install and run, and how long ``make report`` takes: stated once, read by every page.

The report page (:mod:`validation.report`), ``docs/getting-started.md`` (its marked block is
rewritten by ``mdm-theory docs``, :mod:`validation.docs`) and the ``report`` command's help all
take their text from here, so they cannot disagree. Text is Markdown (code in backticks).
"""

from __future__ import annotations

__all__ = ["MAKE_REPORT_MINUTES", "run_time_sentence", "setup_sentences"]

MAKE_REPORT_MINUTES = 5
"""Wall-clock minutes of ``make report`` (``mdm-theory report --train`` from an empty cache) on an
idle 2-core CPU: the one place the run time is stated. Set it from a measurement on an idle
machine, then run ``mdm-theory docs`` to refresh docs/getting-started.md."""


def run_time_sentence() -> str:
    """The run time of ``make report`` as one sentence (Markdown; code in backticks)."""
    return (f"`make report` (which runs `mdm-theory report --train`) takes about {MAKE_REPORT_MINUTES} minutes "
            "on an idle 2-core CPU from an empty cache; a re-run reuses every cached point.")


def setup_sentences() -> list[str]:
    """How to install and run, for a CPU and for a GPU user, matching the Makefile (Markdown)."""
    return [
        run_time_sentence(),
        "The Makefile creates `.venv`, installs `torch==2.13.0` from pip's default index and then this "
        "package with its `dev` extras. Which build of torch that is depends on pip: on Linux x86-64 the "
        "wheel on PyPI is the CUDA build; where pip is configured with a local CPU wheel (pip's `find-links`, as "
        "on the project's development machine) that CPU wheel is installed.",
        "A GPU user runs the same `make report`: training and evaluation of the MDM use CUDA when torch "
        "sees a GPU (the oracle experiments run on the CPU either way). For the paper's scale, after "
        "`make install`: `.venv/bin/mdm-theory report --full --train`.",
        "To choose the torch build yourself, install it into `.venv` before `make`, e.g. "
        "`python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 --index-url "
        "https://download.pytorch.org/whl/cpu`; the Makefile keeps an installed torch that satisfies its pin.",
    ]
