"""CSV, text-line and fixed-length readers; image decoding; built-in and local data sets."""

import gzip

import numpy as np
import pytest

import tapeflow.datasets as tfds
import tapeflow.image as tfimage
import tapeflow.io as tfio
from tapeflow.data import Dataset, FixedLengthRecordDataset, TextLineDataset, experimental
from tapeflow.framework import dtypes, errors


def test_text_lines(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\r\nthree")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as f:
        f.write("four\n")
    ds = TextLineDataset([str(tmp_path / "a.txt")])
    assert list(ds.as_numpy_iterator()) == [b"one", b"two", b"three"]
    gz = TextLineDataset(str(tmp_path / "b.txt.gz"), compression_type="GZIP")
    assert list(gz.as_numpy_iterator()) == [b"four"]


def test_fixed_length_records(tmp_path):
    path = tmp_path / "r.bin"
    path.write_bytes(b"HH" + bytes(range(6)) + b"F")
    ds = FixedLengthRecordDataset(str(path), 3, header_bytes=2, footer_bytes=1)
    assert list(ds.as_numpy_iterator()) == [bytes([0, 1, 2]), bytes([3, 4, 5])]


def test_csv_dataset_and_make_csv_dataset(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,label\n1,2.5,x\n3,,y\n5,1.0,z\n")
    ds = experimental.CsvDataset(str(path), [dtypes.int32, [0.0], dtypes.string], header=True)
    rows = list(ds.as_numpy_iterator())
    assert rows[1] == (3, 0.0, b"y")
    assert ds.element_spec[2].dtype == dtypes.string
    batched = experimental.make_csv_dataset(str(path), batch_size=3, label_name="label",
                                            num_epochs=1, shuffle=False)
    features, label = next(iter(batched))
    assert features["a"].numpy().tolist() == [1, 3, 5]
    assert features["b"].dtype == dtypes.float32
    assert label.numpy().tolist() == [b"x", b"y", b"z"]


def test_csv_bad_field_names_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("1\nx\n")
    with pytest.raises(errors.InvalidArgumentError, match=r"d.csv:2.*'x'"):
        list(experimental.CsvDataset(str(path), [dtypes.int32]))


def test_png_jpeg_decode_and_resize(tmp_path):
    img = (np.arange(6 * 8 * 3) % 251).astype(np.uint8).reshape(6, 8, 3)
    png_path = str(tmp_path / "i.png")
    tfio.write_file(png_path, tfimage.encode_png(img))
    decoded = Dataset.from_tensor_slices([png_path]).map(
        lambda p: tfimage.decode_png(tfio.read_file(p), channels=3))
    out = next(iter(decoded)).numpy()
    assert out.dtype == np.uint8 and np.array_equal(out, img)
    gray = tfimage.decode_png(tfimage.encode_png(img), channels=1)
    assert gray.shape.as_list() == [6, 8, 1]
    jpeg = tfimage.decode_jpeg(tfimage.encode_jpeg(img, quality=100))
    assert jpeg.shape.as_list() == [6, 8, 3]
    with pytest.raises(errors.InvalidArgumentError):
        tfimage.decode_png(tfimage.encode_jpeg(img))
    resized = tfimage.resize(img, (12, 16))
    assert resized.dtype == dtypes.float32 and resized.shape.as_list() == [12, 16, 3]
    same = tfimage.resize(img.astype(np.float32), (6, 8)).numpy()
    assert np.allclose(same, img)
    assert tfimage.resize(img[None], (3, 4), method="nearest").shape.as_list() == [1, 3, 4, 3]


def test_bilinear_half_pixel_centres():
    x = np.array([0.0, 10.0], dtype=np.float32).reshape(1, 2, 1)
    out = tfimage.resize(x, (1, 4)).numpy().ravel()
    assert np.allclose(out, [0.0, 2.5, 7.5, 10.0])  # TF2 resize values


def test_builtin_datasets():
    (x, y), (xt, yt) = tfds.load_mnist_5k()
    assert x.shape == (4000, 28, 28) and xt.shape == (1000, 28, 28) and x.dtype == np.uint8
    assert np.bincount(yt).tolist() == [100] * 10
    images, labels = tfds.load_digits()
    assert images.shape == (1797, 8, 8) and labels.max() == 9


def test_mnist_idx_and_missing_file_message(tmp_path):
    def idx(arr, path):
        header = bytes([0, 0, 8, arr.ndim]) + b"".join(
            int(d).to_bytes(4, "big") for d in arr.shape)
        with gzip.open(path, "wb") as f:
            f.write(header + arr.tobytes())
    imgs = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    for prefix in ("train", "t10k"):
        idx(imgs, tmp_path / f"{prefix}-images-idx3-ubyte.gz")
        idx(np.array([3, 4], np.uint8), tmp_path / f"{prefix}-labels-idx1-ubyte.gz")
    (x, y), (_, yt) = tfds.mnist.load_data(path=str(tmp_path))
    assert np.array_equal(x, imgs) and yt.tolist() == [3, 4]
    with pytest.raises(FileNotFoundError, match="mnist.npz"):
        tfds.mnist.load_data(path=str(tmp_path / "missing.npz"))


def test_cifar10_binary_layout_and_missing_message(tmp_path):
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        records = rng.integers(0, 256, size=(2, 3073), dtype=np.uint8)
        records[:, 0] = [1, 7]
        (tmp_path / name).write_bytes(records.tobytes())
    (x, y), (xt, yt) = tfds.cifar10.load_data(path=str(tmp_path))
    assert x.shape == (10, 32, 32, 3) and y.shape == (10, 1) and yt.ravel().tolist() == [1, 7]
    first = np.frombuffer((tmp_path / "test_batch.bin").read_bytes()[:3073], np.uint8)
    assert np.array_equal(xt[0, :, :, 0].ravel(), first[1:1025])  # channel-major on disk
    with pytest.raises(FileNotFoundError, match="cifar-10"):
        tfds.cifar10.load_data(path=str(tmp_path / "nowhere"))
