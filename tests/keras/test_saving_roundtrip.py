"""tapeflow's own model files: save, load, predict the same, train on exactly as before."""

import json
import os
import zipfile

import numpy as np
import pytest
import saving_fixtures

import tapeflow as tf

pytest.importorskip("h5py")
L = tf.keras.layers


def _functional():
    a = tf.keras.Input((6,), name="a")
    b = tf.keras.Input((4,), name="b")
    h = L.Dense(8, activation="relu")(a)
    h = L.Concatenate()([h, b])
    h = saving_fixtures.Scaled(5)(h)
    h = L.BatchNormalization()(h)
    return tf.keras.Model([a, b], L.Dense(2)(h), name="f")


def _sequential():
    return tf.keras.Sequential([L.Conv2D(4, 3, input_shape=(8, 8, 2)), L.MaxPooling2D(),
                                L.Flatten(), L.Dense(3, activation="softmax")], name="s")


def _data(model, n=16):
    rs = np.random.RandomState(0)
    xs = [rs.randn(n, *x.shape.as_list()[1:]).astype("float32") for x in model.inputs]
    return (xs if len(xs) > 1 else xs[0]), rs.randint(0, 2, (n,))


@pytest.mark.parametrize("ext", [".keras", ".h5"])
@pytest.mark.parametrize("make", [_functional, _sequential])
def test_save_load_predicts_the_same(tmp_path, ext, make):
    model = make()
    x, _ = _data(model)
    path = str(tmp_path / f"m{ext}")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert [type(layer) for layer in loaded.layers] == [type(layer) for layer in model.layers]
    assert [w.name for w in loaded.weights] == [w.name for w in model.weights]
    np.testing.assert_array_equal(loaded(x, training=False).numpy(),
                                  model(x, training=False).numpy())


@pytest.mark.parametrize("ext", [".keras", ".h5"])
def test_fit_resumes_exactly(tmp_path, ext):
    """2 epochs in one go == 1 epoch, save, load (optimizer slots too), 1 more epoch."""
    def make():
        tf.random.set_seed(1)
        model = _functional()
        model.compile(tf.keras.optimizers.Adam(0.01),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model

    x, y = _data(_functional())
    straight = make()
    straight.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    first = make()
    first.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    first.save(str(tmp_path / f"m{ext}"))
    resumed = tf.keras.models.load_model(str(tmp_path / f"m{ext}"))
    assert int(resumed.optimizer.iterations.numpy()) == 4
    assert resumed.optimizer.get_config() == first.optimizer.get_config()
    resumed.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(resumed.weights, straight.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7, err_msg=a.name)


def test_subclassed_model_round_trip(tmp_path):
    model = saving_fixtures.TwoLayer(4, 2)
    x = np.random.RandomState(0).randn(3, 5).astype("float32")
    model(x)
    model.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    assert isinstance(loaded, saving_fixtures.TwoLayer) and loaded.hidden == 4
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


@pytest.mark.parametrize("name", ["w.h5", "w.weights.h5"])
def test_save_weights_h5(tmp_path, name):
    model, other = _sequential(), _sequential()
    model.save_weights(str(tmp_path / name))
    other.load_weights(str(tmp_path / name))
    x, _ = _data(model)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())


def test_load_weights_by_name(tmp_path):
    model = _sequential()
    model.save_weights(str(tmp_path / "w.h5"))
    other = tf.keras.Sequential([L.Conv2D(4, 3, input_shape=(8, 8, 2), name=model.layers[0].name),
                                 L.Flatten(), L.Dense(5)])
    other.load_weights(str(tmp_path / "w.h5"), by_name=True, skip_mismatch=True)
    np.testing.assert_array_equal(other.layers[0].kernel.numpy(), model.layers[0].kernel.numpy())


