"""Records tf-keras 2.21 TextVectorization results with ``ngrams`` for
tests/keras/test_text_ngrams.py.

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow), from the repository root:
    python tests/keras/reference/make_text_ngram_values.py
Writes tests/keras/reference/text_ngram_values.json: per case the adapted vocabulary and the
outputs on QUERIES. CASES is shared with the test.
"""

import json
import os

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "text_ngram_values.json")
CORPUS = ["The cat sat on the mat.", "the dog sat, on the cat!", "a cat", "dog dog dog",
          "The mat"]
QUERIES = ["the cat sat on the dog", "a mat mat", "", "zebra cat sat"]
CASES = {
    "int_2": {"ngrams": 2},
    "int_2_3_len": {"ngrams": (2, 3), "output_sequence_length": 6},
    "multi_hot_2": {"ngrams": 2, "output_mode": "multi_hot", "max_tokens": 9},
    "count_1_3": {"ngrams": (1, 3), "output_mode": "count"},
    "tf_idf_2": {"ngrams": 2, "output_mode": "tf_idf", "max_tokens": 10},
    "tf_idf_char": {"ngrams": 2, "output_mode": "tf_idf", "split": "character",
                    "max_tokens": 12},
}


def main() -> None:
    import tf_keras as keras

    out = {}
    for name, kwargs in CASES.items():
        layer = keras.layers.TextVectorization(**kwargs)
        layer.adapt(CORPUS)
        out[name] = {"vocabulary": [str(t) for t in layer.get_vocabulary()],
                     "output": np.asarray(layer(QUERIES)).tolist()}
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
