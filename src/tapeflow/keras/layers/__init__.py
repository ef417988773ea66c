"""``tf.keras.layers``: one module per layer family, re-exported here."""

from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.input_layer import Input, InputLayer
from tapeflow.keras.engine.input_spec import InputSpec
from tapeflow.keras.layers import experimental
from tapeflow.keras.layers.activation import ELU, LeakyReLU, PReLU, ReLU, Softmax, ThresholdedReLU
from tapeflow.keras.layers.attention import AdditiveAttention, Attention
from tapeflow.keras.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from tapeflow.keras.layers.convolutional import (
    Conv1D,
    Conv1DTranspose,
    Conv2D,
    Conv2DTranspose,
    Convolution1D,
    Convolution1DTranspose,
    Convolution2D,
    Convolution2DTranspose,
)
from tapeflow.keras.layers.convolutional_3d import (
    AveragePooling3D,
    AvgPool3D,
    Conv3D,
    Conv3DTranspose,
    Convolution3D,
    Convolution3DTranspose,
    Cropping3D,
    GlobalAveragePooling3D,
    GlobalAvgPool3D,
    GlobalMaxPool3D,
    GlobalMaxPooling3D,
    MaxPool3D,
    MaxPooling3D,
    UpSampling3D,
    ZeroPadding3D,
)
from tapeflow.keras.layers.core import (
    Activation,
    Dense,
    Dropout,
    Flatten,
    Identity,
    Lambda,
    Reshape,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from tapeflow.keras.layers.dense_features import DenseFeatures
from tapeflow.keras.layers.einsum_dense import EinsumDense
from tapeflow.keras.layers.embedding import Embedding
from tapeflow.keras.layers.group_normalization import GroupNormalization, UnitNormalization
from tapeflow.keras.layers.masking import Masking
from tapeflow.keras.layers.merge import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from tapeflow.keras.layers.multi_head_attention import MultiHeadAttention
from tapeflow.keras.layers.noise import GaussianDropout, GaussianNoise
from tapeflow.keras.layers.normalization import BatchNormalization, LayerNormalization
from tapeflow.keras.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AvgPool1D,
    AvgPool2D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPool1D,
    MaxPool2D,
    MaxPooling1D,
    MaxPooling2D,
)
from tapeflow.keras.layers.preprocessing import (
    CategoryEncoding,
    CenterCrop,
    Discretization,
    HashedCrossing,
    Hashing,
    IntegerLookup,
    Normalization,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomRotation,
    RandomTranslation,
    RandomWidth,
    RandomZoom,
    Rescaling,
    Resizing,
    StringLookup,
    TextVectorization,
)
from tapeflow.keras.layers.recurrent import (
    GRU,
    LSTM,
    RNN,
    AbstractRNNCell,
    GRUCell,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
    StackedRNNCells,
)
from tapeflow.keras.layers.regularization import ActivityRegularization, AlphaDropout
from tapeflow.keras.layers.reshaping import (
    Cropping2D,
    Permute,
    RepeatVector,
    UpSampling2D,
    ZeroPadding2D,
)
from tapeflow.keras.layers.reshaping_1d import Cropping1D, UpSampling1D, ZeroPadding1D
from tapeflow.keras.layers.separable import (
    DepthwiseConv1D,
    DepthwiseConv2D,
    SeparableConv1D,
    SeparableConv2D,
    SeparableConvolution1D,
    SeparableConvolution2D,
)
from tapeflow.keras.layers.serialization import deserialize, serialize
from tapeflow.keras.layers.spectral_normalization import SpectralNormalization
from tapeflow.keras.layers.wrappers import Bidirectional, TimeDistributed, Wrapper
