"""JPEG decoding (libjpeg-turbo via simplejpeg when installed, Pillow otherwise), the compiled
bilinear resize, and image pipelines run on whole batches under map-then-batch fusion."""

import importlib
import os

import numpy as np
import pytest

import tapeflow as tf

decode = importlib.import_module("tapeflow.image.decode")
resize = importlib.import_module("tapeflow.image.resize")


def jpeg(seed, shape=(24, 20, 3)):
    img = np.random.default_rng(seed).integers(0, 255, shape, dtype=np.uint8)
    return tf.io.encode_jpeg(img, quality=90)


@pytest.mark.skipif(decode._simplejpeg is None, reason="needs simplejpeg")
def test_turbo_decoder_matches_pillow(monkeypatch):
    data = jpeg(0)
    fast = tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE").numpy()
    auto = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE").numpy()
    gray = tf.io.decode_jpeg(data, channels=1, dct_method="INTEGER_ACCURATE").numpy()
    monkeypatch.setattr(decode, "_simplejpeg", None)
    slow = tf.io.decode_jpeg(data, channels=3).numpy()
    slow_gray = tf.io.decode_jpeg(data, channels=1).numpy()
    assert fast.dtype == np.uint8 and fast.shape == (24, 20, 3)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(auto, slow)
    # gray: libjpeg keeps the stored luma (as TensorFlow does); Pillow recomputes it from RGB
    assert gray.shape == slow_gray.shape == (24, 20, 1)
    assert np.abs(gray.astype(int) - slow_gray).max() <= 20


def test_damaged_jpeg_error_names_the_problem():
    bad = tf.constant(b"\xff\xd8not a jpeg")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot decode image data"):
        tf.io.decode_jpeg(bad)


@pytest.mark.skipif(resize._bilinear_kernel is None, reason="needs numba")
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_compiled_bilinear_gives_the_numpy_formula_bits(monkeypatch, dtype):
    x = (np.random.default_rng(1).random((2, 13, 9, 3)) * 255).astype(dtype)
    fast = tf.image.resize(x, [7, 17]).numpy()
    monkeypatch.setattr(resize, "_bilinear_kernel", None)
    slow = tf.image.resize(x, [7, 17]).numpy()
    assert fast.dtype == slow.dtype == np.float32
    np.testing.assert_array_equal(fast, slow)


REF = np.load(os.path.join(os.path.dirname(__file__), "reference", "image_pipeline_values.npz"))


@pytest.mark.parametrize("kernel", ["compiled", "numpy"])
def test_bilinear_resize_gives_tensorflows_bits(monkeypatch, kernel):
    if kernel == "numpy":
        monkeypatch.setattr(resize, "_bilinear_kernel", None)
    for name in ("u8", "f32", "rgba"):
        for h, w in [(7, 17), (26, 18), (4, 4), (13, 9)]:
            got = tf.image.resize(REF[name], [h, w]).numpy()
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, REF[f"{name}_{h}x{w}"], err_msg=f"{name} {h}x{w}")


@pytest.mark.parametrize("fused", [True, False])
def test_jpeg_pipeline_gives_tensorflows_pixels(tmp_path, fused):
    for i in range(2):
        tf.io.write_file(str(tmp_path / f"{i}.jpg"), REF[f"jpeg{i}"].tobytes())
    files = tf.data.Dataset.list_files(str(tmp_path / "*.jpg"), shuffle=False)
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = fused
    pixels = files.map(lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=3))
    gray = files.map(lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=1))
    loaded = files.map(lambda p: tf.image.resize(
        tf.io.decode_jpeg(tf.io.read_file(p), channels=3), [32, 32]) / 255.0)
    for i, (p, g, x) in enumerate(zip(pixels, gray, loaded)):
        np.testing.assert_array_equal(p.numpy(), REF[f"jpeg{i}_pixels"])
        np.testing.assert_array_equal(g.numpy(), REF[f"jpeg{i}_gray"])
        np.testing.assert_array_equal(x.numpy(), REF[f"jpeg{i}_loaded"])
    # one size per batch: decoded in place into the batch; two sizes: image by image
    same = [b.numpy() for b in files.take(1).repeat(3).map(
        lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=3)).batch(3)
        .with_options(options)]
    assert same[0].shape == (3, 48, 48, 3)
    np.testing.assert_array_equal(same[0], np.stack([REF["jpeg0_pixels"]] * 3))


def test_read_file_reads_files_stat_cannot_size(tmp_path):
    assert tf.io.read_file("/proc/self/status").numpy().startswith(b"Name:")
    (tmp_path / "empty").write_bytes(b"")
    assert tf.io.read_file(str(tmp_path / "empty")).numpy() == b""
    with pytest.raises(tf.errors.NotFoundError, match="nothere"):
        tf.io.read_file(str(tmp_path / "nothere"))


def load(path):
    return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(path), channels=3), [8, 8]) / 255.0


def write_images(tmp_path, shapes):
    for i, shape in enumerate(shapes):
        tf.io.write_file(str(tmp_path / f"{i:03d}.jpg"), jpeg(i, shape))
    return str(tmp_path / "*.jpg")


@pytest.mark.parametrize("sizes", ["same", "mixed"])
def test_image_pipeline_fused_or_not_gives_the_same_batches(tmp_path, sizes):
    shapes = [(16, 12, 3) if sizes == "same" or i % 3 else (10, 14, 3) for i in range(11)]
    pattern = write_images(tmp_path, shapes)
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    fused = [b.numpy() for b in files.map(load, num_parallel_calls=2).batch(4)]
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    plain = [b.numpy() for b in files.map(load, num_parallel_calls=2).batch(4)
             .with_options(options)]
    assert [b.shape for b in fused] == [(4, 8, 8, 3), (4, 8, 8, 3), (3, 8, 8, 3)]
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)


def test_cmyk_jpeg_goes_to_pillow(monkeypatch):
    import io

    from PIL import Image

    buf = io.BytesIO()
    rgba = np.random.default_rng(0).integers(0, 255, (8, 8, 4), dtype=np.uint8)
    Image.fromarray(rgba, "RGBA").convert("CMYK").save(buf, "JPEG")
    got = tf.io.decode_jpeg(buf.getvalue(), channels=3).numpy()
    monkeypatch.setattr(decode, "_simplejpeg", None)
    np.testing.assert_array_equal(got, tf.io.decode_jpeg(buf.getvalue(), channels=3).numpy())
