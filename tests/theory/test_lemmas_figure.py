"""The lemma tightness figure (validation/experiments/lemmas.py) draws the violated claims and says so."""

import math

import matplotlib
import pytest

from validation.experiments._base import ExperimentResult
from validation.experiments.lemmas import plot

matplotlib.use("Agg")


def _row(claim, violations, instances, min_t, med_t):
    return {"claim": claim, "violations": violations, "instances": instances, "min_tightness": min_t,
            "median_tightness": med_t}


def _result(rows):
    out = ExperimentResult("lemmas", "t", config={})
    out.tables["claims"] = rows
    return out


def test_violated_claims_get_their_own_red_panel():
    import matplotlib.pyplot as plt

    rows = [_row("A.1", 0, 10, 1.0, 3.0), _row("C.5.concavity", 24, 40, 0.0, 0.0),
            _row("C.5.jensen", 2, 21, 0.8, 1.2), _row("C.1", 0, 10, math.nan, math.nan)]
    (fig_plot,) = plot(_result(rows))
    axes = fig_plot.figure.axes
    assert len(axes) == 2
    labels = [t.get_text() for t in axes[1].get_yticklabels()]  # one row per claim (issue 19: readable ids)
    assert labels == ["C.5.concavity", "C.5.jensen"]  # tightness 0 cannot sit on a log axis: drawn here
    widths = [p.get_width() for p in axes[1].patches]
    assert widths == pytest.approx([24 / 40, 2 / 21])
    assert all(p.get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb("#c62828")) for p in axes[1].patches)
    assert "C.5.concavity, C.5.jensen" in fig_plot.caption and "in red" in fig_plot.caption
    assert "Not drawn (1" in fig_plot.caption and "C.1" in fig_plot.caption
    plt.close(fig_plot.figure)


def test_caption_says_when_nothing_was_violated():
    import matplotlib.pyplot as plt

    (fig_plot,) = plot(_result([_row("A.1", 0, 10, 1.0, 3.0), _row("A.3", 0, 10, 1.2, 2.0)]))
    assert len(fig_plot.figure.axes) == 1
    assert "No claim was violated" in fig_plot.caption and "red" not in fig_plot.caption
    plt.close(fig_plot.figure)
