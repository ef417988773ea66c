"""TextVectorization with ``ngrams``: vocabularies and int / multi_hot / count / tf_idf outputs
equal tf-keras 2.21's (reference/make_text_ngram_values.py); traceable; config round trip."""

import importlib.util
import json
import os

import numpy as np
import pytest

import tapeflow as tf

_spec = importlib.util.spec_from_file_location(
    "make_text_ngram_values", os.path.join(os.path.dirname(__file__), "reference",
                                           "make_text_ngram_values.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
with open(ref.PATH) as f:
    REF = json.load(f)


@pytest.mark.parametrize("name", sorted(ref.CASES))
def test_matches_tf_keras(name):
    layer = tf.keras.layers.TextVectorization(**ref.CASES[name])
    layer.adapt(ref.CORPUS)
    assert [str(t) for t in layer.get_vocabulary()] == REF[name]["vocabulary"]
    out = layer(ref.QUERIES)
    np.testing.assert_allclose(out.numpy(), np.array(REF[name]["output"]), rtol=1e-5,
                               atol=1e-6)
    traced = tf.function(lambda x: layer(x))(tf.constant(ref.QUERIES))
    np.testing.assert_allclose(traced.numpy(), out.numpy(), rtol=1e-6)
    clone = tf.keras.layers.TextVectorization.from_config(layer.get_config())
    np.testing.assert_allclose(clone(ref.QUERIES).numpy(), out.numpy(), rtol=1e-6)


def test_ngram_arguments_are_checked():
    with pytest.raises(ValueError, match="ngrams"):
        tf.keras.layers.TextVectorization(ngrams=2, split=None)
    with pytest.raises(ValueError, match="ngrams"):
        tf.keras.layers.TextVectorization(ngrams=0)
