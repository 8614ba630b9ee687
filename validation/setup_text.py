"""How to install and run, and how long ``make report`` takes: stated once, read by every page.

The report page (:mod:`validation.report`), ``docs/getting-started.md`` (its marked block is
rewritten by ``mdm-theory docs``, :mod:`validation.docs`) and the ``report`` command's help all
take their text from here, so they cannot disagree. Text is Markdown (code in backticks).
"""

from __future__ import annotations

__all__ = ["MAKE_REPORT_MINUTES", "REPORT_TIMING", "SECTION_SECONDS", "quick_start_sentences", "run_time_sentence",
           "setup_sentences", "timing_markdown"]

#: The measurement behind every statement of how long ``make report`` takes: the one place it is written.
#: ``sections``: section -> (CPU seconds, wall seconds) of ``mdm-theory report --train --progress`` from an
#: empty results cache (the progress lines print both); CPU includes the training pool's processes.
#: ``whole_s``: the whole ``make report`` timed on an idle machine (None: not timed as a whole yet).
REPORT_TIMING: dict = {
    "date": "2026-11-28",
    "machine": "the project's 2-core development machine (Intel Xeon, Linux x86-64, 24 GiB), idle",
    "what": "make report in a fresh clone of 5eec1d8 (14 sections; mdm-theory report --train --progress --jobs 2: "
            "the learned section in the main process from the start, its training pool of two processes beside "
            "the numba warm-up (one lane in a worker: tiny runs of adaptive, decoders, noise and cost, so each "
            "kernel is compiled once) and the light sections in the other worker, then the sections that read "
            "the compiled kernels two at a time; so the wall seconds below overlap): installation (about 60 s), "
            "numba compilation from an empty cache, and the report from an empty results cache; the progress "
            "lines' CPU and wall seconds per section",
    "warm_up": (248, 362),
    "sections": {"learned": (378, 305), "thresholds": (3, 5), "schedules": (2, 3), "lemmas": (17, 36),
                 "adaptive": (12, 12), "decoders": (2, 3), "ter": (49, 48), "cost": (30, 34), "ser": (27, 25),
                 "noise": (5, 5), "runtimes": (8, 8), "lossless": (3, 3), "calls": (72, 75), "realtext": (15, 10)},
    "training_cpu_s": {"2gram MDM": 70, "lee-char-2gram MDM": 35, "lee-char-2gram AR": 10, "interval MDM": 147,
                       "interval AR": 21, "2gram AR": 20},
    "whole_s": 550,
    "install_s": 60,
    "previous": "earlier the same day at ba05bb9: 564 s; the day before at 5a3d766 (the three processes compiling the same kernels at once, the cost "
                "section timing on two threads, the cpu-small 2gram MDM): 767 s; at 7dff539 (11 sections, one at "
                "a time): 594 s; at fb5a937: 646 s; 2026-11-25, before the cuts of issue 34: 838 s with warm numba "
                "kernels",
}

MAKE_REPORT_MINUTES = 10
"""Wall-clock minutes of ``make report`` stated to readers: the last whole run timed on an idle machine
(``REPORT_TIMING["previous"]``) until ``REPORT_TIMING["whole_s"]`` holds a new one. After timing it, set both,
then run ``mdm-theory docs`` to refresh README.md, docs/getting-started.md and docs/performance.md."""

SECTION_SECONDS: dict[str, float] = {name: wall for name, (_, wall) in REPORT_TIMING["sections"].items()}
"""Seconds of each report section in ``make report`` as measured (section -> seconds), for the progress
lines' estimate of the time left (:func:`validation.report.run_experiments`); empty: no estimate."""


def run_time_sentence() -> str:
    """The run time of ``make report`` as one sentence (Markdown; code in backticks)."""
    t = REPORT_TIMING
    measured = (f" ({t['whole_s']:.0f} s measured on {t['date']}, installation and numba compilation included)"
                if t["whole_s"] is not None else "")
    return (f"`make report` (which runs `mdm-theory report --train`) takes about {MAKE_REPORT_MINUTES} minutes "
            f"on an idle 2-core CPU from a fresh clone{measured}; a re-run reuses every cached point.")


def quick_start_sentences() -> list[str]:
    """What the two commands do and how long they take, two sentences each (README's quick start)."""
    return [
        "`make report` installs everything into `.venv`, then computes the oracle's exact and Monte Carlo curves, "
        "checks every lemma and bound, trains small MDM and AR models and writes `report/index.html`, printing one "
        "line per section and long step. " + run_time_sentence().replace("`make report` (which runs `mdm-theory "
                                                                          "report --train`) takes", "It takes"),
        "`make test` installs the same way, then runs the whole test suite on two cores. It takes about 8 minutes "
        "on an idle 2-core CPU from a fresh clone (491 s measured on 2026-11-28: the suite 435 s, numba "
        "compilation included).",
    ]


def timing_markdown() -> str:
    """docs/performance.md's ``make report`` table, from :data:`REPORT_TIMING` (Markdown)."""
    t = REPORT_TIMING
    rows = ["| section | CPU seconds | wall seconds |", "|---|---|---|"]
    if t.get("warm_up"):
        rows.append(f"| numba warm-up (one lane) | {t['warm_up'][0]:.0f} | {t['warm_up'][1]:.0f} |")
    rows += [f"| `{name}` | {cpu:.0f} | {wall:.0f} |" for name, (cpu, wall) in t["sections"].items()]
    if t["sections"]:
        rows.append(f"| the sections above | {sum(c for c, _ in t['sections'].values()):.0f} | "
                    f"{sum(w for _, w in t['sections'].values()):.0f} |")
    if t.get("training_cpu_s"):
        train = ", ".join(f"{k} {v:.0f}" for k, v in t["training_cpu_s"].items())
        rows.append(f"| `learned` training, CPU seconds of optimizer steps per model | {train} (total "
                    f"{sum(t['training_cpu_s'].values()):.0f}) | |")
    whole = (f"The whole `make report` from a fresh clone: {t['whole_s']:.0f} s." if t["whole_s"] is not None
             else "The whole `make report` has not been timed on an idle machine since these cuts.")
    return "\n\n".join([f"### {t['date']}: per section", f"{t['what']}; {t['machine']}.",
                         "\n".join(rows) if t["sections"] else "(not measured)",
                         f"{whole} Installation: about {t['install_s']} s.",
                         f"### Before: the whole run\n\n{t['previous']}."])


def setup_sentences() -> list[str]:
    """How to install and run, for a CPU and for a GPU user, matching the Makefile (Markdown)."""
    return [
        *quick_start_sentences(),
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
