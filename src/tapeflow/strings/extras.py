"""More of ``tf.strings``: ngrams, unsorted_segment_join, unicode_transcode,
unicode_split_with_offsets (TensorFlow's semantics; primitive ops without gradients)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ragged.tensor import RaggedTensor
from tapeflow.strings.ops import _bytes, _decode, _ragged_result, _t, unicode_split

_STR = _dtypes.string
_I64 = _dtypes.int64


def _objects(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


@op("StringNGrams", multi_output=True,
    shape=lambda values, splits, **attrs: [((None,), _STR), ((None,), _I64)])
def _ngrams(values, splits, *, widths, separator, left_pad, right_pad, padding_width,
            preserve_short):
    out, out_splits = [], [0]
    for start, end in zip(splits[:-1].tolist(), splits[1:].tolist()):
        row = [_bytes(v) for v in values[start:end]]
        made = 0
        for width in widths:
            pad = width - 1 if padding_width < 0 else min(padding_width, width - 1)
            if left_pad is None:
                pad = 0
            padded = [left_pad] * pad + row + [right_pad] * pad
            for i in range(len(padded) - width + 1):
                out.append(separator.join(padded[i:i + width]))
                made += 1
        if preserve_short and made == 0 and row:
            out.append(separator.join(row))
        out_splits.append(len(out))
    return _objects(out), np.asarray(out_splits, np.int64)


def ngrams(data: Any, ngram_width: Any, separator: str = " ", pad_values: Any = None,
           padding_width: int | None = None, preserve_short_sequences: bool = False,
           name: str | None = None) -> Any:
    """The n-grams of the innermost dimension, joined by `separator` (several widths: all
    of each width in turn), optionally padded with `pad_values` (one value or (left, right))."""
    widths = (int(ngram_width),) if np.ndim(ngram_width) == 0 else tuple(
        int(w) for w in ngram_width)
    if pad_values is None:
        left = right = None
    elif isinstance(pad_values, (tuple, list)):
        left, right = (_bytes(v) for v in pad_values)
    else:
        left = right = _bytes(pad_values)
    attrs = dict(widths=widths, separator=_bytes(separator), left_pad=left, right_pad=right,
                 padding_width=-1 if padding_width is None else int(padding_width),
                 preserve_short=bool(preserve_short_sequences))
    if isinstance(data, RaggedTensor):
        if data.ragged_rank > 1:
            return data.with_values(ngrams(data.values, ngram_width, separator, pad_values,
                                           padding_width, preserve_short_sequences))
        values, splits = apply(_ngrams, _t(data.values, _STR), data.row_splits, **attrs)
        return RaggedTensor.from_row_splits(values, splits, validate=False)
    x = _t(data, _STR)
    if x.shape.rank == 1:
        values, _ = apply(_ngrams, x, _row(x), **attrs)
        return values
    from tapeflow.ops import array_ops

    rows = array_ops.reshape(x, [-1, x.shape[-1]])
    flat = RaggedTensor.from_tensor(rows)
    values, splits = apply(_ngrams, flat.values, flat.row_splits, **attrs)
    per_row = RaggedTensor.from_row_splits(values, splits, validate=False).to_tensor()
    return array_ops.reshape(per_row, array_ops.concat(
        [array_ops.shape(x)[:-1], [-1]], 0))


def _row(x: Any) -> Any:
    from tapeflow.framework.constant import convert_to_tensor
    from tapeflow.ops import array_ops, math_ops

    n = math_ops.cast(array_ops.shape(x)[0], _I64)
    return array_ops.stack([convert_to_tensor(np.int64(0)), n])


@op("UnsortedSegmentJoin", shape=lambda x, ids, num, *, separator: ((None,), _STR))
def _segment_join(x, ids, num, *, separator):
    groups: list = [[] for _ in range(int(num))]
    for s, i in zip(x.reshape(-1), ids.reshape(-1).tolist()):
        if i >= 0:
            groups[i].append(_bytes(s))
    return _objects([separator.join(g) for g in groups])


def unsorted_segment_join(inputs: Any, segment_ids: Any, num_segments: Any,
                          separator: str = "", name: str | None = None) -> Any:
    """Join the strings of each segment (in input order); empty segments give ''."""
    from tapeflow.framework.constant import convert_to_tensor

    return apply(_segment_join, _t(inputs, _STR), convert_to_tensor(segment_ids),
                 convert_to_tensor(num_segments), separator=_bytes(separator))


@op("UnicodeTranscode", shape=lambda x, **attrs: (x[0], _STR))
def _transcode(x, *, source, target, errors, replacement):
    out = np.empty(x.shape, dtype=object)
    flat = out.reshape(-1)
    for i, s in enumerate(x.reshape(-1)):
        flat[i] = _decode(_bytes(s), source, errors, replacement).encode(target)
    return out


def unicode_transcode(input: Any, input_encoding: str, output_encoding: str,  # noqa: A002
                      errors: str = "replace", replacement_char: int = 65533,
                      replace_control_characters: bool = False,
                      name: str | None = None) -> Any:
    """Re-encode strings from one Unicode encoding to another."""
    return apply(_transcode, _t(input, _STR), source=input_encoding.lower(),
                 target=output_encoding.lower(), errors=errors,
                 replacement=int(replacement_char))


@op("UnicodeCharOffsets", multi_output=True,
    shape=lambda x, **attrs: [((None,), _I64), ((None,), _I64)])
def _char_offsets(x, *, encoding, errors, replacement):
    offsets, splits = [], [0]
    for s in x.reshape(-1):
        pos = 0
        for ch in _decode(_bytes(s), encoding, errors, replacement):
            offsets.append(pos)
            pos += len(ch.encode(encoding))
        splits.append(len(offsets))
    return np.asarray(offsets, np.int64), np.asarray(splits, np.int64)


def unicode_split_with_offsets(input: Any, input_encoding: str,  # noqa: A002
                               errors: str = "replace", replacement_char: int = 65533,
                               name: str | None = None) -> tuple:
    """(characters, byte offset of each character) as ragged rows."""
    x = _t(input, _STR)
    chars = unicode_split(x, input_encoding, errors, replacement_char)
    offsets, splits = apply(_char_offsets, x, encoding=input_encoding.lower(), errors=errors,
                            replacement=int(replacement_char))
    return chars, _ragged_result(x, offsets, splits)


_SCRIPT_RUNS: list = []  # (first code points, ICU script codes), loaded on first use


def _script_runs() -> tuple:
    """The ICU script code of every code point as runs (strings/unicode_scripts.txt, recorded
    from TF 2.21 by tests/strings/record_tf_unicode_scripts.py)."""
    if not _SCRIPT_RUNS:
        import pathlib

        text = (pathlib.Path(__file__).parent / "unicode_scripts.txt").read_text()
        rows = [line.split() for line in text.splitlines() if not line.startswith("#")]
        _SCRIPT_RUNS.append((np.array([int(a, 16) for a, _ in rows], np.int64),
                             np.array([int(b) for _, b in rows], np.int32)))
    return _SCRIPT_RUNS[0]


@op("UnicodeScript", shape=lambda x: x)
def _unicode_script(x):
    starts, codes = _script_runs()
    points = x.astype(np.int64)
    out = codes[np.clip(np.searchsorted(starts, points, side="right") - 1, 0, None)]
    return np.where((points < 0) | (points > 0x10FFFF), -1, out).astype(np.int32)


def unicode_script(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The ICU UScriptCode of each int32 code point (0 Common, 25 Latin, 8 Cyrillic, 17 Han
    ...; -1 for values that are no code point). Ragged code points give a ragged result."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(unicode_script(input.flat_values))
    x = _t(input)
    if x.dtype != _dtypes.int32:
        raise TypeError(f"tf.strings.unicode_script expects int32 code points, got {x.dtype.name}")
    return apply(_unicode_script, x)
