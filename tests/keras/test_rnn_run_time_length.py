"""Recurrent layers traced with an unknown sequence length run one tf.while_loop: the same
outputs, states and gradients as the unrolled eager loop, and ``fit`` on padded batches of
different lengths."""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(12)
LAYERS = [tf.keras.layers.LSTM, tf.keras.layers.GRU, tf.keras.layers.SimpleRNN]


@pytest.mark.parametrize("layer_class", LAYERS)
@pytest.mark.parametrize("return_sequences, go_backwards", [(False, False), (True, True),
                                                             (True, False)])
def test_while_loop_matches_the_unrolled_loop(layer_class, return_sequences, go_backwards):
    tf.random.set_seed(2)
    layer = layer_class(4, return_sequences=return_sequences, return_state=True,
                        go_backwards=go_backwards, dtype="float64")
    x = tf.constant(rng.standard_normal((3, 5, 2)))

    def run(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            outs = layer(v)
            loss = sum(tf.reduce_sum(o * o) for o in outs)
        return outs, tape.gradient(loss, [v] + layer.trainable_variables)

    eager_outs, eager_grads = run(x)
    graph = tf.function(run, input_signature=[tf.TensorSpec((None, None, 2), tf.float64)])
    graph_outs, graph_grads = graph(x)
    for a, b in zip(list(graph_outs) + list(graph_grads), list(eager_outs) + list(eager_grads)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    assert "While" in str(graph.get_concrete_function().graph)
    seq = graph.get_concrete_function().outputs[0]
    assert seq.shape.as_list() == ([None, None, 4] if return_sequences else [None, 4])
    assert graph(tf.constant(rng.standard_normal((2, 8, 2))))[0][0].shape[0] == 2


def test_fit_on_padded_batches_of_varying_length():
    lengths = [3, 7, 4, 6, 5, 8, 2, 6]
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in lengths]
    targets = [np.array([s.sum()], np.float32) for s in seqs]
    ds = tf.data.Dataset.from_generator(
        lambda: zip(seqs, targets),
        output_signature=(tf.TensorSpec((None, 3)), tf.TensorSpec((1,)))).padded_batch(2)
    assert ds.element_spec[0].shape.as_list() == [None, None, 3]
    tf.random.set_seed(0)
    inputs = tf.keras.Input(shape=(None, 3))
    hidden = tf.keras.layers.LSTM(8, return_sequences=True)(inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(tf.keras.layers.GRU(8)(hidden)))
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    history = model.fit(ds, epochs=8, verbose=0).history["loss"]
    assert history[-1] < 0.8 * history[0]
    # reduce_retracing, as TF: the first batch's exact shape, then one trace with the
    # length relaxed to None (the while_loop) for all the other lengths
    assert model.make_train_function().experimental_get_tracing_count() == 2
