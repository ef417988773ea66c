"""Records TF 2.21's answers to api_sweep3_cases.py:
/work/tfenv/bin/python tests/ops/record_tf_api_sweep3.py"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_sweep3_cases as cases  # noqa: E402


def plain(v):
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    a = np.asarray(v)
    if a.dtype == object:
        return {"dtype": "string", "shape": list(a.shape), "data": [b.hex() for b in a.ravel()]}
    out = {"dtype": v.dtype.name, "shape": list(a.shape),
           "data": [None if x != x else x for x in np.real(a).astype(np.float64).ravel().tolist()]}
    if np.iscomplexobj(a):
        out["imag"] = np.imag(a).astype(np.float64).ravel().tolist()
    return out


out = {}
for name, case in {**cases.CASES, **cases.TF_ONLY}.items():
    try:
        out[name] = plain(case(tf))
    except Exception as e:  # noqa: BLE001 - recorded: tapeflow must fail the same way
        out[name] = {"error": type(e).__name__}
        print(name, "->", type(e).__name__, str(e)[:200])
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_api_sweep3.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", path)
