"""tf.keras.preprocessing.image: ImageDataGenerator, its iterators and the NumPy affine
helpers. References are written here (NumPy, scipy.ndimage with the composed matrix, the
draw order replayed on NumPy's generator). Compared once with tf_keras 2.21 (with SciPy and
Pillow), on the inputs used here, flow batches, fit statistics, the ZCA matrix and the
affine / channel / brightness shifts were equal bit for bit; the values marked below were
recorded in that run."""

import warnings

import numpy as np
import pytest
from scipy import ndimage

import tapeflow as tf
from tapeflow.keras.preprocessing import image

RNG = np.random.default_rng(0)
X = (RNG.random((10, 9, 7, 3)) * 255).astype(np.float32)
Y = np.arange(10)
SQUARE = np.arange(16, dtype=np.float32).reshape(4, 4, 1)


def _hwc(x, **kwargs):
    return image.apply_affine_transform(x, row_axis=0, col_axis=1, channel_axis=2, **kwargs)


def test_affine_rotation_shift_and_identity():
    assert _hwc(SQUARE) is SQUARE  # nothing to do: the input back
    np.testing.assert_allclose(_hwc(SQUARE, theta=90)[..., 0], np.rot90(SQUARE[..., 0]),
                               atol=1e-6)
    shifted = _hwc(SQUARE, tx=1, fill_mode="constant", cval=-1)[..., 0]
    # Keras's tx moves the content one column left (its axes are swapped for row < col)
    np.testing.assert_array_equal(shifted[:, :-1], SQUARE[:, 1:, 0])
    np.testing.assert_array_equal(shifted[:, -1], -1)
    chw = np.moveaxis(SQUARE, 2, 0)
    np.testing.assert_allclose(image.apply_affine_transform(chw, theta=90)[0],
                               np.rot90(SQUARE[..., 0]), atol=1e-6)


def test_affine_matches_composed_matrix_through_scipy():
    x = np.moveaxis(X[1], 2, 0)
    theta, shear = np.deg2rad(10), np.deg2rad(5)
    m = (np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0],
                   [0, 0, 1]])
         @ np.array([[1, 0, 1.5], [0, 1, -2], [0, 0, 1]])
         @ np.array([[1, -np.sin(shear), 0], [0, np.cos(shear), 0], [0, 0, 1]])
         @ np.diag([0.9, 1.1, 1]))
    oy, ox = 9 / 2 - 0.5, 7 / 2 - 0.5
    m = np.array([[1, 0, oy], [0, 1, ox], [0, 0, 1]]) @ m @ \
        np.array([[1, 0, -oy], [0, 1, -ox], [0, 0, 1]])
    m = m[[1, 0]][:, [1, 0, 2]]  # Keras swaps the two spatial axes (row_axis < col_axis)
    want = np.stack([ndimage.affine_transform(c, m[:2, :2], m[:2, 2], order=3, mode="wrap")
                     for c in x])
    got = image.apply_affine_transform(x, theta=10, tx=1.5, ty=-2, shear=5, zx=0.9, zy=1.1,
                                       fill_mode="wrap", order=3)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)
    with pytest.raises(ValueError, match="must be distinct"):
        image.apply_affine_transform(x, theta=1, row_axis=1, col_axis=1)
    with pytest.raises(ValueError, match="multi-channel 2D images"):
        image.apply_affine_transform(x[0], theta=1)


def test_channel_and_brightness_shift():
    shifted = image.apply_channel_shift(X[2], 40.0, 2)
    np.testing.assert_allclose(shifted, np.clip(X[2] + 40.0, X[2].min(), X[2].max()))
    flat = np.full((2, 2, 3), 100.0, np.float32)
    np.testing.assert_allclose(image.apply_brightness_shift(flat, 1.5, scale=False), 150.0)
    np.random.seed(1)
    a = image.random_rotation(X[0], 40, row_axis=0, col_axis=1, channel_axis=2)
    np.random.seed(1)
    b = _hwc(X[0], theta=np.random.uniform(-40, 40))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="`zoom_range` should be a tuple or list of two"):
        image.random_zoom(X[0], (0.5,))


def _replayed_params(gen, shape, draws):
    """get_random_transform's draws, in Keras's order, for this test's generator."""
    theta = draws.uniform(-30, 30)
    tx = draws.choice(2) * draws.choice([-1, 1])  # an int range: Keras picks 0..n-1, a sign
    ty = draws.uniform(-0.2, 0.2) * shape[1]
    shear = draws.uniform(-10, 10)
    zx, zy = draws.uniform(0.8, 1.2, 2)
    flip_h, flip_v = (draws.random() < 0.5) * True, (draws.random() < 0.5) * True
    shift = draws.uniform(-5.0, 5.0)
    return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
            "flip_horizontal": flip_h, "flip_vertical": flip_v,
            "channel_shift_intensity": shift, "brightness": None}


