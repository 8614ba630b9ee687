"""The walkthrough of docs/getting-started.md ("The engine from Python, step by step") runs as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
SECTION = "## The engine from Python, step by step"


def _blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"```python\n(.*?)```", text[start:end if end >= 0 else None], flags=re.S)


def test_the_walkthrough_runs_and_prints_what_it_says(tmp_path):
    blocks = _blocks()
    assert len(blocks) == 10  # language, posterior, sampling, Monte Carlo, exact, point, decoders, own denoiser,
    # steps needed and calibration, sweep row
    namespace: dict = {}
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            for k, code in enumerate(blocks):
                exec(compile(code, f"{DOC.name} block {k + 1}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert lines[0] == "ngram 8 interval 5"
    assert lines[1].startswith("(1, 4, 8) ")
    assert lines[2] == "(200, 16)"
    small, large = namespace["small"], namespace["large"]
    assert small.how.method == "dp" and large.how.method == "mc"
    assert isinstance(large.kl, namespace["numerics"].Unavailable)
    assert large.kl_jensen_bound.exact  # the 2-gram is a token Markov chain
    assert [line.split()[0] for line in lines[-7:-5]] == ["llada", "fast-dllm"]
    assert 0.0 < float(lines[-5]) <= 1.0  # the sharpened denoiser's SER
    assert lines[-4] == "381"
    yours = namespace["yours"]
    assert yours.met and not yours.at_n.estimate.exact and yours.at_n.estimate.ci_high <= 0.5
    assert lines[-2].startswith("True random, linear(N=")
    row = namespace["row"]
    assert row["method"] == "closed-form" and abs(row["ser"]["value"] - 0.92422) < 5e-6 and row["tie_seed"] is None
    # the .npz of the interval language carries its structure (the claim made in the text)
    interval = namespace["interval"]
    interval.save(tmp_path / "interval.npz")
    back = namespace["numerics"].load_language(str(tmp_path / "interval.npz"))
    assert back.kind == "interval" and back.l == interval.l
