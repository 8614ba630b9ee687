"""Atomic writes, provenance and config hashing."""

import json
import os
from dataclasses import dataclass

import numpy as np
import pytest

from numerics.provenance import atomic_write_bytes, atomic_write_json, config_hash, provenance, to_jsonable


@dataclass(frozen=True)
class _Cfg:
    length: int
    steps: tuple


def test_atomic_write_json_round_trip(tmp_path):
    path = atomic_write_json(tmp_path / "sub" / "r.json", {"x": np.float64(1.5), "a": np.arange(3), "c": _Cfg(4, (1, 2))})
    assert json.loads(path.read_text()) == {"x": 1.5, "a": [0, 1, 2], "c": {"length": 4, "steps": [1, 2]}}
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left behind


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    atomic_write_bytes(path, b"old")

    with pytest.raises(TypeError):
        atomic_write_bytes(path, object())  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["r.json"]


def test_non_finite_floats_stay_readable():
    assert to_jsonable({"v": float("inf"), "w": float("nan")}) == {"v": "inf", "w": "nan"}


def test_config_hash_is_stable_and_sensitive():
    assert config_hash(_Cfg(4, (1, 2))) == config_hash({"length": 4, "steps": [1, 2]})
    assert config_hash(_Cfg(4, (1, 2))) != config_hash(_Cfg(5, (1, 2)))


def test_provenance_names_versions():
    prov = provenance()
    assert prov["versions"]["numpy"] == np.__version__
    assert "commit" in prov