def _augmenting():
    return image.ImageDataGenerator(rotation_range=30, width_shift_range=0.2,
                                    height_shift_range=2, zoom_range=0.2, horizontal_flip=True,
                                    vertical_flip=True, rescale=1 / 255.0, shear_range=10,
                                    channel_shift_range=5.0, fill_mode="reflect")


def test_random_transform_draw_order():
    gen = _augmenting()
    got = gen.get_random_transform((9, 7, 3), seed=4)
    np.random.seed(4)
    want = _replayed_params(gen, (9, 7, 3), np.random)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key]), key


def test_flow_seeded_batches_replay():
    gen = _augmenting()
    it = gen.flow(X, Y, batch_size=4, seed=3)
    assert len(it) == 3 and isinstance(it, tf.keras.utils.Sequence)
    bx, by = it[0]
    np.random.seed(3)  # seed + batches seen (0), then the epoch's permutation
    order = np.random.permutation(10)
    np.testing.assert_array_equal(by, order[:4])
    for i, j in enumerate(order[:4]):
        params = _replayed_params(gen, X[j].shape, np.random)
        want = gen.standardize(gen.apply_transform(X[j].copy(), params))
        np.testing.assert_allclose(bx[i], want, rtol=1e-6)
    np.testing.assert_array_equal(by, [5, 4, 1, 2])  # recorded from tf_keras 2.21
    assert float(bx.astype(np.float64).sum()) == pytest.approx(389.04334011953324, rel=1e-6)
    again = _augmenting().flow(X, Y, batch_size=4, seed=3)
    np.testing.assert_array_equal(again[0][0], bx)
    last_x, last_y = it[2]
    assert last_x.shape == (2, 9, 7, 3) and len(last_y) == 2
    nexts = [next(it)[1] for _ in range(4)]
    assert sorted(np.concatenate(nexts[:3])) == list(range(10))  # one epoch: every sample


