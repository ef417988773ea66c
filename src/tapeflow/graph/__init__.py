"""Graph mode: IR, tracing (`function`), gradients, optimizer passes, codegen, AutoGraph."""
