"""tf.keras.preprocessing.text / .sequence / .image: Tokenizer, hashing, skipgrams,
TimeseriesGenerator, make_sampling_table, smart_resize. Expected values come from Python /
NumPy formulas written here, and a few were recorded from tf_keras 2.21 (marked)."""

import collections
import json
import math
import random

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.preprocessing import image, sequence, text

TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "Cat and dog: friends?",
         "the the the END"]


def _words(s):
    return [w for w in "".join(" " if c in text.DEFAULT_FILTERS else c
                               for c in s.lower()).split(" ") if w]


def test_text_to_word_sequence_and_public_paths():
    assert text.text_to_word_sequence("Hello, World!  Tabs\tand\nlines") == \
        ["hello", "world", "tabs", "and", "lines"]
    assert text.text_to_word_sequence("A-b c", filters="", lower=False) == ["A-b", "c"]
    assert text.text_to_word_sequence("a,b,,c", split=",", filters="") == ["a", "b", "c"]
    assert tf.keras.preprocessing.text.Tokenizer is text.Tokenizer
    assert tf.keras.preprocessing.sequence.skipgrams is sequence.skipgrams
    assert tf.keras.preprocessing.image.load_img is tf.keras.utils.load_img


def test_tokenizer_vocabulary_ranks_by_count_then_first_appearance():
    t = text.Tokenizer(num_words=6, oov_token="<unk>")
    t.fit_on_texts(TEXTS)
    counts = collections.Counter(w for s in TEXTS for w in _words(s))
    first = {}
    for w in (w for s in TEXTS for w in _words(s)):
        first.setdefault(w, len(first))
    ranked = sorted(counts, key=lambda w: (-counts[w], first[w]))
    assert t.word_index == {w: i for i, w in enumerate(["<unk>"] + ranked, start=1)}
    assert dict(t.word_counts) == dict(counts)
    assert t.word_docs["the"] == 3 and t.index_docs[t.word_index["the"]] == 3
    assert t.index_word[2] == "the" and t.document_count == 4
    # recorded from tf_keras 2.21: words ranked >= num_words and unknown words become <unk>
    assert t.texts_to_sequences(TEXTS + ["a brand new cat"]) == \
        [[2, 3, 5, 1, 2, 1], [2, 4, 1, 1, 1], [3, 1, 4, 1], [2, 2, 2, 1], [1, 1, 1, 3]]
    assert t.sequences_to_texts([[2, 3, 9, 1, 5]]) == ["the cat <unk> <unk> sat"]
    plain = text.Tokenizer(num_words=4)
    plain.fit_on_texts(TEXTS)
    assert plain.texts_to_sequences(["the dog and a cat"]) == [[1, 3, 2]]  # others dropped
    assert list(plain.texts_to_sequences_generator(["cat"])) == [[2]]


@pytest.mark.parametrize("mode", ["binary", "count", "freq", "tfidf"])
def test_sequences_to_matrix_modes_match_formulas(mode):
    t = text.Tokenizer(num_words=6, oov_token="<unk>")
    t.fit_on_texts(TEXTS)
    seqs = t.texts_to_sequences(TEXTS[:2]) + [[]]
    want = np.zeros((3, 6))
    for row, seq in enumerate(seqs):
        for j, c in collections.Counter(seq).items():
            idf = math.log(1 + 4 / (1 + t.index_docs.get(j, 0)))
            want[row, j] = {"binary": 1, "count": c, "freq": c / len(seq),
                            "tfidf": (1 + math.log(c)) * idf}[mode]
    got = t.sequences_to_matrix(seqs, mode=mode)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.dtype == np.float64
    np.testing.assert_allclose(t.texts_to_matrix(TEXTS[:2], mode=mode), want[:2], rtol=1e-12)
    if mode == "tfidf":  # recorded from tf_keras 2.21
        np.testing.assert_allclose(got[0], [0, 2.725015, 1.1736, 0.847298, 0, 1.098612],
                                   atol=1e-6)


