"""Every experiment of the report runs at tiny size (strict: a bug raises) and plots what it got."""

import json
import math

import pytest

from validation.cache import ResultCache
from validation.experiments import EXPERIMENTS, config_for
from validation.experiments._base import ExperimentResult, MissingInput, Parts, need
from validation.experiments._style import language_color, plt

STATUSES = {"ok", "partial", "unavailable"}


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment_smoke(name, tmp_path):
    module = EXPERIMENTS[name]
    cfg = config_for(name, "tiny")
    result = module.run(cfg, cache=ResultCache(tmp_path), progress=False, strict=True)
    assert isinstance(result, ExperimentResult)
    assert result.status in STATUSES, (result.status, result.missing)
    assert not result.errors
    if result.status != "ok":
        assert result.missing, "an incomplete result must say what is missing"
    if result.status != "unavailable":
        assert result.tables or result.data
    # a result is plain JSON data (it is cached and written next to the report) ...
    payload = json.loads(json.dumps(result.to_json(), allow_nan=True))
    assert ExperimentResult.from_json(payload).tables.keys() == result.tables.keys()
    # ... and the figures are made from it alone
    plots = module.plot(ExperimentResult.from_json(payload))
    for p in plots:
        assert p.figure.axes and p.caption
        plt.close(p.figure)
    # a second run is served entirely from the cache and gives the same tables
    stored = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json") if "train" not in p.relative_to(tmp_path).parts}
    cache = ResultCache(tmp_path)
    again = module.run(cfg, cache=cache, progress=False, strict=True)
    assert json.dumps(again.tables, sort_keys=True, allow_nan=True) == json.dumps(result.tables, sort_keys=True,
                                                                                   allow_nan=True)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")
            if "train" not in p.relative_to(tmp_path).parts} == stored  # nothing recomputed (train/: runs' metrics.json)
    assert cache.counts()["hit"] == len(stored)


def test_configs_are_frozen_and_scales_grow():
    for name, module in EXPERIMENTS.items():
        tiny, default, full = (config_for(name, s) for s in ("tiny", "default", "full"))
        with pytest.raises(Exception):
            tiny.seed = 1  # frozen dataclass
        for fld in ("steps", "lengths"):
            if hasattr(default, fld):
                assert max(getattr(tiny, fld)) <= max(getattr(default, fld)) <= max(getattr(full, fld))
    with pytest.raises(ValueError, match="unknown scale"):
        config_for("cost", "huge")


def test_cost_simulated_nfe_matches_the_formula():
    """The formula E[NFE] = 1 + sum_{i<N} (1 - (1 - pi_i)^L) against simulated reveal steps.

    Each point is a mean of `runs` i.i.d. counts; |z| < 5 for all points has a false-failure
    probability below 1e-5 even with a few dozen points.
    """
    from validation.experiments import cost

    cfg = cost.Config(lengths=(4, 32), steps=(1, 2, 3, 8, 40), schedules=("linear", "cosine"), runs=300,
                      sampler_steps=())
    result = cost.run(cfg, strict=True)
    for r in result.tables["nfe"]:
        if r["steps"] == 1:
            assert r["measured_nfe"] == r["expected_nfe"] == 1.0  # one step: one call, always
        elif r["measured_stderr"] > 0:
            assert abs(r["measured_nfe"] - r["expected_nfe"]) < 5 * r["measured_stderr"], r
        assert 1.0 <= r["expected_nfe"] <= min(r["steps"], 1 + r["length"] * (r["steps"] - 1))


def test_interval_ser_at_one_step_is_hand_computed():
    """N = 1 reveals all l(l-1)/2 pairs of every interval at once: SER = 1 - 2^(-10 L/5) for l = 5."""
    from validation.experiments import _engine as eng

    value = eng.interval_ser(eng.schedule_for("linear", 1), 10, 5)
    assert math.isclose(value, 1 - 2.0 ** -20, rel_tol=1e-12)


def test_missing_inputs_and_failures_are_recorded_not_hidden():
    with pytest.raises(MissingInput, match="not available"):
        need("numerics.no_such_module_here")
    with pytest.raises(MissingInput, match="does not define"):
        need("numerics.schedules", "no_such_function")
    parts = Parts(strict=False)
    assert parts.attempt("a", lambda: need("numerics.no_such_module_here")) is None
    assert parts.attempt("b", lambda: 1 / 0) is None
    assert parts.attempt("c", lambda: 3) == 3
    out = ExperimentResult("x", "X", config={})
    parts.record(out)
    out.finish(0.0)
    assert out.status == "error" and "b" in out.errors and len(out.missing) == 2
    with pytest.raises(ZeroDivisionError):
        Parts(strict=True).attempt("b", lambda: 1 / 0)


def test_language_colors_are_consistent():
    assert language_color("2gram") == language_color("2gram-pruned")
    assert language_color("interval") == language_color("interval-l3")
    assert len({language_color(n) for n in ("2gram", "3gram", "4gram", "hmm", "interval")}) == 5


def test_interval_ser_shortcut_is_bit_identical_to_numerics():
    """The SER experiment reuses one interval's validity across lengths; same floats as interval_ser."""
    from validation.experiments import _engine as eng

    for N in (1, 3, 17, 64):
        sched = eng.schedule_for("linear", N)
        comp = eng.interval_validity_complement(sched, 5)
        for L in (5, 20, 640):
            assert eng.ser_from_validity(comp, L, 5) == eng.interval_ser(sched, L, 5)
