"""tf.image beyond the recorded numbers: gradients, tracing with run-time offsets, random
augmentation semantics, tf.data maps, and errors that name the function and the shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import check_grads

rng = np.random.RandomState(3)
IMG = rng.uniform(0.05, 0.95, (2, 6, 7, 3))   # float64: these functions keep it


@pytest.mark.parametrize("fn", [
    tf.image.rgb_to_yuv,
    tf.image.yiq_to_rgb,
    tf.image.rgb_to_hsv,
    lambda x: tf.image.hsv_to_rgb(x * [0.9, 1.0, 1.0]),
    tf.image.total_variation,
    tf.image.sobel_edges,
    lambda x: tf.image.image_gradients(x)[1],
    lambda x: tf.image.rot90(x, 3),
    lambda x: tf.image.central_crop(x, 0.5),
    lambda x: tf.image.pad_to_bounding_box(x, 1, 2, 8, 10),
    lambda x: tf.image.resize_with_crop_or_pad(x, 4, 9),
    lambda x: tf.image.extract_patches(x, [1, 3, 2, 1], [1, 2, 2, 1], [1, 2, 1, 1], "SAME"),
], ids=["yuv", "yiq_to_rgb", "hsv", "hsv_to_rgb", "total_variation", "sobel", "gradients",
        "rot90", "central_crop", "pad", "crop_or_pad", "extract_patches"])
def test_gradients_match_finite_differences(fn):
    check_grads(fn, [IMG])


@pytest.mark.parametrize("fn", [
    lambda x: tf.image.adjust_contrast(x, 1.6),
    lambda x: tf.image.adjust_saturation(x, 0.7),
    lambda x: tf.image.adjust_hue(x, 0.05),
    lambda x: tf.image.adjust_gamma(x, 0.8, 1.1),
    tf.image.per_image_standardization,
    lambda x: tf.image.ssim(x, x[::-1], 1.0, filter_size=3),
], ids=["contrast", "saturation", "hue", "gamma", "standardization", "ssim"])
def test_float32_adjustments_have_the_right_gradients(fn):
    """These compute in float32 as TF does, so the differences are taken with a wide step."""
    check_grads(lambda x: tf.cast(fn(tf.cast(x, tf.float32)), tf.float64), [IMG], eps=1e-3,
                atol=2e-3, rtol=2e-2)


def test_crop_to_bounding_box_with_run_time_offsets_traces_and_differentiates():
    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float64),
                                  tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)])
    def crop(image, top, left):
        return tf.image.crop_to_bounding_box(image, top, left, 3, 4)

    image = IMG[0]
    np.testing.assert_array_equal(crop(image, 2, 1).numpy(), image[2:5, 1:5])
    x = tf.Variable(image)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(crop(x, 1, 3) * 2.0)
    grad = np.zeros_like(image)
    grad[1:4, 3:7] = 2.0
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), grad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="DynamicSlice.*leaves dimension"):
        crop(image, 5, 0)


def test_slice_takes_a_traced_begin():
    f = tf.function(lambda x, b: tf.slice(x, b, [2, -1]))
    x = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(f(x, tf.constant([1, 2])).numpy(), x[1:3, 2:])
    check_grads(lambda v: tf.slice(v, tf.constant([1, 0]), [2, 3]), [x])


def test_resize_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    x = rng.rand(2, 5, 6, 3).astype(np.float32)
    g = rng.rand(2, 8, 4, 3).astype(np.float32)
    for method, mode in (("bilinear", "bilinear"), ("nearest", "nearest-exact")):
        xt = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
        kwargs = {"align_corners": False} if mode == "bilinear" else {}
        yt = torch.nn.functional.interpolate(xt, size=(8, 4), mode=mode, **kwargs)
        yt.backward(torch.tensor(g.transpose(0, 3, 1, 2)))
        v = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = tf.image.resize(v, [8, 4], method=method)
            loss = tf.reduce_sum(y * g)
        np.testing.assert_allclose(y.numpy(), yt.detach().numpy().transpose(0, 2, 3, 1),
                                   atol=1e-6)
        np.testing.assert_allclose(tape.gradient(loss, v).numpy(),
                                   xt.grad.numpy().transpose(0, 2, 3, 1), atol=1e-5)


def test_resize_runs_in_a_traced_function_with_the_eager_numbers():
    x = rng.rand(3, 9, 7, 2).astype(np.float32)
    for method in ("bilinear", "nearest", "bicubic", "area"):
        eager = tf.image.resize(x, [4, 5], method=method).numpy()
        traced = tf.function(lambda v, m=method: tf.image.resize(v, [4, 5], method=m))(x)
        np.testing.assert_array_equal(traced.numpy(), eager)


def _adjoint_gap(forward, backward, x, g) -> float:
    return abs(np.sum(forward(x) * g) - np.sum(x * backward(g))) / np.sum(np.abs(x * x))


def test_crop_and_resize_gradient_is_the_adjoint_of_the_crop():
    image = rng.rand(2, 7, 8, 3).astype(np.float32)
    boxes = np.array([[0.1, 0.0, 0.9, 0.7], [-0.3, 0.2, 1.2, 0.8]], np.float32)
    indices = np.array([1, 0], np.int32)
    g = rng.rand(2, 4, 5, 3).astype(np.float32)
    v = tf.Variable(image)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.image.crop_and_resize(v, boxes, indices, [4, 5]) * g)
    grad = tape.gradient(loss, v).numpy()
    # <crop(x), g> = <x, grad> for every x: the gradient is the transpose of the linear map
    probe = rng.rand(*image.shape).astype(np.float32)
    crop = tf.image.crop_and_resize(probe, boxes, indices, [4, 5]).numpy()
    assert abs(np.sum(crop * g) - np.sum(probe * grad)) < 1e-4 * np.sum(np.abs(crop * g))


def test_extract_patches_second_order_and_graph():
    x = rng.rand(1, 5, 5, 2)
    check_grads(lambda v: tf.image.extract_patches(v, [1, 2, 2, 1], [1, 1, 1, 1],
                                                   [1, 1, 1, 1], "VALID") ** 2, [x], order=2)
    f = tf.function(lambda v: tf.image.extract_patches(v, [1, 3, 3, 1], [1, 2, 2, 1],
                                                       [1, 1, 1, 1], "SAME"))
    eager = tf.image.extract_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    assert eager.shape == (1, 3, 3, 18)
    np.testing.assert_array_equal(f(x).numpy(), eager.numpy())


def test_random_flips_are_seeded_and_per_image():
    batch = np.stack([np.arange(12.0).reshape(3, 4, 1)] * 64)
    tf.random.set_seed(5)
    first = tf.image.random_flip_left_right(batch, seed=1).numpy()
    tf.random.set_seed(5)
    again = tf.image.random_flip_left_right(batch, seed=1).numpy()
    np.testing.assert_array_equal(first, again)
    flipped = [bool(np.array_equal(im, batch[0][:, ::-1])) for im in first]
    kept = [bool(np.array_equal(im, batch[0])) for im in first]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 10 < sum(flipped) < 54       # each image flips on its own coin
    single = tf.image.random_flip_up_down(batch[0], seed=2).numpy()
    assert np.array_equal(single, batch[0]) or np.array_equal(single, batch[0][::-1])


def test_random_crop_is_a_window_of_the_value():
    value = np.arange(6 * 7 * 2).reshape(6, 7, 2)
    seen = set()
    for seed in range(12):
        crop = tf.image.random_crop(value, [3, 4, 2], seed=seed).numpy()
        starts = [(i, j) for i in range(4) for j in range(4)
                  if np.array_equal(value[i:i + 3, j:j + 4], crop)]
        assert len(starts) == 1
        seen.add(starts[0])
    assert len(seen) > 3
    traced = tf.function(lambda v: tf.random_crop(v, [2, 2, 2], seed=3))
    assert traced(value).shape == (2, 2, 2)


def test_random_photometric_ops_draw_within_their_ranges():
    image = np.full((4, 4, 3), 0.5, np.float32)
    for seed in range(5):
        out = tf.image.random_brightness(image, 0.2, seed=seed).numpy()
        assert np.allclose(out, out[0, 0, 0]) and 0.3 <= out[0, 0, 0] <= 0.7
    colourful = rng.rand(4, 4, 3).astype(np.float32)
    out = tf.image.random_contrast(colourful, 0.5, 1.5, seed=1).numpy()
    np.testing.assert_allclose(out.mean(axis=(0, 1)), colourful.mean(axis=(0, 1)), atol=1e-6)
    for bad, match in ((lambda: tf.image.random_hue(image, 0.6), "max_delta"),
                       (lambda: tf.image.random_contrast(image, 0.9, 0.5), "upper"),
                       (lambda: tf.image.random_saturation(image, -1.0, 0.5), "lower")):
        with pytest.raises(ValueError, match=match):
            bad()


def test_image_functions_in_a_dataset_map():
    images = (rng.rand(6, 10, 12, 3) * 255).astype(np.uint8)
    ds = tf.data.Dataset.from_tensor_slices(images).map(
        lambda im: tf.image.per_image_standardization(
            tf.image.random_flip_left_right(tf.image.resize(
                tf.image.convert_image_dtype(im, tf.float32), [8, 8]), seed=4)))
    batch = next(iter(ds.batch(6))).numpy()
    assert batch.shape == (6, 8, 8, 3) and batch.dtype == np.float32
    np.testing.assert_allclose(batch.mean(axis=(1, 2, 3)), 0.0, atol=1e-5)


@pytest.mark.parametrize("call,words", [
    (lambda: tf.image.rgb_to_hsv(np.zeros((2, 2, 4), np.float32)), ["rgb_to_hsv", "[2, 2, 4]"]),
    (lambda: tf.image.crop_to_bounding_box(np.zeros((5, 5, 1)), 3, 0, 4, 2),
     ["crop_to_bounding_box", "height must be >= target + offset", "[5, 5, 1]"]),
    (lambda: tf.image.pad_to_bounding_box(np.zeros((5, 5, 1)), 0, 2, 5, 6),
     ["pad_to_bounding_box", "width must be <= target - offset"]),
    (lambda: tf.image.flip_left_right(np.zeros((5, 5))), ["flip_left_right", "[5, 5]"]),
    (lambda: tf.image.psnr(np.zeros((4, 4, 3)), np.zeros((4, 5, 3)), 1.0),
     ["psnr", "[4, 4, 3]", "[4, 5, 3]"]),
    (lambda: tf.image.ssim(np.zeros((1, 6, 6, 1), np.float32),
                           np.zeros((1, 6, 6, 1), np.float32), 1.0), ["ssim", "11x11"]),
])
def test_errors_name_the_function_and_shapes(call, words):
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message
    if isinstance(info.value, tf.errors.InvalidArgumentError):
        assert "test_image_ops.py" in message     # the user's own line


def test_crop_and_resize_and_extract_patches_reject_bad_arguments():
    image = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(Exception, match="box_indices"):
        tf.image.crop_and_resize(image, [[0, 0, 1, 1]], [3], [2, 2])
    with pytest.raises(ValueError, match="sizes"):
        tf.image.extract_patches(image, [2, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")


def test_saturate_cast_clamps_instead_of_wrapping():
    np.testing.assert_array_equal(tf.saturate_cast(np.array([-3.0, 300.0]), tf.uint8).numpy(),
                                  [0, 255])
    np.testing.assert_array_equal(tf.dtypes.saturate_cast(np.array([70000, -5]), tf.int16)
                                  .numpy(), [32767, -5])
