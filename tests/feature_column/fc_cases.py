"""Feature columns and a small feature dict shared by the TF recorder and the tests; `fc` is
``tf.feature_column`` and `init` ``tf.keras.initializers`` of either library."""

import numpy as np

FEATURES = {
    "age": np.array([10.0, 25.0, 60.0, 35.0], np.float32),
    "xy": np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.0], [2.0, 2.0]], np.float32),
    "thal": np.array(["fixed", "zzz", "", "normal"]),
    "thal2": np.array(["normal", "other", "fixed", ""]),
    "city": np.array(["a", "b", "c", "paris"]),
    "num": np.array([1, 3, 9, -1], np.int64),
    "code": np.array([7, 11, 5, 7], np.int64),
    "code2": np.array([3, -1, 12345, 0], np.int64),
}


def table_values(shape):
    """The values both libraries put in an embedding table before comparing outputs."""
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 17) * 0.1 - 0.5


def columns(fc, init, int64):
    age = fc.numeric_column("age")
    xy = fc.numeric_column("xy", shape=(2,), normalizer_fn=lambda x: x * 2.0 - 1.0)
    age_b = fc.bucketized_column(age, [18, 30, 50])
    xy_b = fc.bucketized_column(fc.numeric_column("xy", shape=2), [0.0, 1.0])
    thal = fc.categorical_column_with_vocabulary_list(
        "thal", ["fixed", "normal", "reversible"], num_oov_buckets=2)
    thal_d = fc.categorical_column_with_vocabulary_list("thal2", ["fixed", "normal"],
                                                        default_value=1)
    code = fc.categorical_column_with_vocabulary_list("code", [5, 7])
    city = fc.categorical_column_with_hash_bucket("city", 7)
    code_h = fc.categorical_column_with_hash_bucket("code2", 5, dtype=int64)
    num = fc.categorical_column_with_identity("num", 4, default_value=0)
    return [
        age, xy, age_b, xy_b,
        fc.indicator_column(thal), fc.indicator_column(thal_d), fc.indicator_column(code),
        fc.indicator_column(city), fc.indicator_column(code_h), fc.indicator_column(num),
        fc.indicator_column(xy_b),
        fc.indicator_column(fc.crossed_column([age_b, "thal"], hash_bucket_size=11)),
        fc.indicator_column(fc.crossed_column(["thal", "city"], hash_bucket_size=13)),
        fc.indicator_column(fc.crossed_column(["code", num, "city"], hash_bucket_size=17)),
        fc.embedding_column(fc.crossed_column(["thal", "code"], 1000, hash_key=12345), 2,
                            combiner="sum"),
        fc.embedding_column(thal, 3, initializer=init.Constant(0.5)),
        fc.embedding_column(xy_b, 2, combiner="sqrtn", initializer=init.Constant(1.0)),
    ]
