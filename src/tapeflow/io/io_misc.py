"""`tf.io.decode_compressed`, `matching_files`, `match_filenames_once`, `write_graph`
(TensorFlow's semantics)."""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op


def _inflate(data: bytes, kind: str) -> bytes:
    if kind == "":
        return data
    try:
        if kind == "ZLIB":
            return zlib.decompress(data)
        return gzip.decompress(data)
    except (OSError, zlib.error, EOFError) as e:
        raise errors.DataLossError(f"decode_compressed: {kind} data is corrupt: {e}") from None


@op("DecodeCompressed", shape=lambda x, *, kind: x)
def _decode_compressed(data, *, kind):
    out = np.empty(data.shape, dtype=object)
    for i, b in np.ndenumerate(data):
        out[i] = _inflate(b, kind)
    return out


@export("io.decode_compressed")
def decode_compressed(bytes: Any, compression_type: str = "",  # noqa: A002
                      name: str | None = None) -> Any:
    """Each string decompressed: compression_type '' (as is), 'ZLIB' or 'GZIP'."""
    kind = (compression_type or "").upper()
    if kind not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"compression_type must be '', 'ZLIB' or 'GZIP', got "
                         f"{compression_type!r}")
    return apply(_decode_compressed, convert_to_tensor(bytes, _dtypes.string), kind=kind)


def _as_text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


@op("MatchingFiles", stateful=True, shape=lambda pattern: ((None,), _dtypes.string))
def _matching_files(pattern):
    found = set()
    for p in np.asarray(pattern).reshape(-1).tolist():
        found.update(glob.glob(_as_text(p)))
    out = np.empty(len(found), dtype=object)
    out[:] = [f.encode() for f in sorted(found)]
    return out


@export("io.matching_files")
def matching_files(pattern: Any, name: str | None = None) -> Any:
    """The sorted file names matching a glob pattern (or any of a vector of them)."""
    return apply(_matching_files, convert_to_tensor(pattern, _dtypes.string))


@export("io.match_filenames_once")
def match_filenames_once(pattern: Any, name: str | None = None) -> Any:
    """A non-trainable variable holding the files matching `pattern` when it was made."""
    from tapeflow.framework.variable import Variable

    return Variable(matching_files(pattern), trainable=False, name=name or "matching_filenames")


@export("io.write_graph")
def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph's GraphDef (a Graph, a traced function or a GraphDef) to logdir/name, as
    protobuf text or binary; returns the path."""
    from google.protobuf import text_format

    from tapeflow.summary.graph_def import as_graph_def

    graph_def = as_graph_def(graph_or_graph_def)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = text_format.MessageToString(graph_def).encode() if as_text \
        else graph_def.SerializeToString()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


@op("DecodeJSONExample", shape=lambda x: x)
def _decode_json_example(data):
    from google.protobuf import json_format

    from tapeflow.io.example_pb import Example

    out = np.empty(data.shape, dtype=object)
    for i, text in np.ndenumerate(data):
        try:
            out[i] = json_format.Parse(text, Example()).SerializeToString()
        except json_format.ParseError as e:
            raise errors.InvalidArgumentError(
                f"decode_json_example: not a JSON tf.train.Example: {e}") from None
    return out


@export("io.decode_json_example")
def decode_json_example(json_examples: Any, name: str | None = None) -> Any:
    """tf.train.Example protos written as JSON (protobuf's JSON mapping) -> serialized bytes."""
    return apply(_decode_json_example, convert_to_tensor(json_examples, _dtypes.string))
