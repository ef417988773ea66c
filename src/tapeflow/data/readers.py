"""File readers as datasets: TFRecord, text lines, fixed-length records and CSV."""

from __future__ import annotations

import csv
import io as _pyio
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.data import chunks, structure
from tapeflow.data.autotune import AUTOTUNE
from tapeflow.data.dataset import Dataset
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.io import csv_scan, files, tfrecord


def _filenames(filenames: Any) -> Dataset:
    if isinstance(filenames, Dataset):
        return filenames
    names = structure.to_array(filenames)
    if names.dtype != object:
        raise TypeError(f"filenames must be strings, got dtype {names.dtype}\n"
                        f"{errors.user_line()}")
    return Dataset.from_tensor_slices(np.atleast_1d(names).ravel())


def _decode(name: Any) -> str:
    """A file name from a tensor, a 0-d array (internal element) or a Python string."""
    v = name.numpy() if hasattr(name, "numpy") else name
    if isinstance(v, np.ndarray):
        v = v[()]
    return v.decode() if isinstance(v, bytes) else str(v)


class _FileReaderDataset(Dataset):
    """Reads each file with `_records(path)`; several files at once if `num_parallel_reads`."""

    def __init__(self, filenames: Any, num_parallel_reads: int | None):
        files_ds = _filenames(filenames)
        reader = self._file_dataset
        self._sequential = False
        if num_parallel_reads is None or int(num_parallel_reads) == 1:
            self._impl, self._sequential = files_ds.flat_map(reader), True
        else:
            n = int(num_parallel_reads)
            cycle = None if n == AUTOTUNE else n
            self._impl = files_ds.interleave(reader, cycle_length=cycle, num_parallel_calls=n,
                                             deterministic=True)
        self._inputs = (self._impl,)

    def _file_dataset(self, name: Any) -> Dataset:
        return _RecordsOfFile(self, _decode(name))

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        return self._impl._iterate(ctx)

    def _compute_spec(self) -> Any:
        return TensorSpec([], _dtypes.string)

    def _records(self, path: str) -> Iterator[bytes]:
        raise NotImplementedError(f"{type(self).__name__} must implement _records(path)")

    def _record_blocks(self, path: str) -> Iterator[list[bytes]] | None:
        """Lists of consecutive records of one file, for readers that find many at once."""
        return None

    def _chunks(self, ctx: Any) -> Iterator[Any] | None:
        """The records as 1-D string arrays, one per block the reader found: files read one
        after another only (parallel reads interleave files record by record)."""
        if not self._sequential or type(self)._record_blocks is _FileReaderDataset._record_blocks:
            return None
        return self._record_chunks(ctx)

    def _record_chunks(self, ctx: Any) -> Iterator[Any]:
        names = self._impl._inputs[0]._iterate(ctx)  # the file list (sharding may replace it)
        try:
            for name in names:
                for block in self._record_blocks(_decode(name)):
                    if block:
                        chunk = np.empty(len(block), dtype=object)
                        chunk[:] = block
                        yield chunk
        finally:
            names.close()


class _RecordsOfFile(Dataset):
    """The records of one file as scalar string elements."""

    def __init__(self, reader: _FileReaderDataset, path: str):
        self._reader, self._path = reader, path

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        for record in self._reader._records(self._path):
            a = np.empty((), dtype=object)
            a[()] = record
            yield a

    def _compute_spec(self) -> Any:
        return TensorSpec([], _dtypes.string)


class TFRecordDataset(_FileReaderDataset):
    """The records of TFRecord files, CRC-checked; corruption raises DataLossError."""

    def __init__(self, filenames: Any, compression_type: str | None = None,
                 buffer_size: int | None = None, num_parallel_reads: int | None = None,
                 name: str | None = None):
        self._compression = compression_type or ""
        super().__init__(filenames, num_parallel_reads)

    def _records(self, path: str) -> Iterator[bytes]:
        return tfrecord.tf_record_iterator(path, self._compression)

    def _record_blocks(self, path: str) -> Iterator[list[bytes]]:
        return tfrecord.record_blocks(path, self._compression)


class TextLineDataset(_FileReaderDataset):
    """The lines of text files, without their line endings."""

    def __init__(self, filenames: Any, compression_type: str | None = None,
                 buffer_size: int | None = None, num_parallel_reads: int | None = None,
                 name: str | None = None):
        self._compression = compression_type or ""
        super().__init__(filenames, num_parallel_reads)

    def _records(self, path: str) -> Iterator[bytes]:
        with files.open_compressed(path, self._compression) as f:
            for line in f:
                yield line.rstrip(b"\r\n")


