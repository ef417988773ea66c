"""Keras preprocessing layers: images, numbers, categories, lookups and text."""

from tapeflow.keras.layers.preprocessing.hashed_crossing import HashedCrossing
from tapeflow.keras.layers.preprocessing.image import (
    CenterCrop,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomWidth,
    Rescaling,
    Resizing,
    smart_resize,
)
from tapeflow.keras.layers.preprocessing.image_transform import (
    RandomRotation,
    RandomTranslation,
    RandomZoom,
)
from tapeflow.keras.layers.preprocessing.lookup import IntegerLookup, StringLookup
from tapeflow.keras.layers.preprocessing.numeric import (
    CategoryEncoding,
    Discretization,
    Hashing,
    Normalization,
    PreprocessingLayer,
)
from tapeflow.keras.layers.preprocessing.text import TextVectorization

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "HashedCrossing", "Hashing",
           "IntegerLookup", "Normalization", "PreprocessingLayer", "RandomBrightness",
           "RandomContrast", "RandomCrop", "RandomFlip", "RandomHeight", "RandomRotation",
           "RandomTranslation", "RandomWidth", "RandomZoom", "Rescaling", "Resizing",
           "StringLookup", "TextVectorization", "smart_resize"]
