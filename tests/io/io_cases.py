"""The tf.io cases test_io_ops.py checks, shared with the script that recorded TensorFlow's answers.

Each case is a function of the `tf` module (TensorFlow or tapeflow) returning tensors, nested in
lists/dicts; `to_plain` turns the result into JSON-able values. Recorded with
`/work/tfenv/bin/python tests/io/record_tf_io.py` into tests/io/fixtures/tf_io.json.
"""

from __future__ import annotations

import numpy as np


def _feature(tf, values):
    if not values:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[]))
    if isinstance(values[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    if isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def sequence_example(tf, context: dict, lists: dict) -> bytes:
    """A serialized SequenceExample: context {name: values}, feature lists {name: [values...]}."""
    ctx = tf.train.Features(feature={k: _feature(tf, v) for k, v in context.items()})
    fl = tf.train.FeatureLists(feature_list={
        k: tf.train.FeatureList(feature=[_feature(tf, v) for v in steps])
        for k, steps in lists.items()})
    return tf.train.SequenceExample(context=ctx, feature_lists=fl).SerializeToString()


def _seq_records(tf):
    a = sequence_example(tf, {"id": [7], "name": [b"a"]},
                         {"tok": [[1], [2], [3]], "vec": [[0.5, 1.0], [1.5, 2.0]],
                          "var": [[1, 2], [], [3]]})
    b = sequence_example(tf, {"id": [8], "name": [b"bb"]},
                         {"tok": [[4]], "vec": [[2.5, 3.0]], "var": [[5]]})
    return a, b


def _seq_spec(tf):
    ctx = {"id": tf.io.FixedLenFeature([], tf.int64),
           "name": tf.io.VarLenFeature(tf.string),
           "missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0])}
    seq = {"tok": tf.io.FixedLenSequenceFeature([], tf.int64),
           "vec": tf.io.FixedLenSequenceFeature([2], tf.float32),
           "var": tf.io.VarLenFeature(tf.int64),
           "absent": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    return ctx, seq


def _seq_ragged(tf):
    a, b = _seq_records(tf)
    seq = {"var": tf.io.RaggedFeature(tf.int64), "tok": tf.io.RaggedFeature(tf.int64)}
    return tf.io.parse_sequence_example(tf.constant([a, b]), sequence_features=seq)


def _seq_single(tf):
    a, _ = _seq_records(tf)
    return tf.io.parse_single_sequence_example(a, *_seq_spec(tf))


def _seq_batch(tf):
    return tf.io.parse_sequence_example(tf.constant(list(_seq_records(tf))), *_seq_spec(tf))


def _seq_traced(tf):
    a, _ = _seq_records(tf)
    ctx, seq = _seq_spec(tf)
    return tf.function(lambda s: tf.io.parse_single_sequence_example(s, ctx, seq))(
        tf.constant(a))


def _seq_required_missing(tf):
    a, _ = _seq_records(tf)
    return tf.io.parse_single_sequence_example(
        a, sequence_features={"nope": tf.io.FixedLenSequenceFeature([], tf.int64)})


def _seq_bad_inner(tf):
    a, _ = _seq_records(tf)
    return tf.io.parse_single_sequence_example(
        a, sequence_features={"vec": tf.io.FixedLenSequenceFeature([3], tf.float32)})


CSV = {
    "basic": lambda tf: tf.io.decode_csv(["1,2.5,a", "3,,b"], [[0], [1.0], ["z"]]),
    "quoted": lambda tf: tf.io.decode_csv(['1,"a,b",""', '2,"x""y",q'], [[0], [""], ["d"]]),
    "delim": lambda tf: tf.io.decode_csv(["1|2", "3|4"], [[0], [0]], field_delim="|"),
    "tab": lambda tf: tf.io.decode_csv(["1\t2"], [[0], [0]], field_delim="\t"),
    "select_cols": lambda tf: tf.io.decode_csv(["1,2,3", "4,5,6"], [[0], [0.0]],
                                               select_cols=[0, 2]),
    "select_cols short": lambda tf: tf.io.decode_csv(["1,2"], [[0]], select_cols=[1]),
    "na_value": lambda tf: tf.io.decode_csv(["1,NA", "NA,2"], [[0], [9]], na_value="NA"),
    "dtypes": lambda tf: tf.io.decode_csv(
        ["0.1,1e3,-7,x"], [tf.constant([0], tf.float64), [0.0], tf.constant([0], tf.int64),
                           tf.constant([""])]),
    "2-d records": lambda tf: tf.io.decode_csv([["1,2"], ["3,4"]], [[0], [0.0]]),
    "scalar record": lambda tf: tf.io.decode_csv("1,2", [[0], [0]]),
    "no quote delim": lambda tf: tf.io.decode_csv(['"1",2'], [[""], [0]], use_quote_delim=False),
    "spaces": lambda tf: tf.io.decode_csv([" 1, 2 ,  a b "], [[0], [0.0], [""]]),
    "float forms": lambda tf: tf.io.decode_csv(["inf,-nan,0x1p3,1e-50,-0,Infinity"],
                                               [[0.0]] * 6),
    "int sign": lambda tf: tf.io.decode_csv(["+5,-0"], [[0], [0]]),
    "traced": lambda tf: tf.function(lambda r: tf.io.decode_csv(r, [[0], [""]]))(
        tf.constant(["1,a", "2,b"])),
    "err required": lambda tf: tf.io.decode_csv(["1,", "3,4"], [[0], tf.constant([], tf.int32)]),
    "err count": lambda tf: tf.io.decode_csv(["1,2,3"], [[0], [0]]),
    "err int": lambda tf: tf.io.decode_csv(["1.5,2"], [[0], [0]]),
    "err int range": lambda tf: tf.io.decode_csv(["3000000000"], [[0]]),
    "err float": lambda tf: tf.io.decode_csv(["1_0"], [[0.0]]),
    "err quote": lambda tf: tf.io.decode_csv(['"a"b,2'], [[""], [0]]),
    "err unquoted quote": lambda tf: tf.io.decode_csv(['x"a",b'], [[""], [""]]),
    "err select order": lambda tf: tf.io.decode_csv(["1,2,3"], [[0], [0]], select_cols=[2, 0]),
    "err select length": lambda tf: tf.io.decode_csv(["1,2"], [[0]], select_cols=[0, 1]),
    "err delim": lambda tf: tf.io.decode_csv(["1,2"], [[0], [0]], field_delim="ab"),
}

TENSORS = {
    "float32 2x2": lambda tf: tf.constant([[1.5, 2.0], [3.0, 4.0]]),
    "int64 scalar": lambda tf: tf.constant(7, tf.int64),
    "string": lambda tf: tf.constant(["ab", "c", ""]),
    "bool": lambda tf: tf.constant([True, False]),
    "uint8": lambda tf: tf.constant([1, 2], tf.uint8),
    "int16": lambda tf: tf.constant([-1, 2], tf.int16),
    "complex64": lambda tf: tf.constant([1 + 2j], tf.complex64),
    "float64 empty": lambda tf: tf.constant(np.zeros((0, 3), np.float64)),
    "float16": lambda tf: tf.constant([1.5], tf.float16),
}

def _serialize(make):
    return lambda tf: tf.io.serialize_tensor(make(tf))


def _round_trip(make):
    return lambda tf: tf.io.parse_tensor(tf.io.serialize_tensor(make(tf)), make(tf).dtype)


SERIALIZE = {f"serialize {name}": _serialize(make) for name, make in TENSORS.items()}
SERIALIZE.update({f"round trip {name}": _round_trip(make) for name, make in TENSORS.items()})
SERIALIZE.update({
    "round trip traced": lambda tf: tf.function(
        lambda x: tf.io.parse_tensor(tf.io.serialize_tensor(x), tf.float32))(
        tf.constant([1.0, 2.0])),
    "err parse dtype": lambda tf: tf.io.parse_tensor(tf.io.serialize_tensor([1.0]), tf.int32),
    "err parse bytes": lambda tf: tf.io.parse_tensor(b"\xff\xff", tf.int32),
})

SEQUENCE = {
    "single": _seq_single,
    "batch": _seq_batch,
    "traced": _seq_traced,
    "ragged": _seq_ragged,
    "err required": _seq_required_missing,
    "err inner shape": _seq_bad_inner,
}

RAW = {
    "decode_raw int16": lambda tf: tf.io.decode_raw(tf.constant([b"\x01\x00\x02\x01"]),
                                                    tf.int16),
    "decode_raw big endian": lambda tf: tf.io.decode_raw(b"\x01\x00\x02\x01", tf.uint16,
                                                         little_endian=False),
    "decode_raw float32 2-d": lambda tf: tf.io.decode_raw(
        tf.constant([[b"\x00\x00\x80\x3f"], [b"\x00\x00\x00\x40"]]), tf.float32),
    "decode_raw fixed_length": lambda tf: tf.io.decode_raw(
        tf.constant([b"\x01\x02\x03", b"\x04"]), tf.uint8, fixed_length=2),
    "decode_raw traced": lambda tf: tf.function(lambda s: tf.io.decode_raw(s, tf.int32))(
        tf.constant([b"\x01\x00\x00\x00"])),
    "err decode_raw lengths": lambda tf: tf.io.decode_raw(tf.constant([b"\x01\x02", b"\x03"]),
                                                          tf.uint8),
    "err decode_raw odd": lambda tf: tf.io.decode_raw(tf.constant([b"\x01\x02\x03"]), tf.int16),
}

def _image(tf):
    return tf.constant(np.arange(36, dtype=np.uint8).reshape(3, 4, 3) * 7)


def _image_records(tf):
    """Examples holding a PNG each and a label, parsed and decoded in a Dataset.map."""
    img = _image(tf)
    recs = [tf.train.Example(features=tf.train.Features(feature={
        "image": _feature(tf, [tf.io.encode_png(img[:, :k + 2]).numpy()]),
        "label": _feature(tf, [k])})).SerializeToString() for k in range(2)]
    spec = {"image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        return tf.io.decode_image(parsed["image"], channels=3, expand_animations=False), \
            parsed["label"]

    return recs, parse


def _map_decode(tf):
    recs, parse = _image_records(tf)
    return list(tf.data.Dataset.from_tensor_slices(recs).map(parse))


def _map_decode_traced(tf):
    recs, parse = _image_records(tf)
    return [tf.function(parse)(tf.constant(r)) for r in recs]


def _map_decode_jpeg_shape(tf):
    recs, parse = _image_records(tf)

    def jpeg(record):
        image, label = parse(record)
        return tf.shape(tf.io.decode_jpeg(tf.io.encode_jpeg(image))), label

    return list(tf.data.Dataset.from_tensor_slices(recs).map(jpeg))


IMAGES = {
    "png round trip": lambda tf: tf.io.decode_png(tf.io.encode_png(_image(tf))),
    "png gray": lambda tf: tf.io.decode_png(tf.io.encode_png(_image(tf)[:, :, :1]), channels=3),
    "decode_image float": lambda tf: tf.io.decode_image(tf.io.encode_png(_image(tf)),
                                                        dtype=tf.float32),
    "jpeg shape": lambda tf: tf.io.extract_jpeg_shape(tf.io.encode_jpeg(_image(tf))),
    "jpeg decode shape": lambda tf: tf.shape(tf.io.decode_jpeg(tf.io.encode_jpeg(_image(tf)),
                                                               channels=1)),
    "is_jpeg": lambda tf: [tf.io.is_jpeg(tf.io.encode_jpeg(_image(tf))),
                           tf.io.is_jpeg(tf.io.encode_png(_image(tf)))],
    "map parse decode": _map_decode,
    "map parse decode traced": _map_decode_traced,
    "map decode jpeg": _map_decode_jpeg_shape,
    "base64": lambda tf: tf.io.encode_base64(tf.constant([b"\xff\xfe?", b"ab", b""])),
    "base64 pad": lambda tf: tf.io.encode_base64(b"ab", pad=True),
    "base64 decode": lambda tf: tf.io.decode_base64(tf.constant([b"__4_", b"YWI", b"YWI="])),
}

def _audio(tf):
    return tf.constant([[0.0, 0.5], [-0.5, 1.0], [-1.0, 0.25], [0.3, -0.7]])


AUDIO = {
    "encode_wav": lambda tf: tf.audio.encode_wav(_audio(tf), 16000),
    "encode_wav clipped": lambda tf: tf.audio.encode_wav(tf.constant([[2.0], [-3.0]]), 8000),
    "decode_wav": lambda tf: list(tf.audio.decode_wav(tf.audio.encode_wav(_audio(tf), 16000))),
    "decode_wav mono padded": lambda tf: list(tf.audio.decode_wav(
        tf.audio.encode_wav(_audio(tf), 16000), desired_channels=1, desired_samples=6)),
    "decode_wav to stereo": lambda tf: list(tf.audio.decode_wav(
        tf.audio.encode_wav(_audio(tf)[:, :1], 8000), desired_channels=2)),
    "decode_wav traced": lambda tf: list(tf.function(lambda w: tf.audio.decode_wav(w))(
        tf.audio.encode_wav(_audio(tf), 16000))),
    "err decode_wav": lambda tf: tf.audio.decode_wav(b"not a wav file"),
}

TABLES = {"csv": CSV, "serialize": SERIALIZE, "sequence": SEQUENCE, "raw": RAW, "images": IMAGES,
          "audio": AUDIO}


def to_plain(value):
    """Tensors, SparseTensors and RaggedTensors as JSON-able lists and dicts."""
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if hasattr(value, "dense_shape"):
        return {"sparse": [to_plain(value.indices), to_plain(value.values),
                           to_plain(value.dense_shape)]}
    if hasattr(value, "row_splits"):
        return {"ragged": value.to_list(), "dtype": value.dtype.name}
    raw = value.numpy() if hasattr(value, "numpy") else value
    if isinstance(raw, bytes):  # a scalar string: np.asarray would drop trailing NULs
        raw = np.array(raw, dtype=object)
    arr = np.asarray(raw)
    if arr.dtype == object or arr.dtype.kind == "S":
        data = [b.hex() for b in arr.ravel().tolist()]
    elif arr.dtype.kind == "c":
        data = [[float(z.real), float(z.imag)] for z in arr.ravel()]
    else:
        data = [None if isinstance(x, float) and x != x else x
                for x in arr.astype(np.float64 if arr.dtype.kind == "f" else arr.dtype)
                .ravel().tolist()]
    return {"dtype": getattr(value, "dtype", arr.dtype).name if hasattr(value, "dtype") else
            str(arr.dtype), "shape": list(arr.shape), "data": data}


def run(tf, case):
    """The plain result of one case, or {"error": exception class name}."""
    try:
        return to_plain(case(tf))
    except Exception as e:  # noqa: BLE001 - the error's class is the recorded answer
        return {"error": type(e).__name__}
