"""Writes src/tapeflow/strings/unicode_scripts.txt: the ICU script code (UScriptCode) of
every Unicode code point as TF 2.21's tf.strings.unicode_script reports it, as the first code
point of each run of equal codes. Run under TF:
/work/tfenv/bin/python tests/strings/record_tf_unicode_scripts.py"""

import os

import numpy as np
import tensorflow as tf

points = np.arange(0x110000, dtype=np.int32)
codes = tf.strings.unicode_script(points).numpy()
starts = np.flatnonzero(np.diff(codes, prepend=codes[0] - 1))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "tapeflow",
                    "strings", "unicode_scripts.txt")
with open(path, "w") as f:
    f.write("# first code point (hex) and ICU script code of each run; "
            "tests/strings/record_tf_unicode_scripts.py\n")
    for s in starts:
        f.write(f"{s:x} {codes[s]}\n")
print(len(starts), "runs; codes for -1, 0x110000:", tf.strings.unicode_script([-1, 0x110000]))
