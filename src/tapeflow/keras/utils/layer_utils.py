"""``tf.keras.utils.warmstart_embedding_matrix``: an embedding matrix for a new vocabulary
that keeps the trained rows of the words it shares with the old one (fine-tuning after the
vocabulary changed), as tf-keras 2.21 builds it."""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf


def convert_vocab_to_list(vocab: Any) -> list:
    """A vocabulary as a list: from a list/tuple/array, a 1-D tensor (its NumPy values, so
    strings come back as bytes, as in tf-keras) or a text file with one token a line."""
    if tf.is_tensor(vocab):
        tokens = list(vocab.numpy())
    elif isinstance(vocab, (np.ndarray, tuple, list)):
        tokens = list(vocab)
    elif isinstance(vocab, str):
        if not tf.io.gfile.exists(vocab):
            raise ValueError(f"Vocabulary file {vocab} does not exist.")
        with tf.io.gfile.GFile(vocab, "r") as f:
            tokens = f.read().splitlines()
    else:
        raise ValueError("Vocabulary is expected to be either a NumPy array, list, 1D tensor "
                         f"or a vocabulary text file. Instead type {type(vocab)} was received.")
    if not tokens:
        raise ValueError("Vocabulary is expected to be either a NumPy array, list, 1D tensor "
                         "or a vocabulary text file with at least one token. Received 0 "
                         "instead.")
    return tokens


def warmstart_embedding_matrix(base_vocabulary: Any, new_vocabulary: Any, base_embeddings: Any,
                               new_embeddings_initializer: Any = "uniform") -> Any:
    """A [len(new_vocabulary), dim] matrix: rows of words also in `base_vocabulary` copied
    from `base_embeddings`, the others from `new_embeddings_initializer`."""
    from tapeflow.keras import initializers

    base = convert_vocab_to_list(base_vocabulary)
    new = convert_vocab_to_list(new_vocabulary)
    base_embeddings = tf.convert_to_tensor(base_embeddings)
    initializer = initializers.get(new_embeddings_initializer)
    matrix = initializer(shape=(len(new), base_embeddings.shape[1]),
                         dtype=base_embeddings.dtype)
    position = {token: i for i, token in enumerate(base)}
    pairs = [(position[token], i) for i, token in enumerate(new) if token in position]
    if not pairs:
        return matrix
    rows = tf.gather(base_embeddings, [b for b, _ in pairs])
    return tf.tensor_scatter_nd_update(matrix, [[n] for _, n in pairs], rows)
