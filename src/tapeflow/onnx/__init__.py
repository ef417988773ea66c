"""ONNX export (``tapeflow.onnx.export(model_or_function, input_signature, "m.onnx")``);
see docs/saving.md. Needs the optional `onnx` package (``pip install 'tapeflow[onnx]'``)."""

from tapeflow.onnx.export import DEFAULT_OPSET, ExportError, export, to_onnx

__all__ = ["DEFAULT_OPSET", "ExportError", "export", "to_onnx"]
