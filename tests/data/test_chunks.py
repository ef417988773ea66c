"""`batch` over sources that give stacked chunks (tensor slices, CSV blocks) yields exactly what
stacking elements one by one yields."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.data import chunks
from tapeflow.data.batching import stack
from tapeflow.framework import errors


def slow_batches(ds, n, drop=False):
    """Batches by stacking the dataset's single elements (the reference)."""
    elements = list(ds._iterate(iter(ds)._ctx))
    out = [stack(elements[i:i + n]) for i in range(0, len(elements), n)]
    return out[:-1] if drop and len(elements) % n else out


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        fx, fy = tf.nest.flatten(x), tf.nest.flatten(y)
        for u, v in zip(fx, fy):
            u, v = np.asarray(u), np.asarray(v)
            assert u.dtype == v.dtype and u.shape == v.shape
            assert u.tolist() == v.tolist()


@pytest.mark.parametrize("n,drop", [(1, False), (7, False), (7, True), (5000, False)])
def test_slices_repeat_batches_cross_chunk_and_epoch_boundaries(monkeypatch, n, drop):
    monkeypatch.setattr(chunks, "CHUNK", 6)
    data = {"x": np.arange(40.0).reshape(20, 2), "s": np.array([b"a%d" % i for i in range(20)],
                                                                dtype=object)}
    ds = tf.data.Dataset.from_tensor_slices((data, np.arange(20))).repeat(3)
    got = [b for b in ds.batch(n, drop_remainder=drop).as_numpy_iterator()]
    same(got, [tf.nest.map_structure(np.asarray, b) for b in slow_batches(ds, n, drop)])


def test_batches_do_not_alias_the_source_array():
    source = np.zeros((8, 2))
    batch = next(iter(tf.data.Dataset.from_tensor_slices(source).batch(8))).numpy()
    batch[0, 0] = 5
    assert source[0, 0] == 0


def write_csv(path, text):
    path.write_text(text)
    return str(path)


def test_csv_blocks_match_the_row_parser(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK", 4)
    path = write_csv(tmp_path / "a.csv", "a,b,c,d\n" + "".join(
        f'{i * 0.25},{i},"q,{i}",{"" if i % 3 == 0 else i}\n' + ("\n" if i == 5 else "")
        for i in range(11)))
    ds = tf.data.experimental.CsvDataset(path, [tf.float32, tf.int64, tf.string, [-1]],
                                         header=True)
    rows = list(ds._rows(path))
    elements = list(ds.as_numpy_iterator())
    assert len(rows) == len(elements) == 11
    for r, e in zip(rows, elements):
        assert [np.asarray(v).tolist() for v in r] == [np.asarray(v).tolist() for v in e]
    assert elements[3][3] == -1 and elements[4][2] == b"q,4"
    batch = next(iter(ds.batch(11)))
    assert batch[0].dtype == tf.float32 and batch[3].numpy().tolist()[:4] == [-1, 1, 2, -1]


def test_csv_select_cols_na_value_and_errors(tmp_path):
    path = write_csv(tmp_path / "b.csv", "1,x,2.5\n2,NA,3.5\n")
    ds = tf.data.experimental.CsvDataset(path, [tf.int32, [b"none"]], select_cols=[0, 1],
                                         na_value="NA")
    assert [(int(a), b) for a, b in ds.as_numpy_iterator()] == [(1, b"x"), (2, b"none")]
    bad = write_csv(tmp_path / "c.csv", "1,2\n3,x\n")
    with pytest.raises(errors.InvalidArgumentError, match=r"c.csv:2 column 1.*'x'"):
        list(tf.data.experimental.CsvDataset(bad, [tf.int32, tf.int32]).batch(4))
    short = write_csv(tmp_path / "d.csv", "1,2\n3\n")
    with pytest.raises(errors.InvalidArgumentError, match=r"d.csv:2: expected 2 fields"):
        list(tf.data.experimental.CsvDataset(short, [tf.int32, tf.int32]))
    empty = write_csv(tmp_path / "e.csv", "1,\n")
    with pytest.raises(errors.InvalidArgumentError, match="empty and has no default"):
        list(tf.data.experimental.CsvDataset(empty, [tf.int32, tf.int32]))
    frac = write_csv(tmp_path / "f.csv", "1.5\n")
    with pytest.raises(errors.InvalidArgumentError, match="cannot parse '1.5' as int32"):
        list(tf.data.experimental.CsvDataset(frac, [tf.int32]))


def test_make_csv_dataset_batches(tmp_path):
    path = write_csv(tmp_path / "m.csv", "a,b,label\n" + "".join(
        f"{i},{i * 0.5},{i % 2}\n" for i in range(10)))
    ds = tf.data.experimental.make_csv_dataset(path, batch_size=4, label_name="label",
                                               num_epochs=2, shuffle=False)
    got = list(ds)
    assert [int(b[1].shape[0]) for b in got] == [4, 4, 4, 4, 4]
    assert got[2][0]["a"].numpy().tolist() == [8, 9, 0, 1]
    assert got[0][0]["b"].dtype == tf.float32


def random_field(rng, kind):
    r = rng.random()
    if r < 0.1:
        return ""
    if kind == "i":
        v = int(rng.integers(-10**12, 10**12)) if r < 0.9 else int(rng.integers(-2**62, 2**62))
        return (f"+{v}" if v >= 0 and r < 0.2 else str(v)) if r > 0.15 else f'"{v}"'
    choices = [repr(float(rng.normal() * 10 ** int(rng.integers(-30, 30)))),
               f"{rng.normal():.3f}", f"{rng.integers(0, 99)}.", f".{rng.integers(0, 99)}",
               f"{rng.integers(1, 9)}e{rng.integers(-25, 25)}", "1234567890123456789.5",
               "-0.0", "nan", "inf", " 2.5", f'"{rng.normal()}"', "9007199254740993"]
    return choices[int(rng.integers(0, len(choices)))]


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_csv_parser_matches_the_csv_module(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(chunks, "CHUNK", 50)
    from tapeflow.data import readers
    monkeypatch.setattr(readers, "_CSV_READ", 97)
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(400):
        text = f'"s,""{rng.integers(0, 9)}""\nx"' if rng.random() < 0.1 else f"w{rng.integers(9)}"
        lines.append(",".join([random_field(rng, "f"), random_field(rng, "i"), text]))
    newline = "\r\n" if seed else "\n"
    path = write_csv(tmp_path / "r.csv", "h1,h2,h3" + newline + newline.join(lines))
    defaults = [[1.5], np.array([7], np.int64), [b"d"]]
    ds = tf.data.experimental.CsvDataset(path, defaults, header=True)
    fast = list(ds._compiled_blocks(path))
    slow = list(ds._python_blocks(path))
    assert len(fast) > 5
    for column in range(3):
        a = np.concatenate([b[column] for b in fast])
        b = np.concatenate([b[column] for b in slow])
        assert a.dtype == b.dtype and len(a) == 400
        if a.dtype == object:
            assert a.tolist() == b.tolist()
        else:
            np.testing.assert_array_equal(a, b)
            assert (np.signbit(a) == np.signbit(b)).all()
