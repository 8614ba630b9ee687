"""Atomic writes, provenance and config hashing."""

import json
import os
import stat
from dataclasses import dataclass

import numpy as np
import pytest

from numerics.provenance import (
    NotRegularFileError,
    atomic_write_bytes,
    atomic_write_json,
    check_writable_file,
    config_hash,
    from_jsonable,
    provenance,
    to_jsonable,
)


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


def test_non_finite_floats_are_null_with_a_reason_in_strict_json():
    """RFC 8259 has no NaN/Infinity; a string "inf" is no number either (issue 13)."""
    out = to_jsonable({"v": float("inf"), "w": [1.0, np.float32("nan")], "ok": 2.0})
    assert out == {"v": None, "w": [1.0, None], "ok": 2.0, "null_reason": {
        "v": "+inf (JSON has no non-finite numbers)", "w": "[1]: NaN (JSON has no non-finite numbers)"}}
    json.dumps(out, allow_nan=False)


def test_tagged_non_finite_floats_round_trip_through_strict_json():
    value = {"v": float("inf"), "w": [float("-inf"), float("nan")], "x": 0.5}
    text = json.dumps(to_jsonable(value, nonfinite="tag"), allow_nan=False)
    back = from_jsonable(json.loads(text))
    assert back["v"] == float("inf") and back["w"][0] == float("-inf") and np.isnan(back["w"][1]) and back["x"] == 0.5
    assert to_jsonable(value, nonfinite="keep")["v"] == float("inf")
    with pytest.raises(TypeError, match="cannot convert a value of type object"):
        to_jsonable({"f": object()})
    with pytest.raises(ValueError, match="nonfinite must be one of"):
        to_jsonable(1.0, nonfinite="string")


def test_config_hash_is_stable_and_sensitive():
    assert config_hash(_Cfg(4, (1, 2))) == config_hash({"length": 4, "steps": [1, 2]})
    assert config_hash(_Cfg(4, (1, 2))) != config_hash(_Cfg(5, (1, 2)))


def test_provenance_names_versions():
    prov = provenance()
    assert prov["versions"]["numpy"] == np.__version__
    assert "commit" in prov


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path, umask, mode):
    """Issue 12: mkstemp's private 0600 made every shared report unreadable to others."""
    old = os.umask(umask)
    try:
        path = atomic_write_bytes(tmp_path / "r.json", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_replaced_file_keeps_its_mode(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"old")
    path.chmod(0o640)
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_target_that_is_not_a_regular_file_is_refused_and_left_alone(tmp_path):
    """Issue 12: ``sweep --out /dev/null`` as root replaced the device with a regular file."""
    for target, kind in ((os.devnull, "a character device"), (tmp_path, "a directory")):
        with pytest.raises(NotRegularFileError, match=f"it is {kind}, not a regular file"):
            atomic_write_bytes(target, b"x")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="a FIFO"):
        check_writable_file(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left behind


def test_a_symbolic_link_is_written_through(tmp_path):
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert atomic_write_bytes(link, b"new") == real
    assert link.is_symlink() and real.read_bytes() == b"new"
