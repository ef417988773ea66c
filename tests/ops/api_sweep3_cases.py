"""Cases for the ops added in session 3 of issue 18 (CTC, sampled losses, candidate samplers'
expected counts, LinearOperators, ...), shared by the recorder (record_tf_api_sweep3.py, run
under TF 2.21) and test_api_sweep3.py. A case maps the `tf` module to a tensor, a list of
tensors or a SparseTensor."""

import numpy as np

_rng = np.random.RandomState(0)
CTC_LOGITS = _rng.randn(6, 3, 5).astype(np.float32)
CTC_LABELS = np.array([[1, 2, 2], [3, 0, 0], [4, 1, 4]])
CTC_LABEL_LENGTH = np.array([3, 1, 2])
CTC_LOGIT_LENGTH = np.array([6, 4, 5])
CTC_WEIGHTS = np.array([1.0, 2.0, 3.0], np.float32)


def ctc_grad(**kw):
    """(loss, d sum(loss * w) / d logits) of ctc_loss on the shared logits."""
    def case(tf):
        x = tf.constant(CTC_LOGITS)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.nn.ctc_loss(CTC_LABELS, x, CTC_LABEL_LENGTH, CTC_LOGIT_LENGTH, **kw)
            total = tf.reduce_sum(loss * tf.constant(CTC_WEIGHTS))
        return [loss, tape.gradient(total, x)]
    return case


def ctc_sparse(blank):
    def case(tf):
        labels = tf.sparse.from_dense(tf.constant([[1, 2, 2], [3, 0, 0], [1, 1, 0]]))
        return tf.nn.ctc_loss(labels, tf.constant(CTC_LOGITS), None, CTC_LOGIT_LENGTH,
                              blank_index=blank)
    return case


def ctc_batch_major(tf):
    logits = tf.constant(np.transpose(CTC_LOGITS, [1, 0, 2]))
    return tf.nn.ctc_loss(CTC_LABELS, logits, CTC_LABEL_LENGTH, CTC_LOGIT_LENGTH,
                          logits_time_major=False, blank_index=2)


def ctc_beam(tf):
    decoded, log_probs = tf.nn.ctc_beam_search_decoder(tf.constant(CTC_LOGITS), CTC_LOGIT_LENGTH,
                                                       beam_width=4, top_paths=3)
    return [tf.sparse.to_dense(d) for d in decoded] + [log_probs]


_srng = np.random.RandomState(1)
SW = _srng.randn(10, 4).astype(np.float32)
SB = _srng.randn(10).astype(np.float32)
SX = _srng.randn(3, 4).astype(np.float32)
SLABELS = np.array([[1, 2], [7, 3], [0, 9]])
SAMPLED = ([2, 5, 7, 8], [[0.3, 0.2], [0.1, 0.4], [0.5, 0.6]], [0.2, 0.3, 0.25, 0.1])


def sampled_loss(kind, remove_hits):
    """(loss, gradients w.r.t. weights, biases, inputs) with fixed sampled values."""
    def case(tf):
        fn = getattr(tf.nn, kind)
        w, b, x = tf.Variable(SW), tf.Variable(SB), tf.constant(SX)
        sv = (tf.constant(SAMPLED[0], tf.int64), tf.constant(SAMPLED[1]),
              tf.constant(SAMPLED[2]))
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = fn(w, b, SLABELS, x, 4, 10, num_true=2, sampled_values=sv,
                      remove_accidental_hits=remove_hits)
        return [loss] + [tf.convert_to_tensor(g) for g in tape.gradient(loss, [w, b, x])]
    return case


def sampler_counts(name, classes=((1, 2), (4, 3)), **kw):
    """Expected counts without `unique` (p * num_sampled, whatever was drawn)."""
    def case(tf):
        fn = getattr(tf.random, name)
        _, true_count, _ = fn(tf.constant(classes, tf.int64), 2, 4, False, seed=3, **kw)
        return true_count
    return case


CASES = {
    "ctc dense": ctc_grad(),
    "ctc dense blank -1": ctc_grad(blank_index=-1),
    "ctc dense blank 3": ctc_grad(blank_index=3),
    "ctc sparse blank 0": ctc_sparse(0),
    "ctc sparse blank 4": ctc_sparse(4),
    "ctc batch major": ctc_batch_major,
    "ctc beam search": ctc_beam,
    "ctc unique labels": lambda tf: list(tf.nn.ctc_unique_labels([[3, 4, 4, 3], [1, 1, 1, 0]])),
    "ctc sparse without blank": lambda tf: tf.nn.ctc_loss(
        tf.sparse.from_dense(tf.constant([[1]])), tf.constant(CTC_LOGITS[:, :1]), None, [6]),
    "sampled_softmax_loss": sampled_loss("sampled_softmax_loss", True),
    "sampled_softmax_loss with hits": sampled_loss("sampled_softmax_loss", False),
    "nce_loss": sampled_loss("nce_loss", False),
    "nce_loss without hits": sampled_loss("nce_loss", True),
    "compute_accidental_hits": lambda tf: list(tf.nn.compute_accidental_hits(
        tf.constant([[1, 2], [4, 3]], tf.int64), tf.constant([2, 7, 1, 4], tf.int64), 2)),
    "uniform counts": sampler_counts("uniform_candidate_sampler", range_max=10),
    "log_uniform counts": sampler_counts("log_uniform_candidate_sampler", range_max=10),
    "fixed_unigram counts": sampler_counts("fixed_unigram_candidate_sampler", range_max=6,
                                           unigrams=[1, 2, 3, 4], num_reserved_ids=2,
                                           distortion=0.5),
    "fixed_unigram shard counts": sampler_counts("fixed_unigram_candidate_sampler", range_max=3,
                                                 unigrams=[1, 2, 3, 4, 5], num_shards=2,
                                                 shard=0, classes=((1, 2), (0, 1))),
    "learned_unigram counts": sampler_counts("learned_unigram_candidate_sampler", range_max=10),
    "all_candidate_sampler": lambda tf: list(tf.random.all_candidate_sampler(
        tf.constant([[1, 2], [4, 3]], tf.int64), 2, 5, True)),
}
