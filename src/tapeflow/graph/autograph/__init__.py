"""AutoGraph: Python control flow on tensors becomes graph control flow (see transformer.py)."""

from tapeflow.graph.autograph.api import convert, to_code
