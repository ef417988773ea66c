"""tf.saved_model: directories that reload in a fresh process that never imports the code
that defined the model; callable and differentiable functions, signatures, variables with
their paths; corrupt or hostile directories give clear errors and run nothing."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


class Dense(tf.Module):
    def __init__(self, seed):
        super().__init__()
        rs = np.random.RandomState(seed)
        self.w = tf.Variable(rs.randn(3, 2).astype("float32"), name="w")
        self.b = tf.Variable(np.ones(2, "float32"), name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.dense = Dense(0)
        self.blocks = [Dense(1), {"extra": tf.Variable(2.0)}]
        self.steps = tf.Variable(0, dtype=tf.int64, trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], name="features")])
    def predict(self, x):
        return {"y": self.dense(x) * self.blocks[1]["extra"]}

    @tf.function
    def loss(self, x, scale):
        self.steps.assign_add(1)
        y = tf.reduce_sum(self.dense(x))
        if scale > 1.0:  # AutoGraph: a tf.cond with two branch graphs
            y = y * scale
        return y


X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], "float32")


def _fresh_process(code: str, export_dir) -> str:
    """Run `code` in a new interpreter that imports tapeflow only (not this test module)."""
    script = (f"import numpy as np, tapeflow as tf\nimport sys\n"
              f"loaded = tf.saved_model.load({str(export_dir)!r})\n" + code +
              "\nassert 'test_saved_model' not in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300, cwd=str(export_dir))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_module_reloads_in_a_fresh_process(tmp_path):
    net = Net()
    net.loss(X, tf.constant(2.0))  # traced once: saved with this signature
    want_predict = net.predict(X)["y"].numpy()
    with tf.GradientTape() as tape:
        want_loss = net.loss(X, tf.constant(3.0))
    want_grad = tape.gradient(want_loss, net.dense.w).numpy()
    tf.saved_model.save(net, str(tmp_path / "net"))
    assert sorted(os.listdir(tmp_path / "net")) == ["saved_model.json", "variables"]
    out = _fresh_process(f"""
x = np.array({X.tolist()!r}, 'float32')
print(repr(loaded.predict(x)['y'].numpy().tolist()))
print(repr(loaded.signatures['serving_default'](features=tf.constant(x))['y'].numpy().tolist()))
with tf.GradientTape() as tape:
    value = loaded.loss(x, tf.constant(3.0))
print(repr(float(value)), repr(tape.gradient(value, loaded.dense.w).numpy().tolist()))
print(int(loaded.steps.numpy()), float(loaded.blocks[1]['extra'].numpy()))
print(repr(loaded.blocks[0](x).numpy().shape), len(loaded.variables),
      len(loaded.trainable_variables))
""", tmp_path / "net").splitlines()
    np.testing.assert_allclose(eval(out[0]), want_predict, rtol=1e-6)
    np.testing.assert_allclose(eval(out[1]), want_predict, rtol=1e-6)
    value, grad = out[2].split(" ", 1)
    assert float(value) == pytest.approx(float(want_loss), rel=1e-6)
    np.testing.assert_allclose(eval(grad), want_grad, rtol=1e-6)
    assert out[3] == "3 2.0"  # saved after two loss calls; the fresh process made one more
    assert out[4] == "(2, 2) 6 5"


def test_keras_model_save_dir(tmp_path):
    L = tf.keras.layers
    inp = tf.keras.Input((6,), name="features")
    h = L.BatchNormalization()(L.Dense(8, activation="relu")(inp))
    model = tf.keras.Model(inp, L.Dense(3, name="probs", activation="softmax")(h))
    model.compile("adam", "sparse_categorical_crossentropy")
    x = np.random.RandomState(0).randn(8, 6).astype("float32")
    model.fit(x, np.arange(8) % 3, verbose=0)
    want = model(x, training=False).numpy()
    model.save(str(tmp_path / "m"))  # no extension: a SavedModel directory, as Keras 2
    again = tf.keras.models.load_model(str(tmp_path / "m"))
    assert isinstance(again, tf.keras.Model)
    np.testing.assert_allclose(again(x, training=False).numpy(), want, rtol=1e-6)
    out = _fresh_process("""
