"""The Keras engine: Layer, Model, Sequential, the functional API and the training loop."""
