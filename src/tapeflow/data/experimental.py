"""`tf.data.experimental`: the names TF keeps there (AUTOTUNE, cardinality constants, readers)."""

from __future__ import annotations

from typing import Any

from tapeflow.data import service as service
from tapeflow.data.autotune import AUTOTUNE
from tapeflow.data.dataset import INFINITE as INFINITE_CARDINALITY
from tapeflow.data.dataset import UNKNOWN as UNKNOWN_CARDINALITY
from tapeflow.data.dataset import Dataset
from tapeflow.data.options import AutotuneOptions as AutotuneOptions
from tapeflow.data.options import OptimizationOptions as OptimizationOptions
from tapeflow.data.options import ThreadingOptions as ThreadingOptions
from tapeflow.data.readers import CsvDataset, make_csv_dataset
from tapeflow.data.save_load import snapshot
from tapeflow.data.transforms import SHARD_HINT


def save(dataset: Dataset, path: str, compression: str | None = None,
         shard_func: Any = None, checkpoint_args: Any = None) -> None:
    """`tf.data.experimental.save` (TF's older name of `Dataset.save`)."""
    dataset.save(path, compression, shard_func, checkpoint_args)


def load(path: str, element_spec: Any = None, compression: str | None = None,
         reader_func: Any = None) -> Dataset:
    """`tf.data.experimental.load` (TF's older name of `Dataset.load`)."""
    return Dataset.load(path, element_spec, compression, reader_func)


def cardinality(dataset: Dataset) -> Any:
    """`tf.data.experimental.cardinality(ds)`, same as `ds.cardinality()`."""
    return dataset.cardinality()


def sample_from_datasets(datasets: list, weights: Any = None, seed: int | None = None,
                         stop_on_empty_dataset: bool = False) -> Dataset:
    return Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def choose_from_datasets(datasets: list, choice_dataset: Dataset,
                         stop_on_empty_dataset: bool = True) -> Dataset:
    return Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AutotuneOptions",
           "OptimizationOptions", "ThreadingOptions", "CsvDataset", "make_csv_dataset",
           "cardinality", "sample_from_datasets", "choose_from_datasets", "save", "load",
           "service", "snapshot", "SHARD_HINT"]
