"""The compiled Example scanner and TFRecord framer agree with protobuf / the record-by-record
reader, on random Examples, hand-encoded wire variants and corrupt input."""

import struct

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.io import example_scan, parsing, tfrecord, tfrecord_scan
from tapeflow.io.example_pb import BytesList, Example, Feature, Features, FloatList, Int64List

pytestmark = pytest.mark.skipif(not example_scan.AVAILABLE, reason="needs numba")


def random_example(rng) -> bytes:
    fmap = {}
    for key in ("a", "b", "c", "d"):
        if rng.random() < 0.2:
            continue
        n = int(rng.integers(0, 4))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            fmap[key] = Feature(bytes_list=BytesList(value=[rng.bytes(int(rng.integers(0, 9)))
                                                            for _ in range(n)]))
        elif kind == 1:
            fmap[key] = Feature(float_list=FloatList(value=rng.normal(size=n).tolist()))
        elif kind == 2:
            fmap[key] = Feature(int64_list=Int64List(
                value=rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64).tolist()))
        else:
            fmap[key] = Feature()
    fmap["noise"] = Feature(bytes_list=BytesList(value=[b"x" * 200]))
    return Example(features=Features(feature=fmap)).SerializeToString()


def compare(records, features):
    fast = parsing._columns_scanned(records, features)
    slow = parsing._columns_protobuf(records, features)
    for key in features:
        np.testing.assert_array_equal(fast[key].counts, slow[key].counts, err_msg=key)
        np.testing.assert_array_equal(fast[key].present, slow[key].present, err_msg=key)
        assert fast[key].values.dtype == slow[key].values.dtype
        assert fast[key].values.tolist() == slow[key].values.tolist(), key


@pytest.mark.parametrize("dtype", [tf.string, tf.float32, tf.int64])
def test_scanner_matches_protobuf_on_random_examples(dtype):
    rng = np.random.default_rng(1)
    records = [random_example(rng) for _ in range(300)]
    features = {k: tf.io.VarLenFeature(dtype) for k in "abcd"}
    matching = []   # records whose lists all have the requested kind (others must raise)
    for r in records:
        try:
            parsing._columns_protobuf([r], features)
            matching.append(r)
        except errors.InvalidArgumentError:
            with pytest.raises(errors.InvalidArgumentError, match="does not match"):
                parsing._columns_scanned([r], features)
    assert len(matching) > 20
    compare(matching, features)


def _varint(v: int) -> bytes:
    v &= 2**64 - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _example(key: bytes, feature: bytes, extra: bytes = b"") -> bytes:
    return _ld(1, _ld(1, _ld(1, key) + _ld(2, feature)) + extra)


def test_unpacked_lists_and_unknown_fields_are_read_as_protobuf_reads_them():
    ints = b"".join(_varint(1 << 3 | 0) + _varint(v) for v in (5, -7, 2**40))
    floats = b"".join(_varint(1 << 3 | 5) + struct.pack("<f", v) for v in (1.5, -2.0))
    unknown = _varint(9 << 3 | 0) + _varint(3) + _varint(10 << 3 | 1) + b"\0" * 8
    records = [_example(b"i", _ld(3, ints + unknown)), _example(b"f", _ld(2, floats)),
               _example(b"i", _ld(3, ints), extra=unknown)]
    for key, dtype in (("i", tf.int64), ("f", tf.float32)):
        compare(records, {key: tf.io.VarLenFeature(dtype)})
    out = tf.io.parse_single_example(records[0], {"i": tf.io.FixedLenFeature([3], tf.int64)})
    assert out["i"].numpy().tolist() == [5, -7, 2**40]


def test_records_protobuf_would_merge_go_to_protobuf():
    twice = _example(b"a", _ld(3, _ld(1, _varint(1))) + _ld(3, _ld(1, _varint(2))))
    assert Example.FromString(twice).features.feature["a"].int64_list.value == [1, 2]
    spec = {"a": tf.io.VarLenFeature(tf.int64)}
    assert parsing._columns_scanned([twice], spec) is None
    assert tf.io.parse_example([twice], spec)["a"].values.numpy().tolist() == [1, 2]
    entry = [_ld(1, _ld(1, b"a") + _ld(2, _ld(3, _ld(1, _varint(v))))) for v in (1, 9)]
    later = _ld(1, entry[0] + entry[1])   # one map, the key twice: the last entry wins
    assert Example.FromString(later).features.feature["a"].int64_list.value == [9]
    assert parsing._columns_scanned([later], spec)["a"].values.tolist() == [9]


