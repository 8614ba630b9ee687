"""Every experiment of the report runs at tiny size (strict: a bug raises) and plots what it got."""

import dataclasses
import json
import math

import pytest

from validation.cache import ResultCache
from validation.experiments import EXPERIMENTS, config_for
from validation.experiments._base import (
    STATUSES,
    ExperimentResult,
    MissingInput,
    Parts,
    steps_needed_range,
)
from validation.experiments._style import language_color, plt

# What each experiment must say at tiny size: a status other than this one is a regression (a
# module that cannot be imported fails before this, at the import of validation.experiments).
TINY_STATUS = {
    "ter": "vacuous",     # Theorem 4.2 in its regime (L >= L_0) only where eps >= 1/4: bound >= log|V|
    "ser": "ok",          # exact interval SER above both lower bounds
    "lemmas": "finding",  # C.5's concavity step is false (pinned; docs/findings.md)
    "learned": "partial",  # tiny() trains tiny MDM + AR models, measures every part; they miss the targets
    "cost": "ok",    # tiny() measures the MDM vs AR timing on its own tiny models
    "schedules": "vacuous",  # Li-Cai, ordering and i.i.d.-MI bounds above TC at some budgets
    "adaptive": "ok",     # every SER certificate at tiny size says something
    "realtext": "partial",  # tiny() trains tiny MDM + AR models that miss their validation targets (shown, flagged)
    "decoders": "ok",     # every decoder computed; the answers are sentences, no bound checked
    "calls": "ok",        # every front, bound and floor computed; no step family below the SER floor
    "thresholds": "ok",   # every threshold point computed (exact); the rises are notes, no claim checked
    "runtimes": "ok",     # every runtime default computed; ParallelBench's closed forms are equalities
    "lossless": "ok",     # every lossless point at SER = 0; two lengths fit no interval, so no sqrt(L) check
    "noise": "ok",        # every masked and uniform-noise point computed; the findings are pinned in tests
}


def test_every_experiment_has_a_pinned_tiny_status():
    assert set(TINY_STATUS) == set(EXPERIMENTS)
    assert set(TINY_STATUS.values()) <= set(STATUSES)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment_smoke(name, tmp_path):
    module = EXPERIMENTS[name]
    cfg = config_for(name, "tiny")
    result = module.run(cfg, cache=ResultCache(tmp_path), progress=False, strict=True)
    assert isinstance(result, ExperimentResult)
    assert result.status == TINY_STATUS[name], (result.status, result.missing, result.findings, result.vacuous)
    assert result.badges()[0] == result.status
    assert not result.errors
    reasons = {"partial": result.missing, "finding": result.all_findings(), "vacuous": result.vacuous}
    for badge in result.badges():
        if badge != "ok":
            assert reasons[badge], f"a {badge!r} result must say why"
    if name != "learned":
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
    stored = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")}
    cache = ResultCache(tmp_path)
    again = module.run(cfg, cache=cache, progress=False, strict=True)
    assert json.dumps(again.tables, sort_keys=True, allow_nan=True) == json.dumps(result.tables, sort_keys=True,
                                                                                   allow_nan=True)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")} == stored  # nothing recomputed
    # every cache entry was a hit; CACHE/train holds the training runs' own outputs, not cache entries
    entries = [p for p in stored if p.relative_to(tmp_path).parts[0] != "train"]
    assert cache.counts()["hit"] == len(entries)


def test_configs_are_frozen_and_scales_grow():
    for name in EXPERIMENTS:
        tiny, default, full = (config_for(name, s) for s in ("tiny", "default", "full"))
        with pytest.raises(dataclasses.FrozenInstanceError):
            tiny.seed = 1  # frozen dataclass
        for fld in ("n_steps", "lengths"):
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

    tiny = cost.Config.tiny()  # the networks' timing table is not under test here: its tiny size
    cfg = cost.Config(lengths=(4, 32), n_steps=(1, 2, 3, 8, 40), schedules=("linear", "cosine"), runs=300,
                      sampler_steps=(), **{f: getattr(tiny, f) for f in ("timing_preset", "timing_lengths",
                                                                          "timing_steps", "timing_batch",
                                                                          "timing_repeats")})
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
    parts = Parts(strict=False)

    def no_checkpoint():
        raise MissingInput("no checkpoint given")

    assert parts.attempt("a", no_checkpoint) is None
    assert parts.attempt("b", lambda: 1 / 0) is None
    assert parts.attempt("c", lambda: 3) == 3
    out = ExperimentResult("x", "X", config={})
    parts.record(out)
    out.finish(0.0)
    assert out.status == "error" and "b" in out.errors and len(out.missing) == 2
    assert out.badges() == ["error", "partial"]
    with pytest.raises(ZeroDivisionError):
        Parts(strict=True).attempt("b", lambda: 1 / 0)


@pytest.mark.parametrize("fields, badges", [
    ({}, ["ok"]),
    ({"vacuous": ["v"]}, ["vacuous"]),
    ({"findings": ["f"], "vacuous": ["v"]}, ["finding", "vacuous"]),
    ({"missing": ["m"], "findings": ["f"]}, ["partial", "finding"]),
    ({"errors": {"p": "tb"}, "missing": ["m"]}, ["error", "partial"]),
])
def test_status_is_the_most_severe_badge(fields, badges):
    out = ExperimentResult("x", "X", config={}, **fields).finish(0.0)
    assert out.badges() == badges and out.status == badges[0]


