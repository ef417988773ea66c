"""ONNX export: every zoo model, checked by onnx.checker and run in onnxruntime, gives
tapeflow's outputs to 1e-5; an op with no ONNX form is an error naming it."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import models as zoo

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import tapeflow.onnx  # noqa: E402

RS = np.random.RandomState(0)
CASES = {
    "mlp": (lambda: zoo.MLP(), [None, 28, 28], lambda: RS.rand(3, 28, 28)),
    "seed_cnn": (lambda: zoo.CifarCNN(), [None, 32, 32, 3], lambda: RS.rand(2, 32, 32, 3)),
    "densenet": (lambda: zoo.DenseNet(input_shape=(16, 16, 3), num_blocks=2, layers_per_block=2),
                 [None, 16, 16, 3], lambda: RS.rand(2, 16, 16, 3)),
    "revnet": (lambda: zoo.RevNet(num_classes=10, filters=8, num_blocks=2),
               [None, 16, 16, 3], lambda: RS.rand(2, 16, 16, 3)),
    "lstm": (lambda: zoo.LSTMClassifier(50, 10, embed_dim=8, units=8), [None, 10],
             lambda: RS.randint(0, 50, (3, 10))),
}


def _run(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})


@pytest.mark.parametrize("name", list(CASES))
def test_zoo_model_matches_onnxruntime(tmp_path, name):
    make, shape, data = CASES[name]
    model = make()
    x = data().astype("int32" if name == "lstm" else "float32")
    model(x)  # built; batch norms get non-trivial moving statistics below
    if name in ("densenet", "revnet"):
        for layer in model._flatten_layers():
            if isinstance(layer, tf.keras.layers.BatchNormalization):
                dims = layer.moving_mean.shape.as_list()
                layer.moving_mean.assign((RS.randn(*dims) * 0.1).astype("float32"))
                layer.moving_variance.assign(RS.uniform(0.5, 2, dims).astype("float32"))
    spec = tf.TensorSpec(shape, tf.int32 if name == "lstm" else tf.float32)
    proto = tapeflow.onnx.export(model, [spec], tmp_path / "m.onnx")
    onnx.checker.check_model(onnx.load(str(tmp_path / "m.onnx")), full_check=True)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N0"
    (got,) = _run(tmp_path / "m.onnx", x)
    np.testing.assert_allclose(got, model(x, training=False).numpy(), atol=1e-5, rtol=1e-5)


def test_tf_function_and_other_batch_size(tmp_path):
    w = tf.Variable(RS.randn(4, 3).astype("float32"), name="w")

    @tf.function
    def f(x):
        y = tf.reduce_mean(tf.nn.tanh(tf.matmul(x, w)), axis=1, keepdims=True)
        return tf.concat([y, tf.transpose(x)[:1, :1] * 0.0 + y], axis=1)

    tapeflow.onnx.export(f, [tf.TensorSpec([None, 4])], tmp_path / "f.onnx")
    x = RS.randn(5, 4).astype("float32")
    (got,) = _run(tmp_path / "f.onnx", x)
    np.testing.assert_allclose(got, f(x).numpy(), atol=1e-6)


def test_unexportable_op_is_named(tmp_path):
    @tf.function
    def f(x):
        return tf.math.cumsum(x, axis=0)

    with pytest.raises(tapeflow.onnx.ExportError, match="op Cumsum .*has no ONNX converter"):
        tapeflow.onnx.export(f, [tf.TensorSpec([3])], tmp_path / "f.onnx")
    assert not (tmp_path / "f.onnx").exists()


def test_cli_export(tmp_path, capsys):
    from tapeflow.cli import main

    model = zoo.DenseNet(input_shape=(12, 12, 1), num_blocks=1, layers_per_block=2)
    model.save(str(tmp_path / "d.keras"))
    out = tmp_path / "d.onnx"
    assert main(["export", str(tmp_path / "d.keras"), "--format", "onnx", "-o", str(out)]) == 0
    assert "checked with onnx.checker" in capsys.readouterr().out
    x = RS.rand(2, 12, 12, 1).astype("float32")
    (got,) = _run(out, x)
    np.testing.assert_allclose(got, model(x, training=False).numpy(), atol=1e-5)
