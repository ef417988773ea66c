"""tf.einsum: NumPy's values, gradients against finite differences (float64) and PyTorch,
eager vs graph, and errors that name the equation."""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(3)

CASES = [  # equation, operand shapes
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 5, 2, 3), (5, 3, 4)]),  # ellipsis, ranks differ
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 4)]),  # a size-1 dim broadcast
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,k->i", [(2, 3), (4,)]),  # j and k summed in one operand alone
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores
]


def _operands(shapes, dtype=np.float64):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("equation, shapes", CASES + [("ii", [(3, 3)]), ("ii->i", [(3, 3)])])
def test_einsum_matches_numpy(equation, shapes):
    xs = _operands(shapes)
    np.testing.assert_allclose(tf.einsum(equation, *xs).numpy(), np.einsum(equation, *xs),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("equation, shapes", CASES)
def test_einsum_gradients_match_finite_differences(equation, shapes):
    xs = _operands(shapes)
    cot = rng.standard_normal(np.shape(np.einsum(equation, *xs)))
    tensors = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        y = tf.reduce_sum(tf.einsum(equation, *tensors) * cot)
    grads = [g.numpy() for g in tape.gradient(y, tensors)]
    for i, x in enumerate(xs):
        numeric = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[j] = 1e-6
            hi = [x + step if k == i else v for k, v in enumerate(xs)]
            lo = [x - step if k == i else v for k, v in enumerate(xs)]
            numeric[j] = (np.sum(np.einsum(equation, *hi) * cot)
                          - np.sum(np.einsum(equation, *lo) * cot)) / 2e-6
        np.testing.assert_allclose(grads[i], numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("equation, shapes", CASES)
def test_einsum_matches_torch(equation, shapes):
    torch = pytest.importorskip("torch")
    xs = _operands(shapes)
    tensors = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        y = tf.reduce_sum(tf.einsum(equation, *tensors) ** 2)
    ours = [g.numpy() for g in tape.gradient(y, tensors)]
    leaves = [torch.tensor(x, requires_grad=True) for x in xs]
    expected = (torch.einsum(equation, *leaves) ** 2).sum()
    expected.backward()
    np.testing.assert_allclose(float(y), expected.item(), rtol=1e-12)
    for a, b in zip(ours, leaves):
        np.testing.assert_allclose(a, b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_in_a_graph_with_an_unknown_batch_equals_eager():
    q, k = _operands([(4, 3, 5), (4, 6, 5)], np.float32)
    w = tf.Variable(rng.standard_normal((5, 5)).astype(np.float32))
    seen = {}

    def scores(q, k):
        out = tf.einsum("bqd,de,bke->bqk", q, w, k)
        seen["shape"] = out.shape.as_list()
        return out

    graph = tf.function(scores, input_signature=[tf.TensorSpec((None, 3, 5)),
                                                 tf.TensorSpec((None, 6, 5))])
    np.testing.assert_array_equal(graph(q, k).numpy(), scores(q, k).numpy())
    assert seen["shape"] == [4, 3, 6]
    graph(q, k)
    assert graph.get_concrete_function().outputs[0].shape.as_list() == [None, 3, 6]


@pytest.mark.parametrize("equation, shapes, match", [
    ("ij,jk->ik", [(2, 3)], "2 operand subscripts for 1 tensors"),
    ("ijk,jk->ik", [(2, 3), (3, 4)], "subscripts 'ijk' for an operand of rank 2"),
    ("ij,jk->iz", [(2, 3), (3, 4)], "must be distinct letters of the operands"),
    ("ij,jk->ik", [(2, 3), (5, 4)], "dimension 'j' is 3 in one operand and 5 in another"),
    ("i1,jk->ik", [(2, 3), (3, 4)], "subscripts must be letters"),
])
def test_einsum_errors_name_the_equation(equation, shapes, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match) as info:
        tf.einsum(equation, *_operands(shapes))
    assert f"Einsum {equation!r}" in str(info.value)
    assert "test_einsum.py" in str(info.value)  # the user's own line


def test_einsum_has_no_gradient_through_a_diagonal():
    x = tf.constant(np.eye(3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.einsum("ii->i", x)
    with pytest.raises(tf.errors.UnimplementedError, match="repeated subscript"):
        tape.gradient(y, x)


def test_einsum_flops_fact_counts_the_contractions_multiply_adds():
    """The scheduler's cost estimate (and ``concrete.flops()``): 2 x every letter's size, as a
    matmul of the same product; one operand (a transpose or a sum) counts none."""
    import tapeflow as tf

    a, b = tf.zeros([2, 3, 4]), tf.zeros([4, 5])
    f = tf.function(lambda a, b: (tf.einsum("abc,cd->abd", a, b),
                                  tf.matmul(tf.reshape(a, [6, 4]), b),
                                  tf.einsum("abc->cba", a)))
    concrete = f.get_concrete_function(a, b)
    flops = {n.op.name: n.op.flops(n) for n in concrete.traced_graph.nodes
             if n.op.flops is not None and n.op.name in ("Einsum", "MatMul")}
    assert flops["MatMul"] == 2 * 6 * 4 * 5
    facts = [n.op.flops(n) for n in concrete.traced_graph.nodes if n.op.name == "Einsum"]
    assert facts == [2 * 2 * 3 * 4 * 5, 0.0]
