"""tf.io ops against TensorFlow 2.21's recorded answers (io_cases.py; fixtures/tf_io.json)."""

import json
import os

import io_cases
import pytest

import tapeflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "fixtures", "tf_io.json")) as f:
    RECORDED = json.load(f)

CASES = [(table, name) for table, cases in io_cases.TABLES.items() for name in cases]


@pytest.mark.parametrize("table,name", CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_matches_tensorflow(table, name):
    got = io_cases.run(tf, io_cases.TABLES[table][name])
    assert got == RECORDED[table][name]


def test_traced_static_shapes():
    """The ops' shape rules: a traced function knows its outputs' ranks and dtypes."""
    csv = tf.function(lambda r: tf.io.decode_csv(r, [[0], [0.0], [""]])).get_concrete_function(
        tf.TensorSpec([None], tf.string))
    assert [(o.shape.as_list(), o.dtype) for o in csv.outputs] == [
        ([None], tf.int32), ([None], tf.float32), ([None], tf.string)]
    png = tf.function(lambda s: tf.io.decode_png(s, channels=3)).get_concrete_function(
        tf.TensorSpec([], tf.string))
    assert png.outputs[0].shape.as_list() == [None, None, 3]
    raw = tf.function(lambda s: tf.io.decode_raw(s, tf.int16)).get_concrete_function(
        tf.TensorSpec([2], tf.string))
    assert raw.outputs[0].shape.as_list() == [2, None]


def test_gif_frames():
    from PIL import Image

    frames = [Image.new("RGB", (4, 3), color) for color in ((255, 0, 0), (0, 0, 255))]
    import io

    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    video = tf.io.decode_gif(buf.getvalue())
    assert video.shape == (2, 3, 4, 3)
    assert video.numpy()[1, 0, 0].tolist() == [0, 0, 255]
    assert tf.io.decode_image(buf.getvalue(), expand_animations=False).shape == (3, 4, 3)


def test_gfile(tmp_path):
    """tf.io.gfile with TensorFlow 2.21's modes, results and error classes."""
    gf = tf.io.gfile
    p = str(tmp_path / "a.txt")
    with gf.GFile(p, "w") as f:
        f.write("hello\nworld\n")
    with gf.GFile(p) as f:
        assert (f.read(3), f.readline(), f.tell(), f.size()) == ("hel", "lo\n", 6, 12)
    with gf.GFile(p, "rb") as f:
        assert f.read() == b"hello\nworld\n"
    assert gf.exists(p) and gf.isdir(str(tmp_path)) and gf.listdir(str(tmp_path)) == ["a.txt"]
    assert gf.glob(str(tmp_path / "*.txt")) == [p]
    st = gf.stat(p)
    assert (st.length, st.is_directory) == (12, False)
    missing = str(tmp_path / "nope")
    for call in (lambda: gf.GFile(missing).read(), lambda: gf.remove(missing),
                 lambda: gf.listdir(missing), lambda: gf.stat(missing)):
        with pytest.raises(tf.errors.NotFoundError):
            call()
    with pytest.raises(tf.errors.AlreadyExistsError):
        gf.copy(p, p)
    gf.makedirs(str(tmp_path / "x" / "y"))
    assert [w[1:] for w in gf.walk(str(tmp_path))][0] == (["x"], ["a.txt"])
    gf.copy(p, str(tmp_path / "b.txt"))
    gf.rename(str(tmp_path / "b.txt"), str(tmp_path / "c.txt"))
    gf.rmtree(str(tmp_path / "x"))
    assert sorted(gf.listdir(str(tmp_path))) == ["a.txt", "c.txt"]
    with gf.GFile(p, "a") as f:
        f.write("more")
    assert list(gf.GFile(p)) == ["hello\n", "world\n", "more"]
    assert tf.function(tf.io.read_file)(tf.constant(p)).numpy() == b"hello\nworld\nmore"
    tf.function(lambda: tf.io.write_file(tf.constant(p), tf.constant(b"x")))()
    assert tf.io.read_file(p).numpy() == b"x"
