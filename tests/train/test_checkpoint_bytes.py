"""Two processes saving the same values write byte-identical checkpoint files (the README's
same-bits promise covers the files too, not only the tensors)."""

import hashlib
import subprocess
import sys

import numpy as np

import tapeflow as tf

SAVE = """
import sys
import numpy as np
import tapeflow as tf
ckpt = tf.train.Checkpoint(w=tf.Variable(np.arange(6.0).reshape(2, 3)), b=tf.Variable([1, 2]),
                           step=tf.Variable(7, dtype=tf.int64))
print(ckpt.write(sys.argv[1]))
"""


def test_identical_saves_in_two_processes_have_identical_bytes(tmp_path):
    digests = []
    for run in range(2):
        out = subprocess.run([sys.executable, "-c", SAVE, str(tmp_path / f"run{run}" / "ckpt")],
                             capture_output=True, text=True, check=True).stdout.strip()
        files = sorted((tmp_path / f"run{run}").iterdir())
        digests.append([hashlib.sha256(f.read_bytes()).hexdigest() for f in files])
        assert out
    assert digests[0] == digests[1]


def test_a_canonical_file_still_loads_with_its_checksum(tmp_path):
    v = tf.Variable(np.linspace(0, 1, 5))
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "c"))
    v.assign(np.zeros(5))
    tf.train.Checkpoint(v=v).read(path)
    np.testing.assert_array_equal(v.numpy(), np.linspace(0, 1, 5))
