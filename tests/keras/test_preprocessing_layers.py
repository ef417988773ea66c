"""Keras preprocessing layers against tf-keras 2.21 (expected values recorded from it with the
same calls), traced, in Dataset.map and inside a model that trains."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers
DOCS = ["the cat sat", "the dog sat on the mat", "a cat! a DOG?", "zebra"]


def _values(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t).tolist()


@pytest.mark.parametrize("mode,vocab,want", [
    ("int", ["", "[UNK]", "the", "sat", "dog", "cat", "a", "zebra"],
     [[2, 5, 1, 6, 7], [4, 0, 0, 0, 0]]),
    ("multi_hot", ["[UNK]", "the", "sat", "dog", "cat", "a", "zebra", "on"],
     [[1, 1, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 0, 0, 0, 0]]),
    ("count", ["[UNK]", "the", "sat", "dog", "cat", "a", "zebra", "on"],
     [[1, 1, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 0, 0, 0, 0]]),
    ("tf_idf", ["[UNK]", "the", "sat", "dog", "cat", "a", "zebra", "on"],
     [[0.9550040364265442, 0.8472978472709656, 0, 0, 0.8472978472709656, 1.0986123085021973,
       1.0986123085021973, 0], [0, 0, 0, 0.8472978472709656, 0, 0, 0, 0]]),
])
def test_text_vectorization_matches_tf_keras(mode, vocab, want):
    tv = L.TextVectorization(output_mode=mode, max_tokens=8)
    tv.adapt(DOCS)
    assert tv.get_vocabulary() == vocab        # frequency order, ties: larger token first
    np.testing.assert_allclose(_values(tv(["the cat ate a zebra", "dog"])), want, rtol=1e-6)


def test_text_vectorization_sequence_length_graph_and_dataset():
    tv = L.TextVectorization(output_sequence_length=4)
    tv.adapt(tf.data.Dataset.from_tensor_slices(DOCS).batch(2))
    assert _values(tv(["the cat sat on"])) == [[2, 5, 3, 8]]
    assert _values(tv(["dog"])) == [[4, 0, 0, 0]]
    traced = tf.function(lambda s: tv(s))
    np.testing.assert_array_equal(traced(tf.constant(["a cat", "the mat sat"])).numpy(),
                                  tv(["a cat", "the mat sat"]).numpy())
    ds = tf.data.Dataset.from_tensor_slices(DOCS).batch(2).map(tv)
    assert [b.shape for b in ds] == [(2, 4), (2, 4)]


def test_string_lookup_layouts_match_tf_keras():
    sl = L.StringLookup()
    sl.adapt([["a", "b", "b"], ["c", "c", "c"]])
    assert sl.get_vocabulary() == ["[UNK]", "c", "b", "a"]
    assert _values(sl([["a", "z"], ["c", "b"]])) == [[3, 0], [1, 2]]
    sl = L.StringLookup(vocabulary=["x", "y"], num_oov_indices=2, mask_token="")
    assert sl.get_vocabulary() == ["", "[UNK]", "[UNK]", "x", "y"] and sl.vocabulary_size() == 5
    assert _values(sl([["x", "", "q", "y", "r"]])) == [[3, 0, 2, 4, 2]]   # FarmHash OOV slots
    multi = L.StringLookup(vocabulary=["x", "y"], output_mode="multi_hot", mask_token="")
    assert _values(multi([["x", "", "y"]])) == [[0, 1, 1]]                 # no mask column
    assert _values(L.StringLookup(vocabulary=["x", "y"], output_mode="one_hot")(["x", "q"])) \
        == [[0, 1, 0], [1, 0, 0]]
    inverse = L.StringLookup(vocabulary=["x", "y"], invert=True)
    assert [v.decode() if isinstance(v, bytes) else v for v in _values(inverse([[0, 1, 2]]))[0]] \
        == ["[UNK]", "x", "y"]


def test_integer_lookup_matches_tf_keras():
    il = L.IntegerLookup()
    il.adapt([5, 5, 7, 9, 9, 9])
    assert [int(v) for v in il.get_vocabulary()] == [-1, 9, 5, 7]
    assert _values(il([5, 9, 100])) == [2, 1, 0]
    il = L.IntegerLookup(vocabulary=[12, 36], mask_token=0)
    assert [int(v) for v in il.get_vocabulary()] == [0, -1, 12, 36]
    assert _values(il([0, 12, 36, 4])) == [0, 2, 3, 1]
    assert _values(tf.function(lambda v: il(v))(tf.constant([36, 7], tf.int64))) == [3, 1]


def test_hashing_gives_tf_keras_bins():
    assert _values(L.Hashing(num_bins=5)([["a"], ["b"], ["cat"]])) == [[4], [2], [1]]
    assert _values(L.Hashing(num_bins=5, mask_value="")([["a"], [""]])) == [[4], [0]]
    assert _values(L.Hashing(3)([[12], [40]])) == [[1], [1]]
    assert _values(L.Hashing(4, salt=133)([["a"], ["b"]])) == [[1], [0]]


def test_normalization_and_discretization_match_tf_keras():
    norm = L.Normalization()
    norm.adapt(np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]]))
    np.testing.assert_allclose(_values(norm(np.array([[2.0, 4.0]]))),
                               [[-0.6123723983764648, -0.6123723983764648]], rtol=1e-6)
    np.testing.assert_allclose(_values(norm.variance), [[2.6666667461395264, 10.666666984558105]])
    inverse = L.Normalization(mean=3.0, variance=2.0, invert=True)
    np.testing.assert_allclose(_values(inverse(np.array([[1.0, -1.0]]))),
                               [[4.41421365737915, 1.5857864618301392]], rtol=1e-6)
    disc = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    out = disc([[-1.5, 0.0, 1.5, 2.0, 3.0]])
    assert _values(out) == [[0, 1, 2, 3, 3]] and out.dtype == tf.int64
    learned = L.Discretization(num_bins=4)
    learned.adapt(np.arange(100.0))
    assert _values(learned(np.array([0.0, 30.0, 60.0, 99.0]))) == [0, 1, 2, 3]


def test_category_encoding_matches_tf_keras():
    assert _values(L.CategoryEncoding(4, output_mode="one_hot")([3, 0, 2])) == \
        [[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0]]
    multi = L.CategoryEncoding(4, output_mode="multi_hot")
    assert _values(multi([[0, 1], [0, 0], [1, 2], [3, 1]])) == \
        [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]]
    count = L.CategoryEncoding(4, output_mode="count")
    weights = np.array([[.1, .2], [.1, .1], [.2, .3], [.4, .2]])
    np.testing.assert_allclose(_values(count([[0, 1], [0, 0], [1, 2], [3, 1]],
                                             count_weights=weights)),
                               [[.1, .2, 0, 0], [.2, 0, 0, 0], [0, .2, .3, 0], [0, .2, 0, .4]],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="0 <= values < num_tokens"):
        multi([[0, 4]])


IMG = np.arange(2 * 5 * 6 * 1, dtype=np.float32).reshape(2, 5, 6, 1)


def test_image_layers_match_tf_keras():
    np.testing.assert_array_equal(L.Rescaling(1 / 127.5, offset=-1)(
        np.array([[0, 255]], np.uint8)).numpy(), [[-1.0, 1.0]])
    assert _values(L.CenterCrop(3, 2)(IMG)[0, :, :, 0]) == [[8, 9], [14, 15], [20, 21]]
    up = L.CenterCrop(6, 8)(IMG).numpy()
    assert up.shape == (2, 6, 8, 1)
    np.testing.assert_allclose(up[0, 0, :, 0], [0, .625, 1.375, 2.125, 2.875, 3.625, 4.375, 5],
                               atol=1e-5)
    np.testing.assert_allclose(L.Resizing(3, 4, crop_to_aspect_ratio=True)(IMG)[0, :, :, 0],
                               [[1.25, 2.75, 4.25, 5.75], [9.25, 10.75, 12.25, 13.75],
                                [17.25, 18.75, 20.25, 21.75]], atol=1e-5)
    np.testing.assert_allclose(L.RandomCrop(3, 3)(IMG, training=False)[0, :, :, 0],
                               [[2.3333, 4.0, 5.6667], [12.3333, 14.0, 15.6667],
                                [22.3333, 24.0, 25.6667]], atol=1e-4)


def test_random_layers_augment_in_training_only():
    img = np.random.RandomState(0).rand(4, 6, 6, 3).astype(np.float32) * 255
    for layer in (L.RandomFlip(seed=1), L.RandomContrast(0.5, seed=1),
                  L.RandomBrightness(0.3, seed=1), L.RandomCrop(4, 4, seed=1)):
        if not isinstance(layer, L.RandomCrop):
            np.testing.assert_array_equal(layer(img, training=False).numpy(), img)
        out = layer(img, training=True).numpy()
        assert out.shape[0] == 4 and np.isfinite(out).all()
        assert out.min() >= 0 and out.max() <= 255
    crop = L.RandomCrop(4, 4, seed=3)(img, training=True).numpy()
    assert any(np.array_equal(crop, img[:, i:i + 4, j:j + 4]) for i in range(3) for j in range(3))


def test_a_model_with_preprocessing_trains_and_predicts():
    x = np.random.RandomState(1).rand(64, 3).astype(np.float32) * 10
    y = (x.sum(axis=1) > 15).astype(np.float32)
    norm = L.Normalization()
    norm.adapt(x)
    model = tf.keras.Sequential([tf.keras.Input((3,)), norm, L.Dense(1, activation="sigmoid")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.predict(x[:4], verbose=0).shape == (4, 1)


def test_experimental_preprocessing_alias():
    assert L.experimental.preprocessing.Rescaling is L.Rescaling
    assert L.experimental.preprocessing.TextVectorization is L.TextVectorization
