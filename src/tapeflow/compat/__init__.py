"""``tf.compat``: the TF1 API (``compat.v1``) over tapeflow's graph IR."""

from tapeflow.compat import v1
