"""Hostile or damaged checkpoint files and indexes: every one is a DataLossError naming the file
and the problem, and nothing is restored."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.train import Checkpoint, CheckpointManager, checkpoint_io, latest_checkpoint


def _saved(tmp_path) -> tuple[str, str]:
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    path = Checkpoint(v=v).save(str(tmp_path / "ckpt"))
    return path, checkpoint_io.data_path(path)


def _rewrite(file: str, tensors: dict, metadata: dict | None) -> None:
    os.remove(file)
    save_file(tensors, file, metadata=metadata)


def _metadata(file: str) -> dict:
    raw = open(file, "rb").read()
    return json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])["__metadata__"]


@pytest.mark.parametrize("change", ["dtype", "shape"])
def test_checksum_covers_dtype_and_shape(tmp_path, change):
    path, file = _saved(tmp_path)
    tensors, metadata = load_file(file), _metadata(file)
    value = tensors["v"]
    # same bytes, same key: only the dtype or the shape differs
    tensors["v"] = value.view(np.int32) if change == "dtype" else value.reshape(3, 2)
    _rewrite(file, tensors, metadata)
    with pytest.raises(errors.DataLossError, match=r"ckpt-1\.safetensors.*checksum mismatch"):
        tf.train.list_variables(path)


@pytest.mark.parametrize("metadata", [None, {"format": "tapeflow.checkpoint", "version": "2"},
                                      {"format": "other"}, {"format": "tapeflow.checkpoint",
                                                            "version": "9", "crc32": "0"}])
def test_missing_or_foreign_metadata_is_an_error(tmp_path, metadata):
    path, file = _saved(tmp_path)
    _rewrite(file, {"v": np.zeros((2, 3), np.float32)}, metadata)
    v = tf.Variable(np.ones((2, 3), np.float32))
    with pytest.raises(errors.DataLossError, match=r"ckpt-1\.safetensors.* is corrupt: "
                                                   r"(no .*metadata|no checksum|unknown format)"):
        Checkpoint(v=v).restore(path)
    np.testing.assert_array_equal(v.numpy(), 1.0)  # nothing was restored


def _write_index(tmp_path, state) -> None:
    (tmp_path / "checkpoint").write_text(json.dumps(state))


@pytest.mark.parametrize("state, problem", [
    ({"model_checkpoint_path": "../outside/ckpt-1"}, "not a file name inside"),
    ({"model_checkpoint_path": "/etc/passwd"}, "not a file name inside"),
    ({"model_checkpoint_path": ".."}, "not a file name inside"),
    ({"model_checkpoint_path": 7}, "'model_checkpoint_path' must be a string, found int"),
    ({"model_checkpoint_path": "ckpt-1", "all_model_checkpoint_paths": "ckpt-1"},
     "'all_model_checkpoint_paths' must be a list"),
    ({"model_checkpoint_path": "ckpt-1", "all_model_checkpoint_paths": [None]},
     r"'all_model_checkpoint_paths\[0\]' must be a string"),
    ({"model_checkpoint_path": "ckpt-1", "timestamps": ["x"]}, "'timestamps' must be a list"),
    ({"model_checkpoint_path": "ckpt-1", "deleting": ["../../x"]}, "not a file name inside"),
    ([1, 2], "expected a JSON object, found list"),
    ({}, "missing 'model_checkpoint_path'"),
])
def test_malformed_index_is_data_loss_naming_file_and_field(tmp_path, state, problem):
    _saved(tmp_path)
    _write_index(tmp_path, state)
    index = str(tmp_path / "checkpoint")
    with pytest.raises(errors.DataLossError, match=f"index '{index}' is corrupt: .*{problem}"):
        latest_checkpoint(str(tmp_path))
    with pytest.raises(errors.DataLossError, match=problem):
        CheckpointManager(Checkpoint(), str(tmp_path), max_to_keep=2)


def test_index_that_is_not_utf8_or_json(tmp_path):
    (tmp_path / "checkpoint").write_bytes(b"\xff\xfe{")
    with pytest.raises(errors.DataLossError, match="checkpoint' is corrupt"):
        latest_checkpoint(str(tmp_path))


def test_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path, file = _saved(tmp_path)
        manager = CheckpointManager(Checkpoint(v=tf.Variable(1.0)), str(tmp_path / "m"), 2)
        manager.save()
    finally:
        os.umask(old)
    for f in (file, str(tmp_path / "checkpoint"), str(tmp_path / "m" / "checkpoint"),
              checkpoint_io.data_path(manager.latest_checkpoint)):
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o644, f


def test_version_1_files_still_load(tmp_path):
    path, file = _saved(tmp_path)
    tensors = load_file(file)
    _rewrite(file, tensors, {"format": "tapeflow.checkpoint", "version": "1",
                             "crc32": checkpoint_io._checksum(tensors, "1")})
    np.testing.assert_array_equal(tf.train.load_variable(path, "v"), tensors["v"])