def test_clone_model_and_json():
    model = _functional()
    clone = tf.keras.models.clone_model(model)
    assert clone is not model and [layer.name for layer in clone.layers] == \
        [layer.name for layer in model.layers]
    assert not np.array_equal(clone.layers[1].kernel.numpy(), model.layers[1].kernel.numpy())
    clone.set_weights(model.get_weights())
    x, _ = _data(model)
    np.testing.assert_array_equal(clone(x, training=False).numpy(),
                                  model(x, training=False).numpy())
    text = model.to_json()
    assert json.loads(text)["config"]["layers"][4]["class_name"] == "fixtures>Scaled"
    again = tf.keras.models.model_from_json(text)
    assert again.count_params() == model.count_params()
    seq = tf.keras.models.clone_model(_sequential(), clone_function=lambda layer: layer.__class__
                                      .from_config(layer.get_config()))
    assert len(seq.layers) == 4


def test_shared_layer_called_twice(tmp_path):
    a, b = tf.keras.Input((3,)), tf.keras.Input((3,))
    shared = L.Dense(2)
    model = tf.keras.Model([a, b], L.Add()([shared(a), shared(b)]))
    model.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    assert len(loaded.weights) == 2
    x = [np.ones((2, 3), "float32"), np.arange(6, dtype="float32").reshape(2, 3)]
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_corrupt_files_give_clear_errors(tmp_path):
    model = _sequential()
    good = str(tmp_path / "m.keras")
    model.save(good)
    bad = tmp_path / "bad.keras"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="not a .keras file"):
        tf.keras.models.load_model(str(bad))
    with zipfile.ZipFile(good) as zf, zipfile.ZipFile(tmp_path / "nojson.keras", "w") as out:
        out.writestr("config.json", "{not json")
        out.writestr("model.weights.h5", zf.read("model.weights.h5"))
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        tf.keras.models.load_model(str(tmp_path / "nojson.keras"))
    with zipfile.ZipFile(good) as zf, zipfile.ZipFile(tmp_path / "evil.keras", "w") as out:
        config = json.loads(zf.read("config.json"))
        config["config"]["layers"][1] = {"module": "os", "class_name": "system",
                                         "config": {"command": "touch pwned"}}
        out.writestr("config.json", json.dumps(config))
        out.writestr("model.weights.h5", zf.read("model.weights.h5"))
    with pytest.raises(ValueError, match="Unknown layer: 'system'"):
        tf.keras.models.load_model(str(tmp_path / "evil.keras"))
    other = tf.keras.Sequential([L.Dense(3, input_shape=(4,))])
    other.save_weights(str(tmp_path / "w.weights.h5"))
    with pytest.raises(ValueError, match="expects 2 variables, but the file holds 0"):
        model.load_weights(str(tmp_path / "w.weights.h5"))
    (tmp_path / "x.keras").write_bytes(b"hello")
    with pytest.raises(ValueError, match="neither a .keras"):
        tf.keras.models.load_model(str(tmp_path / "x.keras"))


