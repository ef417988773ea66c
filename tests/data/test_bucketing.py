"""Dataset.bucket_by_sequence_length: batches recorded from TensorFlow 2.21 for the same input."""

import tapeflow as tf

LENGTHS = [1, 5, 2, 7, 3, 9, 4, 1]


def _ds():
    def gen():
        for n in LENGTHS:
            yield list(range(1, n + 1))
    return tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.int32))


def test_buckets_match_tensorflow():
    out = _ds().bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 6], [2, 2, 2])
    assert [b.numpy().tolist() for b in out] == [
        [[1, 0], [1, 2]], [[1, 2, 3, 4, 5], [1, 2, 3, 0, 0]],
        [[1, 2, 3, 4, 5, 6, 7, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8, 9]], [[1]], [[1, 2, 3, 4]]]


def test_pad_to_boundary_and_drop_remainder_match_tensorflow():
    out = _ds().bucket_by_sequence_length(lambda x: tf.shape(x)[0], [3, 10], [2, 3, 2],
                                          pad_to_bucket_boundary=True, drop_remainder=True)
    assert [b.numpy().tolist() for b in out] == [
        [[1, 0], [1, 2]],
        [[1, 2, 3, 4, 5, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 0, 0], [1, 2, 3, 0, 0, 0, 0, 0, 0]]]
    assert out.element_spec.shape.as_list() == [None, None]
