"""tf.keras.utils additions: plot_model/model_to_dot (pydot + Graphviz), image helpers,
to_ordinal, split_dataset, PyDataset in fit, serialize/deserialize_keras_object,
get_source_inputs."""

import shutil

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import utils
from tapeflow.keras.utils import vis_utils


def _functional():
    a = keras.Input((4,), name="a")
    b = keras.Input((2,), name="b")
    h = keras.layers.Dense(3, activation="relu", name="hidden")(a)
    out = keras.layers.Concatenate(name="cat")([h, b])
    return keras.Model([a, b], out)


def test_model_to_dot_follows_the_graph():
    pytest.importorskip("pydot")
    dot = vis_utils.build_dot(_functional(), show_shapes=True, show_layer_activations=True)
    labels = {n.get_name(): n.get("label") for n in dot.get_nodes() if n.get("label")}
    text = " ".join(labels.values())
    assert "hidden (Dense)|relu" in text and "cat (Concatenate)" in text
    assert "(?, 4)" in text and "(?, 5)" in text
    names = {key: label.split(" ")[0].strip("{") for key, label in labels.items()}
    edges = sorted((names[e.get_source()], names[e.get_destination()])
                   for e in dot.get_edges())
    assert edges == [("a", "hidden"), ("b", "cat"), ("hidden", "cat")]
    seq = keras.Sequential([keras.layers.Dense(2, input_shape=(3,)), keras.layers.Dense(1)])
    assert len(vis_utils.build_dot(seq).get_edges()) == 1


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_plot_model_writes_an_image(tmp_path):
    pytest.importorskip("pydot")
    path = tmp_path / "model.png"
    utils.plot_model(_functional(), to_file=str(path), show_shapes=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_model_without_graphviz_says_what_to_install(monkeypatch):
    monkeypatch.setattr(vis_utils, "check_graphviz", lambda: False)
    with pytest.raises(ImportError, match="pip install pydot.*graphviz"):
        utils.plot_model(_functional(), to_file="unused.png")


def test_image_helpers_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (5, 7, 3)).astype("float32")
    path = tmp_path / "img.png"
    utils.save_img(str(path), x, scale=False)
    img = utils.load_img(str(path))
    assert img.size == (7, 5) and img.mode == "RGB"
    np.testing.assert_array_equal(utils.img_to_array(img), x)
    gray = utils.img_to_array(utils.load_img(str(path), color_mode="grayscale",
                                             target_size=(10, 14)))
    assert gray.shape == (10, 14, 1) and gray.dtype == np.float32
    scaled = utils.img_to_array(utils.array_to_img(np.array([[[0.0], [0.5], [1.0]]])))
    np.testing.assert_array_equal(scaled[..., 0], [[0.0, 127.0, 255.0]])
    with pytest.raises(ValueError, match="rank 3"):
        utils.array_to_img(np.zeros((2, 2)))


def test_to_ordinal_matches_keras():
    # tf-keras 2.21: to_ordinal([0, 2, 1], 3) == [[0, 0], [1, 1], [1, 0]]
    np.testing.assert_array_equal(utils.to_ordinal([0, 2, 1], 3), [[0, 0], [1, 1], [1, 0]])
    assert utils.to_ordinal(np.array([[1], [3]])).shape == (2, 3)


def test_split_dataset():
    x, y = np.arange(10).reshape(10, 1), np.arange(10) * 2
    left, right = utils.split_dataset((x, y), left_size=0.8)
    lx = [a.tolist() for a, _ in left.as_numpy_iterator()]
    assert len(lx) == 8 and len(list(right.as_numpy_iterator())) == 2 and lx[0] == [0]
    left, right = utils.split_dataset(x, right_size=3, shuffle=True, seed=1)
    got = sorted(int(v[0]) for v in left.as_numpy_iterator()) + \
        sorted(int(v[0]) for v in right.as_numpy_iterator())
    assert sorted(got) == list(range(10)) and len(got) == 10
    with pytest.raises(ValueError, match="left_size"):
        utils.split_dataset(x)


class _Batches(utils.PyDataset):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.x = np.random.default_rng(0).random((32, 3)).astype("float32")

    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = self.x[i * 8:(i + 1) * 8]
        return x, x.sum(1, keepdims=True)


def test_pydataset_in_fit_uses_its_own_workers():
    data = _Batches(workers=2, max_queue_size=3)
    assert (data.workers, data.use_multiprocessing, data.num_batches) == (2, False, 4)
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    history = model.fit(data, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_serialize_and_source_inputs():
    layer = keras.layers.Dense(3, activation="relu", name="d")
    config = utils.serialize_keras_object(layer)
    assert config["class_name"] == "Dense" and config["config"]["units"] == 3
    again = utils.deserialize_keras_object(config)
    assert isinstance(again, keras.layers.Dense) and again.units == 3
    model = _functional()
    assert [t.name for t in utils.get_source_inputs(model.outputs[0])] == ["a", "b"]
    assert tf.keras.utils is utils