x = np.random.RandomState(0).randn(8, 6).astype('float32')
serve = loaded.signatures['serving_default']
print(repr(serve(features=tf.constant(x))['probs'].numpy().tolist()))
""", tmp_path / "m")
    np.testing.assert_allclose(eval(out), want, rtol=1e-6)


def test_bare_function(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return tf.reduce_sum(x ** 2)

    tf.saved_model.save(f, str(tmp_path / "f"))
    loaded = tf.saved_model.load(str(tmp_path / "f"))
    assert float(loaded(tf.constant([1.0, 2.0]))) == 5.0
    assert list(loaded.signatures["serving_default"](x=tf.constant([3.0])).values())[0] == 9.0


def test_save_and_load_options_and_constants(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x + 1.0

    path = str(tmp_path / "opts")
    tf.saved_model.save(f, path, options=tf.saved_model.SaveOptions(
        save_debug_info=True, function_aliases={"plus_one": f}))
    assert os.path.isdir(os.path.join(path, tf.saved_model.VARIABLES_DIRECTORY))
    loaded = tf.saved_model.load(path, tags=[tf.saved_model.SERVING],
                                 options=tf.saved_model.LoadOptions(allow_partial_checkpoint=True))
    np.testing.assert_array_equal(loaded(tf.constant([1.0, 2.0])).numpy(), [2.0, 3.0])
    assert tf.saved_model.PREDICT_METHOD_NAME == "tensorflow/serving/predict"
    assert (tf.saved_model.TRAINING, tf.saved_model.CLASSIFY_OUTPUT_SCORES) == ("train", "scores")
    with pytest.raises(TypeError, match="tf.saved_model.save: options must be a "
                                        "tf.saved_model.SaveOptions"):
        tf.saved_model.save(f, path, options=tf.saved_model.LoadOptions())
    with pytest.raises(TypeError, match="LoadOptions"):
        tf.saved_model.load(path, options={"allow_partial_checkpoint": True})
    with pytest.raises(TypeError, match="function_aliases"):
        tf.saved_model.SaveOptions(function_aliases=[f])


def _saved(tmp_path):
    v = tf.Variable([1.0, 2.0])

    @tf.function(input_signature=[tf.TensorSpec([2])])
    def f(x):
        return x * v

    module = tf.Module()
    module.v, module.f = v, f
    tf.saved_model.save(module, str(tmp_path / "sm"))
    return tmp_path / "sm", json.loads((tmp_path / "sm" / "saved_model.json").read_text())


def _write(path, document):
    (path / "saved_model.json").write_text(json.dumps(document))


def test_corrupt_and_hostile_directories(tmp_path):
    path, good = _saved(tmp_path)
    assert float(tf.saved_model.load(str(path)).f(tf.constant([1.0, 1.0]))[1]) == 2.0
    FormatError = tf.saved_model.FormatError
    with pytest.raises(FileNotFoundError, match="not a SavedModel"):
        tf.saved_model.load(str(tmp_path))
    (path / "saved_model.json").write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        tf.saved_model.load(str(path))
    _write(path, {**good, "version": 99})
    with pytest.raises(FormatError, match="version 99 is newer"):
        tf.saved_model.load(str(path))
    _write(path, {**good, "format": "pickle"})
    with pytest.raises(FormatError, match="not a tapeflow SavedModel"):
        tf.saved_model.load(str(path))
    evil = json.loads(json.dumps(good))
    evil["concrete_functions"][0]["graph"]["nodes"][0]["op"] = "os.system"
    _write(path, evil)
    with pytest.raises(FormatError, match="unknown op 'os.system'"):
        tf.saved_model.load(str(path))
    evil = json.loads(json.dumps(good))
    evil["objects"][0]["children"]["__class__"] = 1
    _write(path, evil)
    with pytest.raises(FormatError, match="'__class__' not allowed"):
        tf.saved_model.load(str(path))
    evil = json.loads(json.dumps(good))
    evil["concrete_functions"][0]["graph"]["nodes"][1]["attrs"]["x"] = {"pickle": "gASV"}
    _write(path, evil)
    with pytest.raises(FormatError, match="unknown attribute tag 'pickle'"):
        tf.saved_model.load(str(path))
    evil = json.loads(json.dumps(good))
    evil["variables"][0]["shape"] = [3]
    _write(path, evil)
    with pytest.raises(FormatError, match="has shape"):
        tf.saved_model.load(str(path))
    _write(path, good)
    (path / "variables" / "variables.safetensors").write_bytes(b"garbage")
    with pytest.raises(FormatError, match="cannot read the variables"):
        tf.saved_model.load(str(path))


def test_python_code_in_a_graph_cannot_be_saved(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([2])])
    def f(x):
        return tf.numpy_function(np.sort, [x], tf.float32)

    module = tf.Module()
    module.f = f
    with pytest.raises(tf.saved_model.FormatError, match="op EagerPyFunc .*cannot store"):
        tf.saved_model.save(module, str(tmp_path / "sm"))
    assert not os.path.exists(tmp_path / "sm")


def test_subclassed_keras_model_gets_a_serving_signature(tmp_path):
    from tapeflow.models import MLP

    model = MLP(hidden=16)
    x = np.random.RandomState(1).rand(3, 28, 28).astype("float32")
    want = model(x).numpy()
    model.save(str(tmp_path / "mlp"))
    loaded = tf.saved_model.load(str(tmp_path / "mlp"))
    serve = loaded.signatures["serving_default"]
    assert serve.input_names == ["input_1"]
    np.testing.assert_allclose(serve(input_1=tf.constant(x))["output_1"].numpy(), want,
                               rtol=1e-6)
    assert len(loaded.variables) == 4
