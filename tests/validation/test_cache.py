"""The report's result cache: exact round trip, hits, and stale/corrupt entries recomputed."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from validation.cache import CACHE_FORMAT, ResultCache, canonical, key_hash


class Counter:
    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.value


CONFIG = {"v": 1, "language": "2gram", "length": 8, "steps": (1, 2, 4)}
RESULT = {"value": 1.25, "stderr": 0.0, "inf": float("inf"), "nan": float("nan"), "arr": np.arange(3)}


def _entry(cache, kind="k", config=CONFIG):
    return cache.path_for(kind, config)


def test_round_trip_is_exact_and_second_call_is_a_hit(tmp_path):
    cache = ResultCache(tmp_path)
    compute = Counter(RESULT)
    first = cache.get_or_compute("k", CONFIG, compute)
    again = ResultCache(tmp_path).get_or_compute("k", CONFIG, compute)
    assert compute.calls == 1
    assert again["inf"] == float("inf") and np.isnan(again["nan"]) and again["arr"] == [0, 1, 2]
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)  # same canonical form
    entry = json.loads(_entry(cache).read_text())
    assert entry["format"] == CACHE_FORMAT and entry["config_hash"] == key_hash("k", CONFIG)
    assert entry["provenance"]["versions"]["numpy"] == np.__version__
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # atomic write left nothing


def test_different_config_or_kind_is_a_different_entry(tmp_path):
    cache = ResultCache(tmp_path)
    compute = Counter({"x": 1})
    cache.get_or_compute("k", CONFIG, compute)
    cache.get_or_compute("k", {**CONFIG, "length": 16}, compute)
    cache.get_or_compute("other", CONFIG, compute)
    assert compute.calls == 3


@pytest.mark.parametrize(
    "damage, what",
    [
        (lambda text: text[: len(text) // 2], "corrupt"),  # truncated file
        (lambda text: "not json at all", "corrupt"),
        (lambda text: json.dumps({"format": CACHE_FORMAT}), "corrupt"),  # fields missing
        (lambda text: text.replace('"value": 1.25', '"value": 2.5'), "corrupt"),  # result edited
        (lambda text: text.replace('"length": 8', '"length": 9'), "stale"),  # stored config differs
        (lambda text: text.replace(f'"format": {CACHE_FORMAT}', '"format": 0'), "stale"),  # old layout
    ],
)
def test_stale_or_corrupt_entries_are_recomputed_not_reused(tmp_path, damage, what):
    cache = ResultCache(tmp_path)
    cache.get_or_compute("k", CONFIG, Counter(RESULT))
    path = _entry(cache)
    text = path.read_text()
    damaged = damage(text)
    assert damaged != text
    path.write_text(damaged)
    fresh = ResultCache(tmp_path)
    compute = Counter({**RESULT, "value": 1.25})
    out = fresh.get_or_compute("k", CONFIG, compute)
    assert compute.calls == 1, "a damaged entry was reused"
    assert out["value"] == 1.25
    assert [e.what for e in fresh.problems()] == [what]
    # the recomputed entry is valid again
    third = ResultCache(tmp_path)
    third.get_or_compute("k", CONFIG, compute)
    assert compute.calls == 1 and third.counts()["hit"] == 1


def test_cache_without_root_stores_nothing(tmp_path):
    cache = ResultCache(None)
    compute = Counter({"x": (1, 2)})
    assert cache.get_or_compute("k", CONFIG, compute) == {"x": [1, 2]}
    cache.get_or_compute("k", CONFIG, compute)
    assert compute.calls == 2


def test_canonical_rejects_objects_it_cannot_store():
    with pytest.raises(TypeError, match="cannot convert"):
        canonical({"f": object()})
    with pytest.raises(ValueError, match="invalid cache kind"):
        ResultCache("x").path_for("../escape", CONFIG)


_CACHE_USER = """
import sys, time
from validation.cache import ResultCache
root, log = sys.argv[1], sys.argv[2]
cache = ResultCache(root)
def compute(i):
    def run():
        with open(log, "a") as fh:
            fh.write(f"{i}\\n")
        time.sleep(0.02)
        return {"i": i, "x": [float(i)] * 3}
    return run
for i in range(12):
    assert cache.get_or_compute("point", {"i": i}, compute(i))["i"] == i
"""


def test_two_processes_sharing_a_cache_compute_each_entry_once(tmp_path):
    """Issue 12: two report processes on one --out: a lock, never a lost or corrupted entry."""
    root, log = tmp_path / "cache", tmp_path / "computed.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", _CACHE_USER, str(root), str(log)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    assert sorted(int(k) for k in log.read_text().split()) == list(range(12))  # each entry computed once
    cache = ResultCache(root)
    for i in range(12):
        assert cache.load("point", {"i": i}) == (True, {"i": i, "x": [float(i)] * 3})
