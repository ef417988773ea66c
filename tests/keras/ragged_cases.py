"""RaggedTensor inputs through Keras layers and models: one case table, run under tf-keras 2.21
by reference/record_ragged_keras.py (fixture reference/ragged_keras.json) and under tapeflow
by test_ragged_inputs.py. A case takes the `tf` module and its `keras` and returns plain
Python numbers (ragged results as their row splits and flat values)."""

import numpy as np

IDS = [[1, 2, 3, 4], [5], [6, 2]]
SEQ = [[[0.5, -1.0], [1.0, 2.0], [0.0, 0.3]], [[-0.7, 0.2]], [[0.1, 0.1], [2.0, -1.0]]]
WORDS = [["the", "cat", "sat"], ["a", "dog"], ["the", "bird", "flew", "off"]]
VOCAB = ["the", "cat", "dog", "bird"]
Y = [[0.5], [-1.0], [2.0]]


def seed_weights(layer, seed):
    """Every weight of `layer` (a layer or a model) uniform in [-0.6, 0.6), in Keras's order."""
    rng = np.random.RandomState(seed)
    layer.set_weights([rng.uniform(-0.6, 0.6, np.shape(w)).astype(np.float32)
                       for w in layer.get_weights()])


def out(tf, x):
    """A result as JSON: {"splits": [...], "values": [...]} for a RaggedTensor, else a list."""
    if isinstance(x, (list, tuple)):
        return [out(tf, v) for v in x]
    if isinstance(x, tf.RaggedTensor):
        return {"splits": [s.numpy().tolist() for s in x.nested_row_splits],
                "values": x.flat_values.numpy().tolist()}
    return np.asarray(x).tolist()


def _seq(tf):
    return tf.ragged.constant(SEQ, ragged_rank=1)


def _layer_on(make, data, seed=1):
    """Build the layer on `data`, seed its weights, and call it again."""
    def case(tf, keras):
        layer = make(keras)
        x = data(tf)
        layer(x)
        seed_weights(layer, seed)
        return out(tf, layer(x))
    return case


RNN_LAYERS = {
    "lstm": lambda k: k.layers.LSTM(3),
    "gru": lambda k: k.layers.GRU(3),
    "gru_v1_bias": lambda k: k.layers.GRU(3, reset_after=False),
    "simple_rnn": lambda k: k.layers.SimpleRNN(3),
    "lstm_sequences": lambda k: k.layers.LSTM(3, return_sequences=True),
    "gru_backwards_sequences": lambda k: k.layers.GRU(3, return_sequences=True,
                                                      go_backwards=True),
    "lstm_backwards": lambda k: k.layers.LSTM(2, go_backwards=True),
    "simple_rnn_state": lambda k: k.layers.SimpleRNN(2, return_sequences=True,
                                                     return_state=True),
    "lstm_state": lambda k: k.layers.LSTM(2, return_state=True),
    "bidirectional_lstm_sequences": lambda k: k.layers.Bidirectional(
        k.layers.LSTM(2, return_sequences=True)),
    "bidirectional_gru_sum": lambda k: k.layers.Bidirectional(k.layers.GRU(2),
                                                              merge_mode="sum"),
    "rnn_lstm_cell": lambda k: k.layers.RNN(k.layers.LSTMCell(2)),
}

LAYERS = {
    "dense": lambda k: k.layers.Dense(3, activation="tanh"),
    "layer_normalization": lambda k: k.layers.LayerNormalization(),
    "time_distributed": lambda k: k.layers.TimeDistributed(k.layers.Dense(2)),
    "global_average_pooling": lambda k: k.layers.GlobalAveragePooling1D(),
    "global_max_pooling": lambda k: k.layers.GlobalMaxPooling1D(),
}


def embedding(tf, keras):
    layer = keras.layers.Embedding(8, 3)
    x = tf.ragged.constant(IDS)
    layer(x)
    seed_weights(layer, 2)
    return out(tf, layer(x))


def softmax_rows(tf, keras):
    x = tf.ragged.constant([[1.0, 2.0, 3.0], [4.0], [0.5, -0.5]])
    return out(tf, keras.layers.Activation("softmax")(x))


def merges(tf, keras):
    x = _seq(tf)
    return [out(tf, keras.layers.Concatenate()([x, x * 2.0])),
            out(tf, keras.layers.Add()([x, x])), out(tf, keras.layers.Average()([x, x * 3.0]))]


def lookups(tf, keras):
    words = tf.ragged.constant(WORDS)
    ids = keras.layers.StringLookup(vocabulary=VOCAB)(words)
    vectorized = keras.layers.TextVectorization(vocabulary=VOCAB, ragged=True)(
        tf.constant(["the cat sat", "a dog", "the bird flew off"]))
    return [out(tf, ids), out(tf, keras.layers.Hashing(5)(words)), out(tf, vectorized),
            out(tf, keras.layers.CategoryEncoding(6, output_mode="multi_hot")(ids)),
            out(tf, keras.layers.CategoryEncoding(6, output_mode="count")(ids))]


