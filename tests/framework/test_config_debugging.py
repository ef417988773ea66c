"""tf.config devices, tf.device, tf.debugging asserts / numerics, tf.test.TestCase."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import config


@pytest.fixture
def restore_config():
    saved = dict(config._settings)
    yield
    config._settings.clear()
    config._settings.update(saved)


def test_devices_and_soft_placement(restore_config):
    cpu = tf.config.list_physical_devices("CPU")
    assert [d.device_type for d in cpu] == ["CPU"] and tf.config.list_physical_devices("GPU") == []
    config._settings["initialized"] = False
    tf.config.set_logical_device_configuration(cpu[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    names = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert names[1].endswith("device:CPU:1") and len(names) == 2
    with tf.device("/CPU:1"):
        a = tf.constant([1.0]) * 2
    with tf.device("/GPU:0"):  # no GPU: soft placement puts it on the CPU
        b = a + 1
    assert a.device.endswith("CPU:1") and b.device.endswith("CPU:0")
    tf.config.set_soft_device_placement(False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:0"):
        with tf.device("/GPU:0"):
            pass
    spec = tf.DeviceSpec.from_string("/job:worker/task:1/device:GPU:2")
    assert spec.device_type == "GPU" and spec.to_string() == "/job:worker/task:1/device:GPU:2"


def test_jit_and_determinism(restore_config):
    tf.config.optimizer.set_jit(True)
    assert tf.config.optimizer.get_jit()
    tf.config.experimental.enable_op_determinism()
    assert config.op_determinism_enabled()
    # TF 2.21's rule: randomness without any seed is an error; a seed makes it fine
    tf.random.set_seed(None)
    for draw in (lambda: tf.random.normal([2]), lambda: tf.nn.dropout(tf.ones([2]), 0.5),
                 lambda: tf.function(lambda: tf.random.uniform([2]))(),
                 lambda: tf.data.Dataset.range(3).shuffle(3),
                 lambda: tf.random.Generator.from_non_deterministic_state()):
        with pytest.raises(RuntimeError, match="determinism is enabled"):
            draw()
    assert tf.random.uniform([2], seed=3).shape == (2,)
    tf.random.set_seed(1)
    assert tf.random.normal([2]).shape == (2,)
    assert list(tf.data.Dataset.range(3).shuffle(3).as_numpy_iterator()) != []
    tf.random.set_seed(None)


def test_value_asserts_eager_and_traced():
    tf.debugging.assert_equal(tf.constant([1, 2]), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="oops.*x == y"):
        tf.debugging.assert_equal(tf.constant([1, 2]), [1, 3], message="oops")
    with pytest.raises(tf.errors.InvalidArgumentError, match="x < y"):
        tf.debugging.assert_less(tf.constant([1.0, 5.0]), 3.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="tolerance"):
        tf.debugging.assert_near(tf.constant([1.0]), tf.constant([1.1]))
    tf.debugging.assert_non_negative(tf.constant([0.0, 1.0]))

    @tf.function
    def f(x):
        tf.debugging.assert_positive(x)
        return x * 2

    assert f(tf.constant([1.0])).numpy().tolist() == [2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="x > 0"):
        f(tf.constant([-1.0]))


def test_static_asserts():
    with pytest.raises(ValueError, match="rank 3"):
        tf.debugging.assert_rank(tf.ones([2, 2]), 3)
    with pytest.raises(TypeError):
        tf.debugging.assert_type(tf.ones([2]), tf.int32)
    tf.debugging.assert_shapes([(tf.ones([2, 3]), ("N", "D")), (tf.ones([3]), ("D",))])
    with pytest.raises(ValueError, match="'N'"):
        tf.debugging.assert_shapes([(tf.ones([2, 3]), ("N", "D")), (tf.ones([4]), ("N",))])


def test_check_numerics_and_enable_check_numerics():
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad : Tensor had NaN"):
        tf.debugging.check_numerics(tf.constant([1.0, np.nan]), "bad")
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.debugging.check_numerics(x * x, "ok")
    assert float(tape.gradient(y, x)) == 4.0

    @tf.function
    def g(v):
        return tf.math.log(v) * 2  # the log makes the NaN

    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)op Log.*test_config"):
            g(tf.constant([-1.0, 1.0]))
    finally:
        tf.debugging.disable_check_numerics()
    assert np.isnan(g(tf.constant([-1.0, 1.0])).numpy()[0])
    assert not tf.config.functions_run_eagerly()


class _Case(tf.test.TestCase):
    def runTest(self):  # noqa: N802 - unittest's name
        self.assertAllClose(tf.constant([1.0, 2.0]), [1.0, 2.0 + 1e-8])
        self.assertAllEqual(tf.ragged.constant([[1], [2, 3]]), [[1], [2, 3]])
        self.assertAllEqual(self.evaluate({"a": tf.constant(3)}), {"a": 3})
        self.assertAllInRange(tf.constant([0.5]), 0, 1)
        with self.assertRaisesOpError("x == y"):
            tf.debugging.assert_equal(1, 2)
        with self.cached_session():
            self.assertDTypeEqual(tf.constant(1.0), tf.float32)
        self.assertTrue(self.get_temp_dir())


def test_testcase_helpers():
    result = _Case().run()
    assert result.wasSuccessful(), result.failures + result.errors
    assert tf.test.is_gpu_available() is False and tf.test.gpu_device_name() == ""
    theoretical, numerical = tf.test.compute_gradient(lambda x: x * x, [np.array([1.0, 3.0])])
    np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-6)
    np.testing.assert_allclose(theoretical[0], np.diag([2.0, 6.0]))


def test_accelerator_switches_answer_as_tensorflow_on_a_cpu(restore_config):
    """TF 2.21's values on a CPU-only machine (from /work/tfenv)."""
    xp = tf.config.experimental
    assert xp.tensor_float_32_execution_enabled() is True
    assert xp.get_device_policy() == "silent" and xp.get_synchronous_execution() is True
    assert xp.get_device_details(tf.config.list_physical_devices("CPU")[0]) == {}
    assert xp.get_memory_info("CPU:0") == {"current": 0, "peak": 0}
    xp.enable_tensor_float_32_execution(False)
    xp.set_device_policy("explicit")
    assert not xp.tensor_float_32_execution_enabled() and xp.get_device_policy() == "explicit"
    with pytest.warns(DeprecationWarning):
        assert xp.get_memory_usage("CPU:0") == 0


def test_set_jit_tells_its_hooks_when_it_changes(restore_config):
    seen = []
    config.jit_changed_hooks.append(seen.append)
    try:
        tf.config.optimizer.set_jit(False)
        tf.config.optimizer.set_jit(True)
        tf.config.optimizer.set_jit(True)
        tf.config.optimizer.set_jit(False)
    finally:
        config.jit_changed_hooks.remove(seen.append)
    assert seen == [True, False]