def test_tokenizer_char_level_lists_and_errors():
    c = text.Tokenizer(char_level=True, lower=False, filters="")
    c.fit_on_texts(["abca", "bcd"])
    assert c.word_index == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert c.texts_to_sequences(["dab"]) == [[4, 1, 2]]
    lists = text.Tokenizer()
    lists.fit_on_texts([["New", "York"], ["new"]])
    assert lists.word_index == {"new": 1, "york": 2}
    with pytest.raises(ValueError, match="Specify a dimension"):
        text.Tokenizer().sequences_to_matrix([[1]])
    with pytest.raises(ValueError, match="Fit the Tokenizer on some data before using tfidf"):
        text.Tokenizer(num_words=3).sequences_to_matrix([[1]], mode="tfidf")
    with pytest.raises(ValueError, match="Unknown vectorization mode"):
        lists.sequences_to_matrix([[1]], mode="bm25")
    with pytest.raises(TypeError, match="Unrecognized keyword arguments"):
        text.Tokenizer(words=3)
    fitted = text.Tokenizer()
    fitted.fit_on_sequences([[1, 2, 2], [2]])
    assert fitted.document_count == 2 and dict(fitted.index_docs) == {1: 1, 2: 2}
    analyzed = text.Tokenizer(analyzer=lambda s: s.split("|"))
    analyzed.fit_on_texts(["a|b|a"])
    assert analyzed.word_index == {"a": 1, "b": 2}


def test_tokenizer_json_round_trip_and_tf_keras_layout():
    t = text.Tokenizer(num_words=5, oov_token="?")
    t.fit_on_texts(TEXTS)
    saved = json.loads(t.to_json())
    assert saved["class_name"] == "Tokenizer"
    assert set(saved["config"]) == {"num_words", "filters", "lower", "split", "char_level",
                                    "oov_token", "document_count", "word_counts", "word_docs",
                                    "index_docs", "index_word", "word_index"}
    assert json.loads(saved["config"]["index_word"])["1"] == "?"  # dicts as JSON strings
    again = text.tokenizer_from_json(t.to_json())
    for attr in ("word_index", "index_word", "word_counts", "num_words", "oov_token",
                 "document_count"):
        assert getattr(again, attr) == getattr(t, attr), attr
    assert dict(again.index_docs) == dict(t.index_docs)
    np.testing.assert_array_equal(again.texts_to_matrix(TEXTS, "tfidf"),
                                  t.texts_to_matrix(TEXTS, "tfidf"))
    again.fit_on_texts(["brand new words"])  # a restored tokenizer keeps fitting
    assert "brand" in again.word_index


def test_hashing_trick_and_one_hot():
    import hashlib

    words = ["the", "quick", "brown", "fox"]
    want = [int(hashlib.md5(w.encode()).hexdigest(), 16) % 9 + 1 for w in words]
    assert text.hashing_trick("The quick, brown fox", 10, hash_function="md5") == want
    assert want == [6, 4, 1, 2]  # recorded from tf_keras 2.21
    assert text.hashing_trick("a b", 5, hash_function=len) == [2, 2]
    got = text.one_hot("b a b", 7)
    assert got[0] == got[2] and all(1 <= i <= 6 for i in got)
    assert text.one_hot("x-y", 7, analyzer=lambda s: s.split("-")) == \
        [hash("x") % 6 + 1, hash("y") % 6 + 1]


def _skipgrams_reference(seq, vocab, window, negative, categorical, seed):
    """The algorithm written out: positive couples in order, then negatives from Python's
    global random, then one seeded permutation applied to both lists."""
    couples = [[w, seq[j]] for i, w in enumerate(seq) if w
               for j in range(max(0, i - window), min(len(seq), i + window + 1))
               if j != i and seq[j]]
    labels = [[0, 1] if categorical else 1] * len(couples)
    count = int(len(labels) * negative)
    words = [c[0] for c in couples]
    random.shuffle(words)
    couples += [[words[i % len(words)], random.randint(1, vocab - 1)] for i in range(count)]
    labels += [[1, 0] if categorical else 0] * count
    order = list(range(len(couples)))
    random.seed(seed)
    random.shuffle(order)
    return [couples[i] for i in order], [labels[i] for i in order]