def ids_model(keras, tf):
    inp = keras.Input(shape=(None,), ragged=True, dtype=tf.int64)
    emb = keras.layers.Embedding(8, 4)(inp)
    seq = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True))(emb)
    pooled = keras.layers.GlobalAveragePooling1D()(seq)
    last = keras.layers.GRU(2)(emb)
    out_ = keras.layers.Dense(1)(keras.layers.Concatenate()([pooled, last]))
    model = keras.Model(inp, out_)
    seed_weights(model, 3)
    return model


def functional_fit(tf, keras):
    """predict / fit (SGD, unshuffled batches of 2) / evaluate on a RaggedTensor of ids."""
    model = ids_model(keras, tf)
    x = tf.ragged.constant(IDS, dtype=tf.int64)
    y = np.array(Y, np.float32)
    before = model.predict(x, verbose=0)
    model.compile(keras.optimizers.SGD(0.1), "mse")
    history = model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    return {"before": out(tf, before), "loss": history.history["loss"],
            "after": out(tf, model.predict(x, batch_size=2, verbose=0)),
            "evaluate": model.evaluate(x, y, batch_size=2, verbose=0)}


def dataset_fit(tf, keras):
    """fit on a Dataset of ragged batches (ragged_batch keeps the static-shape labels dense)."""
    model = ids_model(keras, tf)
    x = tf.ragged.constant(IDS, dtype=tf.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, np.array(Y, np.float32))).ragged_batch(2)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    history = model.fit(ds, epochs=2, verbose=0)
    return {"loss": history.history["loss"], "after": out(tf, model.predict(ds, verbose=0))}


def string_model(tf, keras):
    inp = keras.Input(shape=(None,), dtype=tf.string, ragged=True)
    ids = keras.layers.StringLookup(vocabulary=VOCAB)(inp)
    emb = keras.layers.Embedding(len(VOCAB) + 1, 3)(ids)
    out_ = keras.layers.Dense(2)(keras.layers.GlobalMaxPooling1D()(emb))
    model = keras.Model(inp, out_)
    seed_weights(model, 4)
    return out(tf, model.predict(tf.ragged.constant(WORDS), verbose=0))


def ragged_output_model(tf, keras):
    inp = keras.Input(shape=(None,), ragged=True, dtype=tf.int32)
    emb = keras.layers.Embedding(8, 2)(inp)
    model = keras.Model(inp, keras.layers.Dense(2)(emb))
    seed_weights(model, 5)
    return out(tf, model(tf.ragged.constant(IDS)))


CASES = {"embedding": embedding, "softmax_rows": softmax_rows, "merges": merges,
         "lookups": lookups, "functional_fit": functional_fit, "dataset_fit": dataset_fit,
         "string_model": string_model, "ragged_output_model": ragged_output_model}
CASES.update({f"rnn_{name}": _layer_on(make, _seq) for name, make in RNN_LAYERS.items()})
CASES.update({f"layer_{name}": _layer_on(make, _seq) for name, make in LAYERS.items()})


TAGS = [[0, 2, 1, 1], [2], [1, 0]]


def ragged_targets_fit(tf, keras):
    """Sequence tagging: ragged labels against ragged per-step predictions (Keras's ragged
    losses: per-step losses over every step of the batch; metrics as well)."""
    inp = keras.Input(shape=(None,), ragged=True, dtype=tf.int64)
    seq = keras.layers.LSTM(4, return_sequences=True)(keras.layers.Embedding(8, 3)(inp))
    tags = keras.layers.Dense(3, activation="softmax")(seq)
    model = keras.Model(inp, tags)
    seed_weights(model, 6)
    model.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy"])
    x = tf.ragged.constant(IDS, dtype=tf.int64)
    y = tf.ragged.constant(TAGS, dtype=tf.int64)
    history = model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    return {"loss": history.history["loss"],
            "accuracy": history.history["sparse_categorical_accuracy"],
            "evaluate": model.evaluate(x, y, batch_size=2, verbose=0)}


def ragged_regression_losses(tf, keras):
    """Ragged y_true/y_pred straight into loss objects: [batch, (steps), 1] (per step) and
    [batch, (steps)] (per row)."""
    y3 = tf.ragged.constant([[[1.0], [2.0]], [[0.5]], [[-1.0], [0.0], [3.0]]], ragged_rank=1)
    p3 = tf.ragged.constant([[[1.5], [1.0]], [[0.0]], [[-1.0], [1.0], [2.0]]], ragged_rank=1)
    y2 = tf.ragged.constant([[1.0, 2.0], [0.5], [-1.0, 0.0, 3.0]])
    p2 = tf.ragged.constant([[1.5, 1.0], [0.0], [-1.0, 1.0, 2.0]])
    return [float(keras.losses.MeanSquaredError()(y3, p3)),
            float(keras.losses.MeanAbsoluteError()(y3, p3)),
            float(keras.losses.MeanSquaredError()(y2, p2)),
            float(keras.losses.Huber()(y2, p2))]