class FixedLengthRecordDataset(_FileReaderDataset):
    """Records of `record_bytes` bytes, after `header_bytes` and before `footer_bytes`."""

    def __init__(self, filenames: Any, record_bytes: int, header_bytes: int | None = None,
                 footer_bytes: int | None = None, buffer_size: int | None = None,
                 compression_type: str | None = None, num_parallel_reads: int | None = None,
                 name: str | None = None):
        self._record, self._header = int(record_bytes), int(header_bytes or 0)
        self._footer, self._compression = int(footer_bytes or 0), compression_type or ""
        super().__init__(filenames, num_parallel_reads)

    def _records(self, path: str) -> Iterator[bytes]:
        with files.open_compressed(path, self._compression) as f:
            data = f.read()
        body = data[self._header:len(data) - self._footer]
        if len(body) % self._record:
            raise errors.DataLossError(
                f"{path}: {len(body)} bytes between header and footer is not a multiple of "
                f"record_bytes={self._record}")
        for i in range(0, len(body), self._record):
            yield body[i:i + self._record]


def _csv_default(d: Any) -> tuple[_dtypes.DType, Any]:
    """(dtype, default value or None when required) from a record_defaults entry."""
    if isinstance(d, _dtypes.DType) or isinstance(d, type):
        return _dtypes.as_dtype(d), None
    arr = structure.to_array(d)
    if arr.size == 0:
        return _dtypes.from_numpy(arr.dtype), None
    return _dtypes.from_numpy(arr.dtype), arr.reshape(-1)[0]


def _parse_field(text: str, dtype: _dtypes.DType, default: Any, na_value: str,
                 where: str) -> np.ndarray:
    if text == "" or text == na_value:
        if default is None:
            raise errors.InvalidArgumentError(f"{where}: field is empty and has no default")
        return np.asarray(default, dtype=dtype._np)
    try:
        if dtype is _dtypes.string:
            a = np.empty((), dtype=object)
            a[()] = text.encode()
            return a
        if dtype.is_integer:
            return np.asarray(int(text), dtype=dtype._np)
        return np.asarray(float(text), dtype=dtype._np)
    except (ValueError, OverflowError):
        raise errors.InvalidArgumentError(
            f"{where}: cannot parse {text!r} as {dtype.name}") from None


def _column(values: tuple, dtype: _dtypes.DType, default: Any, na_value: str) -> Any:
    """The fields of one column as an array of `dtype`; None when one does not parse."""
    if dtype is _dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = [v.encode() for v in values]
        missing = (out == b"") | (out == na_value.encode())
        if missing.any():
            if default is None:
                return None
            out[missing] = structure.to_array(default).reshape(()).item()
        return out
    text = np.asarray(values, dtype=str)
    missing = (text == "") | (text == na_value)
    if missing.any():
        if default is None:
            return None
        text = text.copy()
        text[missing] = "0"
    try:
        parsed = text.astype(np.float64 if dtype.is_floating else np.int64)
    except (ValueError, OverflowError):
        return None
    out = parsed.astype(dtype._np)
    if dtype.is_integer and (out != parsed).any():
        return None
    if missing.any():
        out[missing] = np.asarray(default, dtype=dtype._np)
    return out


_CSV_READ = 1 << 20


class _CsvBlock:
    """Output arrays of one compiled CSV parse call: `rows` rows of `width` columns."""

    def __init__(self, rows: int, width: int):
        self.floats = np.zeros((rows, width))
        self.ints = np.zeros((rows, width), dtype=np.int64)
        self.spans = np.zeros((rows, width, 2), dtype=np.int64)
        self.flags = np.zeros((rows, width), dtype=np.int8)

    def arrays(self) -> tuple:
        return self.floats, self.ints, self.spans, self.flags


