"""``exact --noise uniform``: the command reports the library's exact numbers and Monte Carlo estimates."""

from __future__ import annotations

import json

from click.testing import CliRunner

from numerics.exact.uniform_noise import uniform_noise_metrics, uniform_noise_path_kl
from numerics.languages.presets import load_language
from numerics.schedules import make_schedule
from tests.tolerances import RTOL_EXACT
from validation.cli import main


def _run(args):
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_exact_uniform_enumerates():
    out = _run(["exact", "--language", "2gram-pruned", "-L", "3", "-N", "4", "--noise", "uniform", "--schedule", "cosine"])
    lang, s = load_language("2gram-pruned"), make_schedule("cosine", 4)
    m = uniform_noise_metrics(lang, 3, s)
    assert out["method"] == "enumerate" and out["inputs"]["noise"] == "uniform"
    assert abs(out["kl"]["value"] - m.kl.value) <= RTOL_EXACT * m.kl.value
    assert abs(out["ser"]["value"] - m.ser.value) <= RTOL_EXACT * m.ser.value and out["ser"]["exact"]  # 13 digits
    assert abs(out["kl_path_bound"]["value"] - uniform_noise_path_kl(lang, 3, s)) <= RTOL_EXACT * out["kl_path_bound"]["value"]
    assert out["kl_path_bound"]["value"] > out["kl"]["value"]


def test_exact_uniform_monte_carlo():
    out = _run(["exact", "--language", "2gram", "--ser-language", "2gram-pruned", "-L", "16", "-N", "4", "--noise",
                "uniform", "--samples", "50"])
    assert out["method"] == "mc"
    assert out["ser"]["samples"] == 50 and out["ser"]["ci_low"] <= out["ser"]["value"] <= out["ser"]["ci_high"]
    assert out["kl_path_bound"]["stderr"] > 0 and out["calls"]["value"] == 4