def test_steps_needed_range_brackets_the_estimate():
    # exact values: one answer, from which the value stays below the target (N = 2 dips early)
    exact = [(1, 0.9, 0.9, 0.9), (2, 0.05, 0.05, 0.05), (4, 0.2, 0.2, 0.2), (8, 0.08, 0.08, 0.08), (16, 0.01, 0.01, 0.01)]
    assert tuple(steps_needed_range(exact, 0.1)) == (8, 2, 8, False)
    # estimates: lo = first N whose lower limit meets it, hi = first N from which the upper limit does
    mc = [(1, 0.5, 0.4, 0.6), (2, 0.12, 0.08, 0.16), (4, 0.09, 0.05, 0.13), (8, 0.05, 0.01, 0.09), (16, 0.0, 0.0, 0.04)]
    assert tuple(steps_needed_range(mc, 0.1)) == (4, 2, 8, True)
    assert steps_needed_range([(1, 0.5, 0.4, 0.6)], 0.1) == (None, None, None, True)


def test_language_colors_are_consistent():
    assert language_color("2gram") != language_color("2gram-pruned")  # two languages, two colors (issue 19) ...
    r, g, b = (int(language_color("2gram")[k:k + 2], 16) for k in (1, 3, 5))
    assert language_color("2gram-pruned") == "#" + "".join(f"{int(c * 0.6):02x}" for c in (r, g, b))  # ... one hue
    assert language_color("interval") == language_color("interval-l3")
    names = ("2gram", "3gram", "4gram", "hmm", "interval", "2gram-pruned", "3gram-pruned", "zipf", "copy", "my.npz")
    assert len({language_color(n) for n in names}) == len(names)  # the fallbacks collide no more
    assert language_color("zipf") == language_color("zipf")



def test_cost_timing_that_falls_as_n_grows_is_not_summarized_as_a_ratio():
    """Issue 19: 1.167 s at N = 8 and 0.164 s at N = 32 (L = 32) measured warm-up or contention, not the sampler."""
    from validation.experiments.cost import _non_monotone_timing

    rows = [{"model": "mdm", "length": 32, "n_steps": 8, "nfe": 8.0, "seconds_per_batch": 1.167},
            {"model": "mdm", "length": 32, "n_steps": 32, "nfe": 20.0, "seconds_per_batch": 0.164},
            {"model": "mdm", "length": 128, "n_steps": 8, "nfe": 8.0, "seconds_per_batch": 0.1},
            {"model": "mdm", "length": 128, "n_steps": 32, "nfe": 30.0, "seconds_per_batch": 0.3}]
    flagged = _non_monotone_timing(rows)
    assert list(flagged) == [32] and "N = 8: 1.17 s, N = 32: 0.164 s" in flagged[32]


def test_a_finding_in_the_notes_is_never_an_ok_badge():
    """Issue 19: the learned section showed `ok` while its notes held "FINDING (to investigate)"."""
    out = ExperimentResult("x", "X", config={}, notes=["FINDING (to investigate): below the oracle"]).finish(0.0)
    assert out.badges() == ["finding"] and out.all_findings() == ["FINDING (to investigate): below the oracle"]
    assert ExperimentResult("x", "X", config={}, notes=["all good"]).finish(0.0).badges() == ["ok"]


# config_hash(to_jsonable(config_for(name).__dict__)) of each default config on main at dba4e4f, before
# Config.steps was renamed n_steps, recorded literally: a cache or result written then must still match.
_OLD_CONFIG_HASHES = {
    "ter": "03ed0721aa770b35",
    "ser": "7d28c45c2610a7a0",
    "adaptive": "fcf793ae9289b2d1",
    # cost re-pinned when its default timing_threads became 1 (issue 34: make report runs two sections at
    # once), a changed default whose cached timings must not be reused.
    "cost": "7fc8e581e44fae50",
    "schedules": "68f7f62d1b92cdaa",
    # realtext re-pinned when its Config gained the learned-model fields (learned, learned_preset, ..., train):
    # its results changed with them, so the old hash must not match; the rename check still holds. Re-pinned
    # again when the default learned languages became ("lee-char-2gram",) (issue 34: the word bigram's models
    # moved to the full scale), a changed default whose cached results must not be reused.
    "realtext": "a9e68c9c89f82e2a",
}


@pytest.mark.parametrize("name, old_hash", sorted(_OLD_CONFIG_HASHES.items()))
def test_renamed_n_steps_keeps_the_stored_config_and_its_hash(name, old_hash):
    """``Config.n_steps`` is stored (and hashed) under its old name ``steps``, as before the rename."""
    from numerics.provenance import config_hash, to_jsonable
    from validation.experiments._base import stored_config

    cfg = config_for(name)
    stored = stored_config(cfg)
    assert "n_steps" not in stored and stored["steps"] == cfg.n_steps
    assert config_hash(to_jsonable(stored)) == old_hash
    assert config_hash(to_jsonable(stored_config(dataclasses.replace(cfg, n_steps=(3,))))) != old_hash
