"""The `tf.train.Example` protocol buffers (Example, Features, Feature, ...).

Taken from the `tensorboard` package's compiled copy when it is installed (so both agree on one
class); otherwise the same schema (TensorFlow's public example.proto/feature.proto, package
`tensorflow`) is declared here with `descriptor_pb2` in a private pool and compiled by protobuf.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name: str, number: int, ftype: int, label: int = _F.LABEL_OPTIONAL,
           type_name: str | None = None, packed: bool = False, oneof: int | None = None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if packed:
        f.options.packed = True
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _map_field(msg, name: str, entry: str, value_type: str) -> None:
    nested = msg.nested_type.add(name=entry)
    nested.options.map_entry = True
    _field(nested, "key", 1, _F.TYPE_STRING)
    _field(nested, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(msg, name, 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           f".tensorflow.{msg.name}.{entry}")


def _build() -> dict:
    fd = descriptor_pb2.FileDescriptorProto(name="tapeflow/example.proto", package="tensorflow",
                                            syntax="proto3")
    for name, ftype, packed in (("BytesList", _F.TYPE_BYTES, False),
                                ("FloatList", _F.TYPE_FLOAT, True),
                                ("Int64List", _F.TYPE_INT64, True)):
        _field(fd.message_type.add(name=name), "value", 1, ftype, _F.LABEL_REPEATED,
               packed=packed)
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (fname, tname) in enumerate((("bytes_list", "BytesList"),
                                             ("float_list", "FloatList"),
                                             ("int64_list", "Int64List")), 1):
        _field(feature, fname, number, _F.TYPE_MESSAGE, type_name=f".tensorflow.{tname}",
               oneof=0)
    _map_field(fd.message_type.add(name="Features"), "feature", "FeatureEntry",
               ".tensorflow.Feature")
    _field(fd.message_type.add(name="FeatureList"), "feature", 1, _F.TYPE_MESSAGE,
           _F.LABEL_REPEATED, ".tensorflow.Feature")
    _map_field(fd.message_type.add(name="FeatureLists"), "feature_list", "FeatureListEntry",
               ".tensorflow.FeatureList")
    _field(fd.message_type.add(name="Example"), "features", 1, _F.TYPE_MESSAGE,
           type_name=".tensorflow.Features")
    seq = fd.message_type.add(name="SequenceExample")
    _field(seq, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(seq, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    names = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
             "FeatureLists", "Example", "SequenceExample")
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{n}"))
            for n in names}


try:
    from tensorboard.compat.proto import example_pb2 as _ex
    from tensorboard.compat.proto import feature_pb2 as _fe

    _classes = {n: getattr(_fe, n) for n in ("BytesList", "FloatList", "Int64List", "Feature",
                                             "Features", "FeatureList", "FeatureLists")}
    _classes.update(Example=_ex.Example, SequenceExample=_ex.SequenceExample)
except ImportError:
    _classes = _build()

BytesList = _classes["BytesList"]
FloatList = _classes["FloatList"]
Int64List = _classes["Int64List"]
Feature = _classes["Feature"]
Features = _classes["Features"]
FeatureList = _classes["FeatureList"]
FeatureLists = _classes["FeatureLists"]
Example = _classes["Example"]
SequenceExample = _classes["SequenceExample"]
