"""Progress lines on stderr when it is not a terminal (``make report`` piped to a log)."""

import io

from validation.progress import progress_lines, seconds


def _clock(monkeypatch, ticks):
    it = iter(ticks)
    monkeypatch.setattr("validation.progress.time.perf_counter", lambda: next(it))


def test_one_line_per_long_step_with_done_total_elapsed_and_estimate(monkeypatch):
    # start, then after each of 4 items: 10 s, 11 s (too soon for a line), 30 s, 40 s; the end reads 40 s again
    _clock(monkeypatch, [0.0, 10.0, 11.0, 30.0, 40.0, 40.0])
    out = io.StringIO()
    assert list(progress_lines(["a", "b", "c", "d"], "learned: training", stream=out)) == ["a", "b", "c", "d"]
    assert out.getvalue().splitlines() == [
        "[report] learned: training 1/4, 10 s elapsed",  # one step (it compiled): no estimate yet
        "[report] learned: training 3/4, 30 s elapsed, about 10 s left",  # (30 - 10) / 2 steps after the first
        "[report] learned: training 4/4, 40 s elapsed",
    ]


def test_a_quick_loop_prints_nothing(monkeypatch):
    _clock(monkeypatch, [0.0, 1.0, 2.0, 2.0])
    out = io.StringIO()
    list(progress_lines([1, 2], "ter: points", stream=out))
    assert out.getvalue() == ""


def test_a_long_loop_ends_with_its_last_line(monkeypatch):
    _clock(monkeypatch, [0.0, 3.0, 4.0, 6.0, 6.0])  # no step alone is long, the loop is
    out = io.StringIO()
    list(progress_lines(iter([1, 2, 3]), "ser: presets", stream=out))  # no len(): no total, no estimate
    assert out.getvalue().splitlines() == ["[report] ser: presets 3, 6 s elapsed"]


def test_seconds_reads_as_minutes_beyond_100_s():
    assert [seconds(s) for s in (0.4, 42, 99.4, 125, 3600)] == ["0 s", "42 s", "99 s", "2 min 05 s", "60 min 00 s"]


def test_the_learned_pool_also_trains_the_real_text_models_when_both_train():
    from dataclasses import replace

    from validation.experiments import config_for
    from validation.report import _shared_training

    learned, text = replace(config_for("learned"), train="default"), replace(config_for("realtext"), train=True)
    shared = _shared_training({"learned": learned, "realtext": text})
    assert shared["learned"].also_train == text.learned and shared["realtext"] is text
    alone = {"learned": learned, "realtext": replace(text, train=False)}  # nothing to share: configs untouched
    assert _shared_training(alone) == alone


def test_a_ratio_never_measured_is_not_judged():
    import math

    from validation.experiments.learned_runs import TrainedRun, describe

    nan = math.nan
    run = TrainedRun("2gram", "mdm", "c.pt", "h", False, 329, nan, [nan, nan], 1.03, False, nan, nan, nan, nan, nan,
                     nan, 1, False, "0" * 16)
    text = describe(run)
    assert "not measured after 329 steps" in text and "nan" not in text and "MISSES" not in text
