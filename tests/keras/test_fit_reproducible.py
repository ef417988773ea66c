"""``fit`` is reproducible (issue 20 item 3): with ``tf.random.set_seed`` or
``tf.keras.utils.set_random_seed``, initializers, dropout and the per-epoch shuffle repeat bit
for bit, within a process and across processes."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")

# a small job: glorot initializers, dropout in the traced train step, shuffled batches
JOB = """
import json, sys
import numpy as np
import tapeflow as tf
from tapeflow import keras
tf.random.set_seed(int(sys.argv[1]))
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 8)).astype("float32")
y = (x[:, :3].sum(1) > 0).astype("int64")
model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)),
                          keras.layers.Dropout(0.3), keras.layers.Dense(2)])
model.compile(keras.optimizers.Adam(0.01),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True))
hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
path = tf.train.Checkpoint(model=model).save(sys.argv[2])
print(json.dumps({"loss": [float(v).hex() for v in hist.history["loss"]], "path": path}))
"""


def _run_job(seed, prefix):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    out = subprocess.run([sys.executable, "-c", JOB, str(seed), str(prefix)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _tensors(prefix):
    from safetensors.numpy import load_file

    return load_file(prefix + ".safetensors")


def _same_tensors(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a)


def test_two_processes_with_the_same_seed_train_the_same_bits(tmp_path):
    first = _run_job(7, tmp_path / "a" / "ckpt")
    second = _run_job(7, tmp_path / "b" / "ckpt")
    assert first["loss"] == second["loss"]
    assert _same_tensors(_tensors(first["path"]), _tensors(second["path"]))
    other = _run_job(8, tmp_path / "c" / "ckpt")
    assert other["loss"] != first["loss"]


def _train(seed, shuffle=True):
    backend.clear_session()
    if seed is not None:
        tf.random.set_seed(seed)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    y = rng.normal(size=(40, 1)).astype(np.float32)
    model = keras.Sequential([layers.Dense(8, input_shape=(5,)), layers.Dropout(0.5),
                              layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.05), "mse")
    hist = model.fit(x, y, batch_size=8, epochs=2, shuffle=shuffle, verbose=0)
    return hist.history["loss"], model.get_weights()


def test_set_seed_repeats_initializers_dropout_and_shuffling_in_process():
    loss_a, weights_a = _train(3)
    loss_b, weights_b = _train(3)
    assert loss_a == loss_b
    assert all(np.array_equal(a, b) for a, b in zip(weights_a, weights_b))
    loss_c, _ = _train(4)
    assert loss_c != loss_a


def test_shuffle_order_follows_the_global_seed():
    from tapeflow.keras.engine import data_adapter

    def orders(seed):
        tf.random.set_seed(seed)
        data = data_adapter.DataHandler(np.arange(20), batch_size=20, shuffle=True)
        return [next(iter(data.epoch())).numpy().tolist() for _ in range(2)]

    first = orders(11)
    assert first == orders(11)
    assert first[0] != first[1]  # a new order every epoch
    assert sorted(first[0]) == list(range(20))
    assert first != orders(12)


@pytest.mark.slow
def test_cli_train_mlp_twice_gives_identical_losses_and_weights(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    outputs, tensors = [], []
    for run in ("a", "b"):
        out = subprocess.run([sys.executable, "-m", "tapeflow.cli", "train", "mlp", "--epochs",
                              "2", "--seed", "7", "--checkpoint-dir", str(tmp_path / run),
                              "--logdir", ""],
                             env=env, capture_output=True, text=True, timeout=600, check=True)
        outputs.append(re.findall(r"(?:val_)?(?:loss|accuracy): [0-9.]+", out.stdout))
        ckpt = [p for p in os.listdir(tmp_path / run / "mlp") if p.endswith(".safetensors")]
        tensors.append(_tensors(str(tmp_path / run / "mlp" / ckpt[0][:-len(".safetensors")])))
    assert outputs[0] == outputs[1]
    assert _same_tensors(*tensors)