def test_malformed_and_mistyped_input_errors_name_the_example():
    good = parsing.serialized_example({"x": [1.0]})
    spec = {"x": tf.io.FixedLenFeature([], tf.float32)}
    with pytest.raises(errors.InvalidArgumentError, match="example 1 of the batch"):
        tf.io.parse_example([good, good[:-2]], spec)
    with pytest.raises(errors.InvalidArgumentError, match="float32.*does not match.*int64"):
        tf.io.parse_example([good], {"x": tf.io.FixedLenFeature([], tf.int64)})
    with pytest.raises(errors.InvalidArgumentError, match="expected 2 values"):
        tf.io.parse_example([good], {"x": tf.io.FixedLenFeature([2], tf.float32)})


def test_fixed_len_defaults_sequences_and_sparse_batch():
    recs = [parsing.serialized_example({"s": np.arange(2 * i, dtype=np.int64),
                                        "b": [bytes([i, 0, 0])]}) for i in range(3)]
    out = tf.io.parse_example(recs, {
        "s": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
        "b": tf.io.FixedLenFeature([], tf.string),
        "m": tf.io.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0]),
        "v": tf.io.VarLenFeature(tf.int64)})
    assert out["s"].numpy().shape == (3, 2, 2)
    assert out["s"].numpy()[2].tolist() == [[0, 1], [2, 3]]
    assert out["s"].numpy()[1].tolist() == [[0, 1], [0, 0]]
    assert out["b"].numpy().tolist() == [b"\0\0\0", b"\x01\0\0", b"\x02\0\0"]
    assert out["m"].numpy().tolist() == [[1.0, 2.0]] * 3
    assert out["v"].dense_shape.numpy().tolist() == [3, 0]


def _framed_and_slow(path):
    slow = list(tfrecord._record_by_record(str(path), ""))
    return list(tfrecord._framed(str(path), "")), slow


def test_framer_across_chunks_many_and_large_records(tmp_path, monkeypatch):
    monkeypatch.setattr(tfrecord, "_CHUNK", 1000)
    rng = np.random.default_rng(0)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 50, 5000)] + [rng.bytes(5000), b""]
    path = tmp_path / "r.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    fast, slow = _framed_and_slow(path)
    assert fast == slow == records
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(errors.DataLossError, match="truncated record at offset"):
        list(tfrecord._framed(str(path), ""))
    bad = bytearray(data)
    bad[8] ^= 1
    path.write_bytes(bytes(bad))
    with pytest.raises(errors.DataLossError, match="offset 0: length CRC"):
        list(tfrecord._framed(str(path), ""))


def test_crc_kernel_matches_check_value():
    buf = np.frombuffer(b"123456789", np.uint8)
    from tapeflow.io.crc32c import masked_crc32c
    assert tfrecord_scan._masked_crc(buf, 0, 9, tfrecord_scan.table()) == masked_crc32c(
        b"123456789")


def test_crc_kernels_agree_at_every_length_and_offset():
    """The framer's CRC kernel (SSE4.2's crc32 instruction where the CPU has it) and the
    slicing-by-8 tables give the masked CRC-32C of google-crc32c, at lengths around the 8-byte
    step and unaligned starts."""
    from tapeflow.io.crc32c import masked_crc32c

    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 1100, dtype=np.uint8)
    for n in [0, 1, 7, 8, 9, 15, 16, 17, 100, 1001]:
        for start in range(9):
            want = masked_crc32c(buf[start:start + n].tobytes())
            for kernel in (tfrecord_scan._masked_crc, tfrecord_scan._masked_crc_best):
                assert kernel(buf, start, start + n, tfrecord_scan.table()) == want, (n, start)
