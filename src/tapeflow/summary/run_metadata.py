"""Per-node compute time and memory of a graph run, as TensorFlow's ``RunMetadata``.

Times come from the executor's profiling mode (``compile_graph(..., profile=stats)``, what
``concrete.profile`` uses): each node's wall time, laid end to end in program order.
Memory is the bytes of each node's outputs (shapes as the run saw them: unknown dims take
the sizes of the call's inputs). The Graphs dashboard colours nodes by both ("Compute time",
"Memory") and lists the run under "Session runs".
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tapeflow.summary import _tb
from tapeflow.summary.tf_ops import DEVICE


def profile_run(concrete: Any, arrays: list, runs: int = 1) -> tuple[dict, float]:
    """({node: seconds per call}, wall start) over `runs` calls of `concrete` on `arrays`."""
    from tapeflow.graph.codegen import compile_graph
    from tapeflow.summary.writer import record_if

    stats: dict = {}
    exe = compile_graph(concrete.graph, name=concrete.name, profile=stats)
    # the profiled runs must leave no trace: variables (a train step's updates) are put back
    # and summaries inside the graph are not recorded
    variables = concrete.graph.variables()
    saved = [np.array(v._value, copy=True) for v in variables]
    start = time.time()
    try:
        with record_if(False):
            for _ in range(runs):
                exe(*arrays)
    finally:
        for v, value in zip(variables, saved):
            v.assign(value)
    return {node: s[0] / max(s[1], 1) for node, s in stats.items()}, start


def _output_bytes(tensor: Any, sizes: dict) -> tuple[list[int], int]:
    dims = tensor.shape.as_tuple()
    if dims is None:
        return [], 0
    known = [sizes.get(i, 1) if d is None else int(d) for i, d in enumerate(dims)]
    itemsize = np.dtype(tensor.dtype._np).itemsize if tensor.dtype._np is not object else 8
    return known, int(np.prod(known, dtype=np.int64)) * itemsize


def run_metadata(concrete: Any, arrays: list, runs: int = 1) -> Any:
    """The RunMetadata (step stats per node) of running `concrete` on `arrays`."""
    times, start = profile_run(concrete, arrays, runs)
    return timed_run_metadata(concrete.graph, times, start, [np.shape(a) for a in arrays])


def timed_run_metadata(graph: Any, times: dict, start: float, input_shapes: list,
                       names: dict | None = None) -> Any:
    """The RunMetadata of a run of `graph` whose nodes took `times[node]` seconds (nodes not
    in `times` did not run), from `start` (epoch seconds), on inputs of `input_shapes`;
    `names` maps id(node) to its GraphDef name where that differs (TF1 graphs)."""
    config_pb2 = _tb.proto("config_pb2")
    step_stats_pb2 = _tb.proto("step_stats_pb2")
    cost_pb2 = _tb.proto("allocation_description_pb2")
    desc_pb2 = _tb.proto("tensor_description_pb2")
    from tapeflow.summary.tf_ops import data_type, shape_proto, tf_type

    # an unknown dim takes the size the inputs had at that position (the batch, mostly)
    sizes: dict = {}
    for shape in input_shapes:
        for i, d in enumerate(shape):
            sizes.setdefault(i, d)
    device = step_stats_pb2.DeviceStepStats(device=DEVICE)
    t = start * 1e6
    for node in graph.nodes:
        if node not in times:
            continue
        micros = max(int(round(times[node] * 1e6)), 0)
        name = (names or {}).get(id(node), node.name)
        stats = step_stats_pb2.NodeExecStats(node_name=name, all_start_micros=int(t),
                                             op_start_rel_micros=0, op_end_rel_micros=micros,
                                             all_end_rel_micros=micros,
                                             timeline_label=f"{name} = {tf_type(node)}()")
        total = 0
        for slot, out in enumerate(node.outputs):
            dims, nbytes = _output_bytes(out, sizes)
            total += nbytes
            allocation = cost_pb2.AllocationDescription(requested_bytes=nbytes,
                                                        allocated_bytes=nbytes,
                                                        allocator_name="cpu")
            stats.output.add(slot=slot, tensor_description=desc_pb2.TensorDescription(
                dtype=data_type(out.dtype), shape=shape_proto(dims),
                allocation_description=allocation))
        stats.memory.add(allocator_name="cpu", total_bytes=total, peak_bytes=total,
                         live_bytes=total)
        device.node_stats.append(stats)
        t += micros
    return config_pb2.RunMetadata(step_stats=step_stats_pb2.StepStats(dev_stats=[device]))