CASES.update(ragged_targets_fit=ragged_targets_fit,
             ragged_regression_losses=ragged_regression_losses)


def ragged_keras_tensor_ops(tf, keras):
    """TF functions, operators and RaggedTensor methods on a ragged keras.Input."""
    x = keras.Input(shape=(None,), ragged=True)
    outputs = [x * 2.0 + 1.0, tf.reduce_mean(x, axis=1), x.to_tensor(), x.row_lengths(),
               tf.nn.relu(x), tf.concat([x, x], axis=1), x.flat_values]
    model = keras.Model(x, outputs)
    return out(tf, model(tf.ragged.constant([[1.0, -2.0], [3.0], [-1.0, 0.0, 1.0]])))


CASES.update(ragged_keras_tensor_ops=ragged_keras_tensor_ops)


def multi_head_attention(tf, keras):
    """Ragged query/value as tf-keras takes them: padded (padding not masked), ragged out."""
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2)
    query = _seq(tf)
    value = tf.ragged.constant([[[1.0, 0.0], [0.5, 0.5]], [[0.2, -0.3], [1.0, 1.0], [0.0, 2.0]],
                                [[-1.0, 1.0]]], ragged_rank=1)
    layer(query, value)
    seed_weights(layer, 7)
    return [out(tf, layer(query, value)), out(tf, layer(query, query))]


CASES.update(multi_head_attention=multi_head_attention)


def sparse_input_model(tf, keras):
    """keras.Input(sparse=True) into Dense (sparse times kernel): call, predict in batches,
    fit on a SparseTensor (SGD, unshuffled) and the weights after."""
    x = keras.Input(shape=(5,), sparse=True)
    dense = keras.layers.Dense(2)
    model = keras.Model(x, dense(x))
    seed_weights(model, 8)
    st = tf.SparseTensor([[0, 1], [0, 4], [2, 0], [3, 3]], [1.0, 2.0, 3.0, -1.0], [4, 5])
    called = out(tf, model(st))
    model.compile(keras.optimizers.SGD(0.05), "mse")
    history = model.fit(st, np.ones((4, 2), np.float32), batch_size=2, epochs=2, shuffle=False,
                        verbose=0)
    return {"call": called, "predict": out(tf, model.predict(st, batch_size=3, verbose=0)),
            "loss": history.history["loss"], "weights": [out(tf, w)
                                                         for w in model.get_weights()]}


CASES.update(sparse_input_model=sparse_input_model)


def lookup_encodings(tf, keras):
    """StringLookup / IntegerLookup multi_hot, count and tf_idf of ragged rows."""
    words = tf.ragged.constant([["the", "cat", "the"], ["dog", "fish"], []])
    out_ = [keras.layers.StringLookup(vocabulary=VOCAB, output_mode=mode)(words)
            for mode in ("multi_hot", "count")]
    out_.append(keras.layers.StringLookup(vocabulary=VOCAB, output_mode="tf_idf",
                                          idf_weights=[0.5, 1.0, 2.0, 1.5])(words))
    out_.append(keras.layers.IntegerLookup(vocabulary=[5, 7], output_mode="count")(
        tf.ragged.constant([[5, 7, 7], [9]], dtype=tf.int64)))
    return [out(tf, o) for o in out_]


CASES.update(lookup_encodings=lookup_encodings)


def masking_and_pooling(tf, keras):
    """Masking of ragged steps, and the 1-D global poolings with keepdims."""
    x = tf.ragged.constant([[[1.0, 2.0], [0.0, 0.0], [5.0, 6.0]], [[7.0, 8.0]],
                            [[0.0, 0.0], [2.0, 1.0]]], ragged_rank=1)
    return [out(tf, keras.layers.Masking(0.0)(x)),
            out(tf, keras.layers.GlobalAveragePooling1D(keepdims=True)(x)),
            out(tf, keras.layers.GlobalMaxPooling1D(keepdims=True)(x))]


CASES.update(masking_and_pooling=masking_and_pooling)


def dense_attention(tf, keras):
    """Attention / AdditiveAttention on ragged query and value rows."""
    x = tf.ragged.constant([[[1.0, 2.0], [0.0, 0.0], [5.0, 6.0]], [[7.0, 8.0]],
                            [[0.0, 0.0], [2.0, 1.0]]], ragged_rank=1)
    v = tf.ragged.constant([[[0.5, 1.0]], [[1.0, -1.0], [2.0, 0.5]], [[0.1, 0.2], [0.3, 0.4]]],
                           ragged_rank=1)
    return [out(tf, keras.layers.Attention()([x, x])),
            out(tf, keras.layers.Attention()([x, v])),
            out(tf, keras.layers.AdditiveAttention(use_scale=False)([x, v]))]


CASES.update(dense_attention=dense_attention)
