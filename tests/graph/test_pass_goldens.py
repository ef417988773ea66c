"""Each optimizer pass against its golden before/after listing (goldens/<pass>.txt, made by
pass_goldens.py): a change in what a pass does shows up as a reviewed diff of a listing."""

from __future__ import annotations

import pytest
from pass_goldens import GOLDENS, before_and_after, programs

import tapeflow as tf
from tapeflow.graph.passes import pipeline
from tapeflow.kernels import winograd

_NEEDS_WINOGRAD = {"share_tiles", "prologue", "conv_into_concat"}


def test_every_pass_has_a_golden():
    assert [name for name, _ in pipeline.PASSES] == list(programs())


@pytest.mark.parametrize("name", list(programs()))
def test_pass_matches_its_golden(name):
    if name in _NEEDS_WINOGRAD and winograd._combine is None:
        pytest.skip("needs numba (the Winograd path)")
    expected = (GOLDENS / f"{name}.txt").read_text()
    got = before_and_after(name)
    assert got == expected, f"{name} changed; if intended, run tests/graph/pass_goldens.py"
    before, rest = got.removeprefix("# before\n").split("\n# ", 1)
    after = rest.split("\n", 1)[1]
    assert before.strip() != after.strip()  # each program exercises its pass


def test_the_suite_verifies_every_pass_and_names_the_one_that_breaks_the_graph(monkeypatch):
    assert pipeline.VERIFY_EACH_PASS  # tests/conftest.py: on for every graph in the suite

    def drop_first_node(graph):
        graph.nodes = graph.nodes[1:]  # its readers now use an undefined value
        return graph, "broken: dropped a node"

    monkeypatch.setattr(pipeline, "PASSES", [*pipeline.PASSES, ("broken", drop_first_node)])
    f = tf.function(lambda x: tf.exp(x) * 2.0)
    with pytest.raises(tf.errors.InternalError, match="after pass broken: .*before it is defined"):
        f(tf.constant([1.0]))
