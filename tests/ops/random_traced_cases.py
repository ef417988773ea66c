"""Seeded stateful random ops inside tf.function: one case table for the recorder
(record_tf_random.py, under TF 2.21) and test_random_philox.py."""


def traced(tf):
    """Implicit op seeds 0, 1, 2 per traced function; explicit ones as eagerly; each call
    continues the op's stream; set_seed restarts it."""
    out = {}
    tf.random.set_seed(1)
    two = tf.function(lambda: (tf.random.normal([3]), tf.random.uniform([2], -1.0, 3.0)))
    out["implicit_1"], out["implicit_2"] = two()
    out["implicit_again_1"], out["implicit_again_2"] = two()
    explicit = tf.function(lambda: tf.random.normal([3], seed=5))
    out["explicit_1"], out["explicit_2"] = explicit(), explicit()
    tf.random.set_seed(1)
    out["after_set_seed"] = explicit()
    with_arg = tf.function(lambda x: x * 2.0 + tf.random.truncated_normal([2], stddev=0.5))
    out["with_argument"] = with_arg(tf.constant(1.0))
    ints = tf.function(lambda: tf.random.uniform([4], 0, 100, dtype=tf.int64))
    out["ints"] = ints()
    tf.random.set_seed(None)
    return out
