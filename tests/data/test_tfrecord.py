"""TFRecord round trips, CRC corruption detection, tf.train.Example parsing."""

import gzip
import struct

import numpy as np
import pytest

import tapeflow.io as tfio
from tapeflow.data import Dataset, TFRecordDataset
from tapeflow.framework import errors
from tapeflow.io.crc32c import _crc32c_python, crc32c, masked_crc32c
from tapeflow.io.example_pb import Example, Feature, Features, FloatList, Int64List
from tapeflow.io.parsing import serialized_example


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert _crc32c_python(b"123456789") == 0xE3069283
    assert masked_crc32c(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def write(path, records, options=None):
    with tfio.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_round_trip(tmp_path, compression):
    path = tmp_path / "a.tfrecord"
    records = [b"", b"x", bytes(range(256)) * 40]
    write(path, records, tfio.TFRecordOptions(compression) if compression else None)
    ds = TFRecordDataset(str(path), compression_type=compression)
    assert list(ds.as_numpy_iterator()) == records
    assert list(tfio.tf_record_iterator(str(path), compression)) == records


def test_layout_matches_tfrecord_format(tmp_path):
    path = tmp_path / "a.tfrecord"
    write(path, [b"abc"])
    data = path.read_bytes()
    assert data[:8] == struct.pack("<Q", 3)
    assert data[8:12] == struct.pack("<I", masked_crc32c(data[:8]))
    assert data[12:15] == b"abc" and data[15:] == struct.pack("<I", masked_crc32c(b"abc"))


def test_corruption_raises_data_loss_naming_file_and_offset(tmp_path):
    path = tmp_path / "bad.tfrecord"
    write(path, [b"first", b"second"])
    data = bytearray(path.read_bytes())
    second = 12 + 5 + 4
    data[second + 12] ^= 0xFF  # flip a payload byte of record 2
    path.write_bytes(bytes(data))
    it = iter(TFRecordDataset(str(path)))
    assert next(it).numpy() == b"first"
    with pytest.raises(errors.DataLossError, match=rf"bad.tfrecord.*offset {second}.*data CRC"):
        next(it)
    path.write_bytes(bytes(data[:second + 5]))
    with pytest.raises(errors.DataLossError, match="truncated"):
        list(TFRecordDataset(str(path)))


@pytest.mark.parametrize("batch", [1, 3, 256, 5000])
def test_batches_cut_from_whole_blocks_equal_record_by_record(tmp_path, batch):
    """`TFRecordDataset(...).batch(n)` takes the framer's blocks of records (one Python step per
    block, not per record): the same batches, across files, empty files and blocks of 4096."""
    rng = np.random.default_rng(0)
    names = []
    for k, count in enumerate([5000, 0, 7, 1]):
        names.append(str(tmp_path / f"{k}.tfrecord"))
        write(names[-1], [rng.bytes(int(rng.integers(0, 40))) for _ in range(count)])
    ds = TFRecordDataset(names)
    assert ds._chunks(None) is not None  # the block path is the one under test
    by_record = list(ds.as_numpy_iterator())
    got = [b.tolist() for b in ds.batch(batch).as_numpy_iterator()]
    want = [by_record[i:i + batch] for i in range(0, len(by_record), batch)]
    assert got == want
    assert [len(b) for b in TFRecordDataset(names).batch(batch, drop_remainder=True)
            .as_numpy_iterator()] == [batch] * (len(by_record) // batch)


def test_corrupt_record_stops_a_batched_read(tmp_path):
    path = tmp_path / "bad.tfrecord"
    write(path, [b"a" * 100] * 50)
    data = bytearray(path.read_bytes())
    data[(12 + 100 + 4) * 30 + 12] ^= 0xFF  # a payload byte of record 31
    path.write_bytes(bytes(data))
    with pytest.raises(errors.DataLossError, match="bad.tfrecord.*data CRC"):
        list(TFRecordDataset(str(path)).batch(8))


def test_gzip_file_is_really_gzip(tmp_path):
    path = tmp_path / "a.tfrecord.gz"
    write(path, [b"hello"], tfio.TFRecordOptions("GZIP"))
    assert gzip.decompress(path.read_bytes())[12:17] == b"hello"


def test_parallel_reads_interleave_files(tmp_path):
    names = []
    for f in range(3):
        names.append(str(tmp_path / f"{f}.tfrecord"))
        write(names[-1], [f"{f}-{i}".encode() for i in range(2)])
    ds = TFRecordDataset(names, num_parallel_reads=3)
    assert list(ds.as_numpy_iterator()) == [b"0-0", b"1-0", b"2-0", b"0-1", b"1-1", b"2-1"]
    seq = TFRecordDataset(Dataset.from_tensor_slices(names))
    assert list(seq.as_numpy_iterator())[:2] == [b"0-0", b"0-1"]


def test_example_round_trip_through_pipeline(tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    with tfio.TFRecordWriter(path) as w:
        for i in range(4):
            ex = Example(features=Features(feature={
                "image": Feature(float_list=FloatList(value=[i, i + 0.5])),
                "label": Feature(int64_list=Int64List(value=[i])),
                "tags": Feature(int64_list=Int64List(value=list(range(i)))),
            }))
            w.write(ex.SerializeToString())
    spec = {"image": tfio.FixedLenFeature([2], "float32"),
            "label": tfio.FixedLenFeature([], "int64"),
            "tags": tfio.VarLenFeature("int64")}
    single = TFRecordDataset(path).map(lambda s: tfio.parse_single_example(s, spec))
    first = next(iter(single))
    assert first["image"].numpy().tolist() == [0.0, 0.5]
    batched = TFRecordDataset(path).batch(4).map(lambda s: tfio.parse_example(s, spec))
    b = next(iter(batched))
    assert b["label"].numpy().tolist() == [0, 1, 2, 3]
    assert b["image"].shape.as_list() == [4, 2]
    assert b["tags"].dense_shape.numpy().tolist() == [4, 3]
    assert b["tags"].values.numpy().tolist() == [0, 0, 1, 0, 1, 2]


def test_parse_errors_and_defaults():
    s = serialized_example({"x": [1.0]})
    with pytest.raises(errors.InvalidArgumentError, match="y.*required"):
        tfio.parse_single_example(s, {"y": tfio.FixedLenFeature([], "float32")})
    with pytest.raises(errors.InvalidArgumentError, match="does not match"):
        tfio.parse_single_example(s, {"x": tfio.FixedLenFeature([], "int64")})
    out = tfio.parse_single_example(s, {"y": tfio.FixedLenFeature([2], "int64", default_value=5)})
    assert out["y"].numpy().tolist() == [5, 5]


def test_read_write_file_and_decode_raw(tmp_path):
    path = str(tmp_path / "f.bin")
    tfio.write_file(path, np.arange(3, dtype=np.int32).tobytes())
    raw = tfio.read_file(path)
    assert tfio.decode_raw(raw, "int32").numpy().tolist() == [0, 1, 2]
    with pytest.raises(errors.NotFoundError, match="nope"):
        tfio.read_file(str(tmp_path / "nope"))
