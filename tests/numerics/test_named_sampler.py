"""``numerics.make_sampler``: every sampler of ``mdm-theory exact --sampler`` by its name, the same object."""

import pytest

import numerics
from numerics.sampling.decoders import make_decoder
from numerics.schedules import make_schedule


def test_every_command_line_sampler_is_made_by_name():
    from validation.cli import main

    choices = next(p for p in main.commands["exact"].params if p.name == "sampler").type.choices
    assert set(choices) == set(numerics.ALL_SAMPLERS)


def test_revisers_and_gemma_renoise_are_made_by_name_without_steps():
    from numerics.sampling.gemma import Renoise
    from numerics.sampling.registry import REVISERS

    assert numerics.make_sampler("llada21").label == REVISERS["llada21"].build({}).label
    assert numerics.make_sampler("gemma-renoise", committed=True) == Renoise(True)
    with pytest.raises(ValueError, match="takes no n_steps"):
        numerics.make_sampler("wino", n_steps=4)


@pytest.mark.parametrize(("name", "kwargs", "expected"), [
    ("llada", {"n_steps": 16}, lambda: make_decoder("llada", steps=16)),
    ("fast-dllm", {"threshold": 0.9}, lambda: make_decoder("fast-dllm", threshold=0.9)),
    ("eb", {"gamma": 0.1}, lambda: make_decoder("eb", gamma=0.1)),
    ("remdm", {"n_steps": 8, "eta": 0.05, "remdm_variant": "rescale"},
     lambda: make_decoder("remdm", schedule=make_schedule("linear", 8), eta=0.05, variant="rescale")),
])
def test_decoders_by_name_are_make_decoder_with_the_cli_defaults(name, kwargs, expected):
    made, want = numerics.make_sampler(name, **kwargs), expected()
    assert type(made) is type(want) and made.label == want.label


def test_steps_samplers_take_a_schedule_name_or_object():
    by_name = numerics.make_sampler("topk", n_steps=8, schedule="cosine")
    assert by_name.schedule.name == make_schedule("cosine", 8).name and by_name.schedule.n_steps == 8
    assert numerics.make_sampler("random", schedule=make_schedule("linear", 4)).label.startswith("random")


@pytest.mark.parametrize(("name", "kwargs", "words"), [
    ("nope", {}, "unknown sampler"),
    ("fast-dllm", {"n_steps": 4, "threshold": 0.9}, "takes no n_steps"),
    ("threshold", {"n_steps": 4, "gamma": 0.9}, "takes no n_steps"),
    ("random", {"n_steps": 4, "eta": 0.1}, "does not take eta"),
    ("llada", {"n_steps": 4, "gamma": 0.1}, "does not take gamma"),
    ("eb", {"gamma": 0.1, "schedule": make_schedule("linear", 4)}, "takes no schedule"),
    ("random", {}, "needs n_steps"),
])
def test_an_option_the_sampler_does_not_take_is_named(name, kwargs, words):
    with pytest.raises(ValueError, match=words):
        numerics.make_sampler(name, **kwargs)