class CsvDataset(Dataset):
    """`tf.data.experimental.CsvDataset`: each CSV row as a tuple of scalars."""

    def __init__(self, filenames: Any, record_defaults: list, compression_type: str | None = None,
                 buffer_size: int | None = None, header: bool = False, field_delim: str = ",",
                 use_quote_delim: bool = True, na_value: str = "", select_cols: Any = None,
                 exclude_cols: Any = None, name: str | None = None):
        self._files = _filenames(filenames)
        self._inputs = (self._files,)
        self._defaults = [_csv_default(d) for d in record_defaults]
        self._compression = compression_type or ""
        self._header, self._delim = header, field_delim
        self._quote, self._na = use_quote_delim, na_value
        self._select = None if select_cols is None else [int(c) for c in select_cols]

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        return chunks.elements(self._chunks(ctx))

    def _chunks(self, ctx: Any) -> Iterator[tuple]:
        """Blocks of rows parsed column by column (csv's C reader, NumPy's number parsing)."""
        names = self._files._iterate(ctx)
        try:
            for name in names:
                yield from self._blocks(_decode(name))
        finally:
            names.close()

    def _blocks(self, path: str) -> Iterator[tuple]:
        if csv_scan.AVAILABLE and len(self._delim.encode()) == 1:
            return self._compiled_blocks(path)
        return self._python_blocks(path)

    def _fail(self, path: str, what: str) -> errors.InvalidArgumentError:
        """The row-by-row parser's error for this file (it names row and column)."""
        for _ in self._rows(path):   # raises, naming the row and column, on the bad field
            continue
        return errors.InvalidArgumentError(f"{path}: {what}")

    def _compiled_blocks(self, path: str) -> Iterator[tuple]:
        """Blocks of rows parsed by the compiled CSV scanner (io/csv_scan.py)."""
        select = self._select or list(range(len(self._defaults)))
        width = max(select) + 1
        kinds = np.zeros(width, dtype=np.int8)
        for c, (dtype, _) in zip(select, self._defaults):
            kinds[c] = (csv_scan.STRING if dtype is _dtypes.string else
                        csv_scan.INT if dtype.is_integer else csv_scan.FLOAT)
        exact = -1 if self._select is not None else width
        out = _CsvBlock(chunks.CHUNK, width)
        args = (ord(self._delim), self._quote, kinds, exact, width,
                np.frombuffer(self._na.encode(), np.uint8), csv_scan.pow10())
        with files.open_compressed(path, self._compression) as f:
            data, eof = f.read(_CSV_READ), False
            if self._header:
                head = _CsvBlock(1, 0)
                while True:
                    _, used, status, _ = csv_scan.parse(
                        np.frombuffer(data, np.uint8), eof, args[0], args[1], kinds[:0], -1, 0,
                        args[5], args[6], *head.arrays())
                    if status != csv_scan.INCOMPLETE or eof:
                        break
                    more = f.read(_CSV_READ)
                    data, eof = data + more, not more
                data = data[used:]
            while True:
                n, used, status, _ = csv_scan.parse(np.frombuffer(data, np.uint8), eof, *args,
                                                    *out.arrays())
                if status == csv_scan.BAD_FIELD_COUNT:
                    raise self._fail(path, "a row has the wrong number of fields")
                if status == csv_scan.BAD_QUOTE:
                    raise errors.InvalidArgumentError(
                        f"{path}: a quoted field is followed by more text (write a quote "
                        f"inside a quoted field as two quotes)")
                if n:
                    yield self._block_columns(path, data, n, select, out)
                data = data[used:]
                if n == chunks.CHUNK:
                    continue
                if eof:
                    if data.strip(b"\r\n"):
                        raise errors.InvalidArgumentError(
                            f"{path}: the last quoted field has no closing quote")
                    return
                more = f.read(max(_CSV_READ, len(data)))
                data, eof = data + more, not more

    def _block_columns(self, path: str, data: bytes, n: int, select: list,
                       out: _CsvBlock) -> tuple:
        columns = []
        for c, (dtype, default) in zip(select, self._defaults):
            flags, spans = out.flags[:n, c], out.spans[:n, c]
            if dtype is _dtypes.string:
                column = np.empty(n, dtype=object)
                column[:] = [data[s:e] for s, e in spans.tolist()]
                for i in np.flatnonzero(flags == csv_scan.QUOTED).tolist():
                    column[i] = column[i].replace(b'""', b'"')
            else:
                source = out.floats if dtype.is_floating else out.ints
                column = source[:n, c].astype(dtype._np)
                convert = float if dtype.is_floating else int
                for i in np.flatnonzero(flags == csv_scan.PYTHON).tolist():
                    text = data[spans[i, 0]:spans[i, 1]].decode().replace('""', '"')
                    try:
                        column[i] = convert(text)
                    except (ValueError, OverflowError):
                        raise self._fail(path, f"cannot parse {text!r}") from None
                if dtype.is_integer and (column != source[:n, c]).any() and dtype.size < 8:
                    raise self._fail(path, f"a value is out of range for {dtype.name}")
            missing = flags == csv_scan.MISSING
            if missing.any():
                if default is None:
                    raise self._fail(path, "a field is empty and has no default")
                column[missing] = structure.to_array(default).reshape(()).item()
            columns.append(column)
        return tuple(columns)

    def _python_blocks(self, path: str) -> Iterator[tuple]:
        with files.open_compressed(path, self._compression) as f:
            text = _pyio.TextIOWrapper(f, encoding="utf-8", newline="")
            reader = csv.reader(text, delimiter=self._delim,
                                quoting=csv.QUOTE_MINIMAL if self._quote else csv.QUOTE_NONE)
            if self._header:
                next(reader, None)
            while True:
                block = [row for _, row in zip(range(chunks.CHUNK), reader)]
                if not block:
                    return
                columns = self._columns([row for row in block if row])
                if columns is None:   # some field is bad: the row-by-row parser names it
                    raise self._fail(path, "cannot parse a CSV field")
                if len(columns[0]):
                    yield columns

    def _columns(self, rows: list) -> tuple | None:
        """One array per column of `rows`, or None if a row or field does not parse."""
        wanted = len(self._defaults) if self._select is None else max(self._select) + 1
        if any(len(r) != wanted for r in rows) and (
                self._select is None or any(len(r) < wanted for r in rows)):
            return None
        transposed = list(zip(*rows)) if rows else [()] * wanted
        picked = transposed if self._select is None else [transposed[c] for c in self._select]
        out = []
        for values, (dtype, default) in zip(picked, self._defaults):
            column = _column(values, dtype, default, self._na)
            if column is None:
                return None
            out.append(column)
        return tuple(out)

    def _rows(self, path: str) -> Iterator[tuple]:
        with files.open_compressed(path, self._compression) as f:
            text = _pyio.TextIOWrapper(f, encoding="utf-8", newline="")
            reader = csv.reader(text, delimiter=self._delim,
                                quoting=csv.QUOTE_MINIMAL if self._quote else csv.QUOTE_NONE)
            for line_no, row in enumerate(reader, 1):
                if self._header and line_no == 1:
                    continue
                if not row:
                    continue
                if self._select is not None:
                    row = [row[c] for c in self._select]
                if len(row) != len(self._defaults):
                    raise errors.InvalidArgumentError(
                        f"{path}:{line_no}: expected {len(self._defaults)} fields, got {len(row)}")
                yield tuple(_parse_field(v, dt, d, self._na, f"{path}:{line_no} column {i}")
                            for i, (v, (dt, d)) in enumerate(zip(row, self._defaults)))

    def _compute_spec(self) -> Any:
        return tuple(TensorSpec([], dt) for dt, _ in self._defaults)


