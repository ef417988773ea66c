"""``tf.keras.layers.experimental``: where TF 2.4-2.8 first published EinsumDense and the
preprocessing layers (``experimental.preprocessing.Rescaling`` ...); RandomFourierFeatures
lives only here, as in tf-keras."""

from tapeflow.keras.layers import preprocessing
from tapeflow.keras.layers.einsum_dense import EinsumDense
from tapeflow.keras.layers.kernelized import RandomFourierFeatures
from tapeflow.keras.layers.sync_batch_norm import SyncBatchNormalization

__all__ = ["EinsumDense", "RandomFourierFeatures", "SyncBatchNormalization", "preprocessing"]