def test_featurewise_samplewise_and_zca_statistics():
    gen = image.ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True,
                                   samplewise_center=True)
    gen.fit(X)
    mean = X.mean(axis=(0, 1, 2))
    std = (X - mean).std(axis=(0, 1, 2))
    np.testing.assert_allclose(gen.mean.ravel(), mean, rtol=1e-5)
    np.testing.assert_allclose(gen.std.ravel(), std, rtol=1e-5)
    batch = gen.flow(X, batch_size=5, shuffle=False)[0]
    centred = X[:5] - X[:5].mean(axis=(1, 2, 3), keepdims=True)
    np.testing.assert_allclose(batch, (centred - gen.mean) / (gen.std + 1e-6), rtol=1e-4,
                               atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zca = image.ImageDataGenerator(zca_whitening=True)
    small = X[:, :3, :3, :]
    zca.fit(small)
    flat = (small - small.mean(axis=(0, 1, 2))).reshape(10, -1)
    u, s, _ = np.linalg.svd(flat.T.astype(np.float64), full_matrices=False)
    want = (u * (np.sqrt(10) / (s + 1e-6))) @ u.T
    np.testing.assert_allclose(zca.zca_whitening_matrix, want, rtol=1e-3, atol=1e-3)
    assert zca.featurewise_center and not zca.featurewise_std_normalization


def test_flow_outputs_subsets_weights_and_fit():
    gen = image.ImageDataGenerator(rescale=0.5, validation_split=0.3)
    w = np.linspace(0, 1, 10)
    xb, yb, wb = gen.flow(X, Y, sample_weight=w, shuffle=False, batch_size=3)[0]
    np.testing.assert_allclose(xb, X[:3] * 0.5)
    np.testing.assert_array_equal(yb, Y[:3])
    np.testing.assert_array_equal(wb, w[:3])
    val = gen.flow(X, Y, subset="validation", shuffle=False, ignore_class_split=True)
    train = gen.flow(X, Y, subset="training", shuffle=False, ignore_class_split=True)
    assert val.n == 3 and train.n == 7
    with pytest.raises(ValueError, match="different number of classes"):
        gen.flow(X, Y, subset="training")
    extra = gen.flow((X, Y * 10), shuffle=False, batch_size=2)[0]
    assert isinstance(extra, list) and list(extra[1]) == [0, 10]
    model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(9, 7, 3)),
                                 tf.keras.layers.Dense(10)])
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(_augmenting().flow(X, Y, batch_size=4, seed=1), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


def test_generator_errors_and_warnings():
    with pytest.raises(ValueError, match="`data_format` should be"):
        image.ImageDataGenerator(data_format="nhwc")
    with pytest.raises(ValueError, match="`validation_split` must be strictly between 0 and 1"):
        image.ImageDataGenerator(validation_split=1.5)
    with pytest.raises(ValueError, match="`zoom_range` should be a float or a tuple"):
        image.ImageDataGenerator(zoom_range=(1, 2, 3))
    with pytest.raises(ValueError, match="`brightness_range should be tuple or list"):
        image.ImageDataGenerator(brightness_range=0.5)
    gen = image.ImageDataGenerator(featurewise_center=True)
    with pytest.raises(ValueError, match="should have rank 4"):
        gen.fit(X[0])
    with pytest.raises(ValueError, match="should have rank 4"):
        gen.flow(X[0])
    with pytest.raises(ValueError, match="should have the same length"):
        gen.flow(X, Y[:3])
    with pytest.warns(UserWarning, match="hasn't been fit on any training data"):
        gen.standardize(X[0].copy())
    with pytest.warns(UserWarning, match="overrides setting of `featurewise_center`"):
        image.ImageDataGenerator(featurewise_std_normalization=True)
    with pytest.raises(ValueError, match="Asked to retrieve element 5"):
        gen.flow(X, batch_size=4)[5]


def _image_tree(root):
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls, n in (("cats", 3), ("dogs", 4), ("zebra", 2)):
        (root / cls / "sub").mkdir(parents=True)
        for i in range(n):
            ext = "PNG" if i == 1 else "png"
            path = root / cls / ("sub" if i == 0 else "") / f"img{i}.{ext}"
            Image.fromarray((rng.random((12, 10, 3)) * 255).astype(np.uint8)).save(path)
    (root / "cats" / "notes.txt").write_text("not an image")
    (root / "stray.png").write_bytes(b"")  # files beside the class folders are not classes


def test_flow_from_directory_lists_labels_and_batches(tmp_path, capsys):
    _image_tree(tmp_path)
    gen = image.ImageDataGenerator(rescale=1 / 255.0, rotation_range=20, horizontal_flip=True,
                                   validation_split=0.5)
    it = gen.flow_from_directory(str(tmp_path), target_size=(8, 6), batch_size=4, seed=2)
    assert "Found 9 images belonging to 3 classes." in capsys.readouterr().out
    # recorded from tf_keras 2.21: class folders sorted, files walked sorted, any case
    assert it.filenames == ["cats/img1.PNG", "cats/img2.png", "cats/sub/img0.png",
                            "dogs/img1.PNG", "dogs/img2.png", "dogs/img3.png",
                            "dogs/sub/img0.png", "zebra/img1.PNG", "zebra/sub/img0.png"]
    assert it.class_indices == {"cats": 0, "dogs": 1, "zebra": 2}
    assert it.classes.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2]
    bx, by = it[0]
    np.random.seed(2)
    order = np.random.permutation(9)
    for i, j in enumerate(order[:4]):
        img = image.load_img(tmp_path / it.filenames[j], target_size=(8, 6))
        x = image.img_to_array(img)
        want = gen.standardize(gen.apply_transform(x, gen.get_random_transform(x.shape)))
        np.testing.assert_allclose(bx[i], want, rtol=1e-6)
    np.testing.assert_array_equal(by, np.eye(3, dtype=np.float32)[it.classes[order[:4]]])
    val = gen.flow_from_directory(str(tmp_path), target_size=(8, 6), class_mode="sparse",
                                  subset="validation", color_mode="grayscale", shuffle=False)
    assert val.filenames == ["cats/img1.PNG", "dogs/img1.PNG", "dogs/img2.png",
                             "zebra/img1.PNG"]  # the first half of each class
    vx, vy = val[0]
    assert vx.shape == (4, 8, 6, 1) and vy.tolist() == [0.0, 1.0, 1.0, 2.0]
    chosen = gen.flow_from_directory(str(tmp_path), target_size=(5, 5), class_mode=None,
                                     classes=["zebra", "cats"], shuffle=False)
    assert chosen.class_indices == {"zebra": 0, "cats": 1} and chosen[0].shape == (5, 5, 5, 3)
    same = gen.flow_from_directory(str(tmp_path), target_size=(8, 6), class_mode="input",
                                   shuffle=False)[0]
    np.testing.assert_array_equal(same[0], same[1])
    with pytest.raises(ValueError, match="Invalid class_mode"):
        gen.flow_from_directory(str(tmp_path), class_mode="onehot")
    with pytest.raises(ValueError, match="Invalid color mode"):
        gen.flow_from_directory(str(tmp_path), color_mode="cmyk")


def test_load_img_keep_aspect_ratio_resamples_the_centre_box(tmp_path):
    from PIL import Image

    arr = (np.random.default_rng(3).random((12, 10, 3)) * 255).astype(np.uint8)
    Image.fromarray(arr).save(tmp_path / "a.png")
    got = image.img_to_array(image.load_img(tmp_path / "a.png", target_size=(5, 5),
                                            interpolation="bilinear", keep_aspect_ratio=True))
    # the centred 10x10 box, resampled by Pillow with box= (as tf-keras), not crop-then-resize
    want = np.asarray(Image.fromarray(arr).resize((5, 5), Image.BILINEAR, box=(0, 1, 10, 11)),
                      dtype=np.float32)
    np.testing.assert_array_equal(got, want)