def _infer_dtype(values: list) -> _dtypes.DType:
    kinds = _dtypes.int32
    for v in values:
        if v == "":
            continue
        try:
            int(v)
            continue
        except ValueError:
            pass  # not an int: try float next
        try:
            float(v)
            kinds = _dtypes.float32
        except ValueError:
            return _dtypes.string
    return kinds


def make_csv_dataset(file_pattern: Any, batch_size: int, column_names: list | None = None,
                     column_defaults: list | None = None, label_name: str | None = None,
                     select_columns: list | None = None, field_delim: str = ",",
                     use_quote_delim: bool = True, na_value: str = "", header: bool = True,
                     num_epochs: int | None = None, shuffle: bool = True,
                     shuffle_buffer_size: int = 10000, shuffle_seed: int | None = None,
                     prefetch_buffer_size: int | None = None,
                     num_parallel_reads: int | None = None, sloppy: bool = False,
                     num_rows_for_inference: int = 100, compression_type: str | None = None,
                     ignore_errors: bool = False) -> Dataset:
    """Batches of `(features_dict, label)` (or `features_dict`) read from CSV files."""
    paths = [_decode(p) for p in Dataset.list_files(file_pattern, shuffle=False)]
    with files.open_compressed(paths[0], compression_type or "") as f:
        text = _pyio.TextIOWrapper(f, encoding="utf-8", newline="")
        rows = [r for _, r in zip(range(num_rows_for_inference + 1),
                                  csv.reader(text, delimiter=field_delim))]
    if column_names is None:
        if not header:
            raise ValueError("make_csv_dataset(): column_names are required when header=False")
        column_names = rows[0]
    data_rows = rows[1:] if header else rows
    names = list(column_names)
    selected = list(range(len(names))) if select_columns is None else [
        c if isinstance(c, int) else names.index(c) for c in select_columns]
    if column_defaults is None:  # inferred columns default to zero / empty, as in TF
        column_defaults = []
        for i in selected:
            dtype = _infer_dtype([r[i] for r in data_rows if i < len(r)])
            column_defaults.append([b"" if dtype is _dtypes.string else np.zeros((), dtype._np)])
    defaults = []
    for d in column_defaults:
        dtype, value = _csv_default(d)
        defaults.append([] if value is None else [value])
        if value is None:
            defaults[-1] = dtype
    keys = [names[i] for i in selected]
    if label_name is not None and label_name not in keys:
        raise ValueError(f"make_csv_dataset(): label_name {label_name!r} is not one of {keys}")
    ds: Dataset = CsvDataset(paths, defaults, compression_type, header=header,
                             field_delim=field_delim, use_quote_delim=use_quote_delim,
                             na_value=na_value, select_cols=selected)

    def to_features(*fields: Any) -> Any:
        features = dict(zip(keys, fields))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    ds = ds.repeat(num_epochs)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    ds = ds.batch(batch_size).map(to_features)
    return ds.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)