def test_zoo_sequential_densenet_with_its_custom_block(tmp_path):
    from tapeflow.models import DenseNetSequential

    model = DenseNetSequential(input_shape=(12, 12, 1), num_blocks=2, layers_per_block=2)
    x = np.random.RandomState(0).rand(2, 12, 12, 1).astype("float32")
    model.save(str(tmp_path / "d.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "d.keras"))  # DenseBlock is registered
    np.testing.assert_array_equal(loaded(x, training=False).numpy(),
                                  model(x, training=False).numpy())


@pytest.mark.parametrize("ext", [".keras", ".h5"])
def test_tf_ops_in_a_functional_model(tmp_path, ext):
    a = tf.keras.Input((3,))
    h = L.Dense(4)(a)
    y = tf.nn.relu(h * 2.0 + 1.0)[:, 1:3]
    model = tf.keras.Model(a, tf.concat([y, tf.reduce_sum(h, axis=1, keepdims=True)], -1))
    model.save(str(tmp_path / f"m{ext}"))
    loaded = tf.keras.models.load_model(str(tmp_path / f"m{ext}"))
    assert [x.name for x in loaded.layers] == [x.name for x in model.layers]
    x = np.random.RandomState(0).rand(2, 3).astype("float32")
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


@pytest.mark.parametrize("function", ["io.write_file", "py_function", "print",
                                      "compat.v1.py_func", "__operators__.call", "os.system",
                                      "math._private", "keras.models.load_model", "Variable",
                                      "debugging.assert_equal", 3])
def test_tf_op_layer_runs_only_array_functions(function):
    """A TF op layer read from a file names a function; only the op library's array
    functions are ever called (no I/O, no Python callbacks, no classes, no printing)."""
    from tapeflow.keras.saving import serialization

    config = {"module": "keras.layers", "class_name": "TFOpLambda",
              "config": {"name": "tf.op", "function": function}}
    with pytest.raises(ValueError, match="cannot use function"):
        serialization.deserialize_keras_object(config)


def test_tf_op_layers_are_written_as_tf_keras_writes_them(tmp_path):
    """The TF-op layers tf-keras would write for the same calls (function, keyword arguments,
    a tensor argument as [layer, node, tensor]); an op with no single TF call keeps tapeflow's
    form and still round-trips."""

    a = tf.keras.Input((3,), name="a")
    h = L.Dense(3, name="h")(a)
    y = tf.concat([tf.nn.relu(h * 2.0) - h, h[:, 1:2]], axis=-1)
    y = tf.math.cumsum(tf.reduce_sum(y, axis=1, keepdims=True), axis=1)
    model = tf.keras.Model(a, y)
    model.save(str(tmp_path / "m.keras"))
    layers = json.loads(zipfile.ZipFile(tmp_path / "m.keras").read("config.json"))[
        "config"]["layers"]
    name = {x.name.rsplit("_", 1)[0] if x.name[-1].isdigit() else x.name: x.name
            for x in model.layers}  # the session may have numbered them
    got = {x["name"]: (x["class_name"], x["config"].get("function"), x["inbound_nodes"])
           for x in layers}
    assert got[name["tf.math.multiply"]] == ("TFOpLambda", "math.multiply",
                                             [["h", 0, 0, {"y": 2.0}]])
    assert got[name["tf.math.subtract"]] == ("TFOpLambda", "math.subtract",
                                             [[name["tf.nn.relu"], 0, 0, {"y": ["h", 0, 0]}]])
    assert got[name["tf.StridedSlice"]][:2] == ("SlicingOpLambda", "__operators__.getitem")
    assert got[name["tf.concat"]][2] == [[[name["tf.math.subtract"], 0, 0, {"axis": 1}],
                                          [name["tf.StridedSlice"], 0, 0, {"axis": 1}]]]
    assert got[name["tf.math.reduce_sum"]][1:] == ("math.reduce_sum", [
        [name["tf.concat"], 0, 0, {"axis": [1], "keepdims": True}]])
    cumsum = [x for x in layers if x["name"].startswith("tf.math.cumsum")][0]
    assert cumsum["config"]["op"] == "Cumsum"  # tapeflow's own form
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    x = np.random.RandomState(0).rand(2, 3).astype("float32")
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_subclassed_model_without_get_config_saves_its_arguments(tmp_path):
    """tf-keras 2.21's rule: the constructor's arguments when they are plain values (the
    fixture file is tf-keras's own config of this model); name, trainable and dtype only with
    ``**kwargs``; otherwise an empty config that cannot be revived; no HDF5 file at all."""
    here = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras")
    recorded = json.loads(zipfile.ZipFile(os.path.join(here, "auto_config.keras"))
                          .read("config.json"))["config"]
    model = saving_fixtures.AutoConfig(3, scale=0.5, name="auto")
    assert model.get_config() == recorded
    x = np.random.RandomState(0).rand(2, 5).astype("float32")
    model(x)
    model.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    assert type(loaded) is saving_fixtures.AutoConfig and loaded.scale == 0.5
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    with pytest.raises(NotImplementedError, match="subclassed models"):
        model.save(str(tmp_path / "m.h5"))

    class Positional(tf.keras.Model):  # **kw, not **kwargs: only its own arguments
        def __init__(self, units, **kw):
            super().__init__(**kw)
            self.d = L.Dense(units)

        def call(self, x):
            return self.d(x)

    assert Positional(4, name="p").get_config() == {"units": 4}
    odd = Positional(np.float32(2.0))
    with pytest.warns(UserWarning, match="non-serializable"):
        assert odd.get_config() == {}
    with pytest.raises(TypeError, match="Unable to revive model from config"):
        Positional.from_config({})