@pytest.mark.parametrize("categorical", [False, True])
def test_skipgrams_seeded(categorical):
    seq = [1, 2, 3, 0, 4, 2]
    random.seed(5)
    got = sequence.skipgrams(seq, 6, window_size=2, negative_samples=0.5,
                             categorical=categorical, seed=11)
    random.seed(5)
    want = _skipgrams_reference(seq, 6, 2, 0.5, categorical, 11)
    assert got == (want[0], want[1])
    random.seed(0)  # recorded from tf_keras 2.21
    assert sequence.skipgrams([1, 2, 3, 0, 4], vocabulary_size=6, window_size=1, seed=7) == (
        [[2, 4], [3, 4], [2, 3], [2, 3], [1, 2], [3, 2], [2, 1], [1, 5]],
        [0, 0, 1, 0, 1, 1, 1, 0])
    unshuffled = sequence.skipgrams([1, 2], 3, negative_samples=0, shuffle=False)
    assert unshuffled == ([[1, 2], [2, 1]], [1, 1])
    keep_none = sequence.skipgrams([1, 2, 3], 4, sampling_table=np.zeros(4), shuffle=False,
                                   negative_samples=0)
    assert keep_none == ([], [])


def test_make_sampling_table_formula():
    size, factor = 6, 0.01
    rank = np.maximum(np.arange(size), 1).astype(np.float64)
    want = np.minimum(1.0, np.sqrt(factor * (rank * (np.log(rank) + 0.577) + 0.5
                                             - 1 / (12 * rank))))
    np.testing.assert_allclose(sequence.make_sampling_table(size, factor), want, rtol=1e-12)
    np.testing.assert_allclose(sequence.make_sampling_table(3, 0.01)[:2], [0.09968283] * 2,
                               rtol=1e-7)  # recorded from tf_keras 2.21


def test_timeseries_generator_windows_and_config():
    data, targets = np.arange(20).reshape(10, 2), np.arange(10)
    gen = sequence.TimeseriesGenerator(data, targets, length=4, sampling_rate=2, stride=2,
                                       batch_size=2, start_index=1, reverse=True)
    rows = list(range(5, 10, 2))  # start_index + length .. end_index, every stride
    assert len(gen) == 2 and isinstance(gen, tf.keras.utils.Sequence)
    for b in range(2):
        x, y = gen[b]
        batch_rows = rows[2 * b:2 * b + 2]
        np.testing.assert_array_equal(x, [data[r - 4:r:2][::-1] for r in batch_rows])
        np.testing.assert_array_equal(y, targets[batch_rows])
    config = gen.get_config()
    assert config["start_index"] == 5 and config["end_index"] == 9
    assert json.loads(config["data"]) == data.tolist()
    assert json.loads(gen.to_json())["class_name"] == "TimeseriesGenerator"
    np.random.seed(3)
    shuffled = sequence.TimeseriesGenerator(data, targets, length=2, shuffle=True,
                                            batch_size=4)
    x, y = shuffled[0]
    np.random.seed(3)
    want_rows = np.random.randint(2, 10, size=4)
    np.testing.assert_array_equal(y, want_rows)
    np.testing.assert_array_equal(x, [data[r - 2:r] for r in want_rows])
    with pytest.raises(ValueError, match="Data and targets have to be of same length"):
        sequence.TimeseriesGenerator(data, targets[:3], length=2)
    with pytest.raises(ValueError, match=r"`start_index\+length=12 > end_index=9`"):
        sequence.TimeseriesGenerator(data, targets, length=12)


def test_timeseries_generator_feeds_fit():
    data = np.random.default_rng(0).standard_normal((40, 3)).astype(np.float32)
    gen = sequence.TimeseriesGenerator(data, data[:, :1], length=5, batch_size=8)
    model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(5, 3)),
                                 tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(gen, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1


def test_smart_resize_crops_to_aspect_then_resizes():
    img = np.arange(6 * 8 * 1, dtype=np.float32).reshape(6, 8, 1)
    out = image.smart_resize(img, (3, 3))
    assert isinstance(out, np.ndarray) and out.shape == (3, 3, 1)
    # the central 6x6 window, resized 2:1 with half-pixel centres = 2x2 block means
    window = img[:, 1:7, 0]
    want = window.reshape(3, 2, 3, 2).mean(axis=(1, 3))
    np.testing.assert_allclose(out[..., 0], want, rtol=1e-6)
    batch = image.smart_resize(tf.constant(img[None]), (3, 3))
    assert not isinstance(batch, np.ndarray) and batch.shape == (1, 3, 3, 1)
    with pytest.raises(ValueError, match="Expected `size` to be a tuple of 2 integers"):
        image.smart_resize(img, (3,))
    with pytest.raises(ValueError, match="incorrect rank"):
        image.smart_resize(img[..., 0], (3, 3))
