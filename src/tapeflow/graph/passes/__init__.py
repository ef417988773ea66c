"""Optimizer passes, one per file, each ``run(graph) -> (graph, report)``; see ``pipeline``."""
