"""tf.keras.utils data helpers: pad_sequences, timeseries windows, datasets from directories and
get_file with a real (file://) download, checked against Keras 2's documented behaviour."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile

import numpy as np
import pytest
from PIL import Image

import tapeflow as tf

U = tf.keras.utils


def test_pad_sequences_pre_and_post():
    seqs = [[1, 2, 3], [4], [5, 6]]
    assert U.pad_sequences(seqs).tolist() == [[1, 2, 3], [0, 0, 4], [0, 5, 6]]
    assert U.pad_sequences(seqs, maxlen=2).tolist() == [[2, 3], [0, 4], [5, 6]]
    assert U.pad_sequences(seqs, maxlen=2, padding="post", truncating="post",
                           value=-1).tolist() == [[1, 2], [4, -1], [5, 6]]
    assert U.pad_sequences([[1.5], []], dtype="float32").dtype == np.float32
    assert tf.keras.preprocessing.sequence.pad_sequences is U.pad_sequences
    with pytest.raises(ValueError, match="padding"):
        U.pad_sequences(seqs, padding="middle")


def test_timeseries_windows_follow_the_keras_example():
    """Keras's docstring: indices 0..98, length 10, sampling rate 2, stride 3."""
    ds = U.timeseries_dataset_from_array(np.arange(99), None, sequence_length=10,
                                         sampling_rate=2, sequence_stride=3, batch_size=None)
    windows = [w.numpy().tolist() for w in ds]
    assert windows[0] == list(range(0, 20, 2)) and windows[1] == list(range(3, 23, 2))
    assert windows[-1] == list(range(78, 98, 2))
    ds = U.timeseries_dataset_from_array(np.arange(10), np.arange(10) * 10, 3, batch_size=4,
                                         start_index=2)
    (x, y), *_ = list(ds)
    assert x.numpy().tolist()[0] == [2, 3, 4] and y.numpy().tolist()[0] == 20


def _images(root, counts):
    rng = np.random.RandomState(0)
    for name, n in counts.items():
        os.makedirs(root / name)
        for i in range(n):
            Image.fromarray((rng.rand(10, 12, 3) * 255).astype(np.uint8)).save(
                root / name / f"{i}.png")
    (root / "cats" / "notes.txt").write_text("not an image")


def test_image_dataset_from_directory(tmp_path, capsys):
    _images(tmp_path, {"cats": 5, "dogs": 3})
    train, val = U.image_dataset_from_directory(str(tmp_path), image_size=(8, 6), batch_size=4,
                                                validation_split=0.25, subset="both", seed=3)
    out = capsys.readouterr().out
    assert "Found 8 files belonging to 2 classes." in out
    assert "Using 6 files for training." in out and "Using 2 files for validation." in out
    assert train.class_names == ["cats", "dogs"]
    assert not set(train.file_paths) & set(val.file_paths)
    images, labels = next(iter(train))
    assert images.shape == (4, 8, 6, 3) and images.dtype == tf.float32
    assert labels.dtype == tf.int32
    gray = U.image_dataset_from_directory(str(tmp_path), image_size=(5, 5), shuffle=False,
                                          color_mode="grayscale", label_mode="categorical")
    x, y = next(iter(gray))
    assert x.shape[-1] == 1 and y.numpy()[0].tolist() == [1.0, 0.0]   # unshuffled: cats first
    first = np.asarray(Image.open(tmp_path / "cats" / "0.png").convert("L"), np.float32)
    np.testing.assert_allclose(x.numpy()[0, :, :, 0],
                               tf.image.resize(first[:, :, None], [5, 5]).numpy()[:, :, 0],
                               atol=1e-4)
    with pytest.raises(ValueError, match="seed"):
        U.image_dataset_from_directory(str(tmp_path), validation_split=0.2, subset="training")


def test_text_dataset_from_directory(tmp_path, capsys):
    for label, texts in (("neg", ["bad film", "awful"]), ("pos", ["great", "a fine film"])):
        os.makedirs(tmp_path / label)
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    ds = U.text_dataset_from_directory(str(tmp_path), shuffle=False, batch_size=8,
                                       max_length=5)
    assert "Found 4 files belonging to 2 classes." in capsys.readouterr().out
    texts, labels = next(iter(ds))
    assert [t.decode() for t in texts.numpy()] == ["bad f", "awful", "great", "a fin"]
    assert labels.numpy().tolist() == [0, 0, 1, 1]


def test_get_file_downloads_checks_and_extracts(tmp_path):
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:gz") as archive:
        data = b"hello"
        info = tarfile.TarInfo("bundle/greeting.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    source = tmp_path / "src" / "bundle.tar.gz"
    source.parent.mkdir()
    source.write_bytes(payload.getvalue())
    digest = hashlib.sha256(payload.getvalue()).hexdigest()
    cache = tmp_path / "cache"
    path = U.get_file("bundle.tar.gz", source.as_uri(), file_hash=digest, extract=True,
                      cache_dir=str(cache))
    assert path == str(cache / "datasets" / "bundle.tar.gz")
    assert (cache / "datasets" / "bundle" / "greeting.txt").read_bytes() == b"hello"
    source.write_bytes(b"changed")              # cached copy with the right hash is reused
    assert U.get_file("bundle.tar.gz", source.as_uri(), file_hash=digest,
                      cache_dir=str(cache)) == path
    with pytest.raises(ValueError, match="does not match the expected hash"):
        U.get_file("other.bin", source.as_uri(), file_hash="0" * 64, cache_dir=str(cache))
    assert not (cache / "datasets" / "other.bin").exists()


def test_get_file_refuses_archives_that_escape(tmp_path):
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as archive:
        info = tarfile.TarInfo("../evil.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    source = tmp_path / "evil.tar"
    source.write_bytes(payload.getvalue())
    with pytest.raises(ValueError, match="outside"):
        U.get_file("evil.tar", source.as_uri(), extract=True, cache_dir=str(tmp_path / "c"))
    assert not (tmp_path / "c" / "evil.txt").exists()
