"""``tf.keras.Model``: a layer with ``compile``/``fit``/``evaluate``/``predict``.

The loops are plain Python over batches; the per-batch work (forward, loss, gradients,
optimizer update, metric updates) is ``train_step``, which runs as a traced
``tapeflow.function`` unless ``compile(run_eagerly=True)``. Metrics are streaming (their state
is in variables), so a traced step updates them and the loop only reads ``result()``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow import distribute
from tapeflow.framework import nest
from tapeflow.framework.shapes import as_shape
from tapeflow.framework.threads import single_threaded_blas
from tapeflow.keras import callbacks as callbacks_mod
from tapeflow.keras.engine import compile_utils, data_adapter
from tapeflow.keras.engine.base_layer import Layer

_PLAIN = (str, int, float, bool, type(None))


def _init_config(cls: type, args: tuple, kwargs: dict) -> dict | None:
    """The constructor's arguments by name when all are plain values (tf-keras's rule for the
    default config of a subclass), else None."""
    names = inspect.getfullargspec(cls.__init__).args[1:]
    config = dict(kwargs)
    config.update(zip(names, args))
    try:
        plain = all(isinstance(v, _PLAIN) for v in nest.flatten(config))
    except TypeError:
        return None
    return config if plain else None


def _is_functional_call(args: tuple, kwargs: dict) -> bool:
    return (len(args) >= 2 or ("inputs" in kwargs and "outputs" in kwargs)
            or (len(args) == 1 and "outputs" in kwargs))


@single_threaded_blas
def _run_step(step: Any, data: Any) -> Any:
    """One train/test/predict step with NumPy's BLAS on one thread: a model's products are
    small, and on a busy machine a multi-threaded product waits on sleeping helper threads
    (a 64x784 Dense step: ~1 ms on one thread, 10-80 ms on two with other processes running)."""
    return step(data)


def _validate_now(epoch: int, validation_freq: Any) -> bool:
    """Keras's ``validation_freq``: every N epochs (an int), or after the listed epochs."""
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError(f"validation_freq must be >= 1, got {validation_freq}")
        return (epoch + 1) % validation_freq == 0
    return epoch + 1 in set(validation_freq)


def _inject_functional(cls: type) -> None:
    """Put ``Functional`` between a Model subclass and ``Model`` in its bases, as Keras does
    when the subclass is constructed with inputs and outputs."""
    from tapeflow.keras.engine.functional import Functional

    bases = []
    for base in cls.__bases__:
        if base is Model:
            base = Functional
        elif issubclass(base, Model) and not issubclass(base, Functional):
            _inject_functional(base)
        bases.append(base)
    cls.__bases__ = tuple(bases)


def _to_float(value: Any) -> Any:
    value = np.asarray(value)
    return float(value) if value.ndim == 0 else value


class Model(Layer):
    """A trainable model: subclass it (define layers in ``__init__``, the forward pass in
    ``call``) or build it functionally with ``Model(inputs, outputs)``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Model:
        if cls is Model and _is_functional_call(args, kwargs):
            from tapeflow.keras.engine.functional import Functional

            return super().__new__(Functional)
        instance = super().__new__(cls)
        if type(instance).get_config is Model.get_config:  # a subclassed model's default config
            object.__setattr__(instance, "_init_config", _init_config(cls, args, kwargs))
        return instance

    def __init__(self, *args: Any, **kwargs: Any):
        if _is_functional_call(args, kwargs):
            # a subclass built as CustomModel(inputs, outputs), or calling
            # super().__init__(inputs=..., outputs=...): it becomes functional and keeps its
            # overridden methods (train_step...), as in Keras
            from tapeflow.keras.engine.functional import Functional

            if not isinstance(self, Functional):
                _inject_functional(type(self))
            Functional.__init__(self, *args, **kwargs)
            return
        if args or "inputs" in kwargs:
            raise TypeError(f"{type(self).__name__}: positional arguments and `inputs=` are "
                            "only accepted by the functional Model(inputs, outputs).")
        super().__init__(**kwargs)
        self.optimizer = None
        self.compiled_loss: compile_utils.LossesContainer | None = None
        self.compiled_metrics: compile_utils.MetricsContainer | None = None
        self.stop_training = False
        self.history: callbacks_mod.History | None = None
        self._run_eagerly = False
        self._jit_compile: bool | None = None
        self._steps_per_execution = 1
        self._train_fn = None
        self._test_fn = None
        self._predict_fn = None
        self._distribution_strategy = distribute.keras_fit.strategy_for_new_model()

    def _missing_super_message(self) -> str:
        return ("It looks like you are subclassing `Model` and you forgot to call "
                f"`super().__init__()` in {type(self).__name__}.__init__. Always start with "
                "this line.")

    # --- structure --------------------------------------------------------------------
    @property
    def layers(self) -> list:
        """Direct sub-layers, in the order they were assigned."""
        return self._flatten_layers(include_self=False, recursive=False)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A sub-layer by name or by position in ``layers``."""
        layers = self.layers
        if index is not None:
            if index >= len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in layers]}.")

    def _maybe_build(self, inputs: Any) -> None:
        if type(self).build is Model.build:
            self.built = True  # sub-layers build themselves inside call
            self._build_input_shape = nest.map_structure(  # saving's build_config
                lambda x: list(x.shape) if x.shape.rank is not None else None, inputs)
            return
        super()._maybe_build(inputs)

    def build(self, input_shape: Any) -> None:
        """Create every weight by running ``call`` once on zeros of `input_shape`."""
        if self.built:
            return
        if isinstance(input_shape, dict) or (isinstance(input_shape, (list, tuple)) and any(
                isinstance(s, (list, tuple)) or hasattr(s, "as_list") for s in input_shape)):
            raise ValueError("Model.build: only a single input shape is supported for "
                             "subclassed models; call the model on data instead.")
        self._build_input_shape = as_shape(input_shape).as_list()  # saving's build_config
        dims = [1 if d is None else d for d in self._build_input_shape]
        zeros = tf.zeros(dims, dtype=self._dtype)
        self.built = True
        self(zeros)

    def summary(self, line_length: int | None = None, positions: Any = None,
                print_fn: Any = None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range: Any = None) -> None:
        """Print the layer table with Keras's parameter counts."""
        from tapeflow.keras.engine import summary

        summary.print_summary(self, line_length=line_length, positions=positions,
                              print_fn=print_fn, expand_nested=expand_nested,
                              show_trainable=show_trainable, layer_range=layer_range)

    def _checkpoint_dependencies(self) -> list[tuple[str, Any]]:
        deps = super()._checkpoint_dependencies()
        if self.optimizer is not None:
            deps.append(("optimizer", self.optimizer))
        return deps

    # --- compile ----------------------------------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, weighted_metrics: Any = None,
                run_eagerly: bool | None = None, steps_per_execution: int | None = None,
                jit_compile: bool | None = None, **kwargs: Any) -> None:
        """Set the optimizer, loss and metrics that ``fit``/``evaluate`` use."""
        from tapeflow.keras import optimizers

        self.optimizer = optimizers.get(optimizer)
        if self._dtype_policy.name == "mixed_float16":  # Keras wraps it, as its guide says
            from tapeflow.keras.mixed_precision import LossScaleOptimizer

            if not isinstance(self.optimizer, LossScaleOptimizer):
                self.optimizer = LossScaleOptimizer(self.optimizer)
        names = getattr(self, "output_names", None)
        self.compiled_loss = compile_utils.LossesContainer(loss, loss_weights, names)
        self.compiled_metrics = compile_utils.MetricsContainer(metrics, weighted_metrics, names)
        self._run_eagerly = bool(run_eagerly)
        self._jit_compile = jit_compile
        if steps_per_execution is not None and int(steps_per_execution) < 1:
            raise ValueError(f"steps_per_execution must be >= 1, got {steps_per_execution}")
        self._steps_per_execution = int(steps_per_execution or 1)
        self._train_fn = self._test_fn = self._predict_fn = None
        self.stop_training = False
        self._distribution_strategy = (distribute.keras_fit.strategy_for_new_model()
                                       or self._distribution_strategy)

    @property
    def run_eagerly(self) -> bool:
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._run_eagerly = bool(value)
        self._train_fn = self._test_fn = self._predict_fn = None

    @property
    def jit_compile(self) -> bool | None:
        return self._jit_compile

    @jit_compile.setter
    def jit_compile(self, value: bool | None) -> None:
        self._jit_compile = value
        self._train_fn = self._test_fn = self._predict_fn = None

    @property
    def metrics(self) -> list:
        """The loss tracker and compiled metrics (created at the first batch), then metrics
        held by the model's and its layers' attributes or made by ``add_metric``; ``fit`` and
        ``evaluate`` reset them all at the start of each epoch."""
        out = []
        if self.compiled_loss is not None:
            out.extend(self.compiled_loss.metrics)
        if self.compiled_metrics is not None:
            out.extend(self.compiled_metrics.metrics)
        seen = {id(m) for m in out}
        for layer in self._flatten_layers(include_self=True):
            for m in layer._own_metrics():
                if id(m) not in seen:
                    seen.add(id(m))
                    out.append(m)
        return out

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def reset_states(self) -> None:
        """Zero the states of every stateful layer (stateful RNNs)."""
        for layer in self._flatten_layers(include_self=False):
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    def _assert_compiled(self, what: str) -> None:
        if self.optimizer is None or self.compiled_loss is None:
            raise RuntimeError(f"You must compile your model before {what}. Use "
                               "`model.compile(optimizer, loss)`.")

    # --- steps ------------------------------------------------------------------------
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None) -> Any:
        """Compiled loss plus the model's regularization losses."""
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict:
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data: Any) -> dict:
        """One optimization step on a batch; returns the metric results."""
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict:
        """Loss and metrics on a batch, without updating weights."""
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        x, _, _ = data_adapter.unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _compiled(self, step: Any) -> Any:
        """`step` as a traced function, or as is when running eagerly. Shapes are relaxed
        (``reduce_retracing``) so a smaller last batch shares a trace with a None batch dim
        instead of retracing every epoch."""
        function = getattr(tf, "function", None)
        if self._run_eagerly or function is None:
            return step
        return function(step, reduce_retracing=True, jit_compile=self._jit_compile)

    def make_train_function(self) -> Any:
        if self._train_fn is None:
            self._train_fn = self._compiled(self.train_step)
        return self._train_fn

    def make_test_function(self) -> Any:
        if self._test_fn is None:
            self._test_fn = self._compiled(self.test_step)
        return self._test_fn

    def make_predict_function(self) -> Any:
        if self._predict_fn is None:
            self._predict_fn = self._compiled(self.predict_step)
        return self._predict_fn

    # --- loops ------------------------------------------------------------------------
    def _callback_list(self, callbacks: Any, verbose: int, add_history: bool,
                       **params: Any) -> callbacks_mod.CallbackList:
        cbs = list(callbacks or [])
        # Keras's order: progress bar first, History last (it sees what others add to logs)
        if verbose and not any(isinstance(c, callbacks_mod.ProgbarLogger) for c in cbs):
            cbs.insert(0, callbacks_mod.ProgbarLogger(verbose=verbose))
        if add_history:
            cbs.append(callbacks_mod.History())
        return callbacks_mod.CallbackList(cbs, model=self, verbose=verbose, **params)

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Any = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool = True, class_weight: dict | None = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: Any = 1,
            max_queue_size: int = 10, workers: int = 1,
            use_multiprocessing: bool = False) -> callbacks_mod.History:
        """Train for `epochs` epochs; returns a History of per-epoch logs."""
        self._assert_compiled("training/testing")
        verbose = 1 if verbose == "auto" else int(verbose)
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = data_adapter.train_validation_split(
                (x, y, sample_weight), validation_split)
        dist = distribute.keras_fit.training_hooks(self)  # multi-worker: shards, chief logs
        x = distribute.keras_fit.fit_input(self, x, steps_per_epoch)  # DatasetCreator
        data = dist.data(data_adapter.DataHandler(
            x, y, sample_weight, batch_size, steps_per_epoch, shuffle=shuffle,
            class_weight=class_weight, model=self, workers=workers,
            use_multiprocessing=use_multiprocessing, max_queue_size=max_queue_size))
        callbacks, verbose = dist.callbacks(callbacks, verbose)
        cbs = self._callback_list(callbacks, verbose, True, epochs=epochs, steps=data.steps)
        train_fn = dist.step(self.make_train_function())
        per_execution = self._steps_per_execution
        self.stop_training = False
        cbs.on_train_begin()
        initial_epoch = self.__dict__.pop("_resume_at_epoch", initial_epoch)  # BackupAndRestore
        done_steps = self.__dict__.pop("_resume_at_step", 0)  # ... backed up mid-epoch
        logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            step, reported = -1, -1
            for step, batch in enumerate(data.epoch()):
                if step < done_steps:  # run before the backup this fit resumed from
                    continue
                # with steps_per_execution=N, callbacks see one batch per N steps, as in Keras
                if step % per_execution == 0:
                    cbs.on_train_batch_begin(step)
                logs = dist.logs({k: _to_float(v) for k, v in _run_step(train_fn, batch).items()})
                if (step + 1) % per_execution == 0:
                    cbs.on_train_batch_end(step, logs)
                    reported = step
                if self.stop_training:
                    break
            if step < 0:
                if data.is_stream and epoch > initial_epoch:
                    warnings.warn("Your input ran out of data; interrupting training. Make "
                                  "sure that your generator can produce at least "
                                  "`steps_per_epoch * epochs` batches.", stacklevel=2)
                    break
                raise ValueError("fit: the training data produced no batches. Check that "
                                 "x is not empty (and that a Dataset is not exhausted).")
            if reported != step:
                cbs.on_train_batch_end(step, logs)
            done_steps = 0
            epoch_logs = dict(logs)
            if validation_data is not None and _validate_now(epoch, validation_freq):
                val_logs = self._evaluate_data(validation_data, validation_batch_size or
                                               batch_size, validation_steps, cbs)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return self.history

    def _evaluate_data(self, validation_data: Any, batch_size: int | None,
                       steps: int | None, cbs: Any) -> dict:
        if data_adapter.is_batch_source(validation_data):
            vx, vy, vsw = validation_data, None, None
        else:
            vx, vy, vsw = data_adapter.unpack_x_y_sample_weight(validation_data)
        data = data_adapter.DataHandler(vx, vy, vsw, batch_size, steps, model=self)
        return self._test_loop(data, cbs)

    def _test_loop(self, data: data_adapter.DataHandler, cbs: Any) -> dict:
        dist = distribute.keras_fit.training_hooks(self)
        data = dist.data(data)
        test_fn = dist.step(self.make_test_function())
        self.reset_metrics()
        cbs.on_test_begin()
        logs: dict = {}
        for step, batch in enumerate(data.epoch()):
            cbs.on_test_batch_begin(step)
            logs = dist.logs({k: _to_float(v) for k, v in _run_step(test_fn, batch).items()})
            cbs.on_test_batch_end(step, logs)
        cbs.on_test_end(logs)
        return logs

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
                 callbacks: Any = None, max_queue_size: int = 10, workers: int = 1,
                 use_multiprocessing: bool = False, return_dict: bool = False) -> Any:
        """Loss (and metrics) over the data: a scalar, a list, or a dict."""
        self._assert_compiled("training/testing")
        verbose = 1 if verbose == "auto" else int(verbose)
        data = data_adapter.DataHandler(x, y, sample_weight, batch_size, steps, model=self,
                                        workers=workers, max_queue_size=max_queue_size)
        callbacks, verbose = distribute.keras_fit.training_hooks(self).callbacks(callbacks,
                                                                                 verbose)
        cbs = self._callback_list(callbacks, verbose, False, steps=data.steps, is_evaluate=True)
        logs = self._test_loop(data, cbs)
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                steps: int | None = None, callbacks: Any = None, max_queue_size: int = 10,
                workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """Model outputs over the data, batch by batch, concatenated as NumPy arrays."""
        verbose = 1 if verbose == "auto" else int(verbose)
        data = data_adapter.DataHandler(x, None, None, batch_size, steps, model=self,
                                        workers=workers, max_queue_size=max_queue_size)
        cbs = self._callback_list(callbacks, verbose, False, steps=data.steps)
        predict_fn = self.make_predict_function()
        cbs.on_predict_begin()
        outputs: list = []
        for step, batch in enumerate(data.epoch()):
            cbs.on_predict_batch_begin(step)
            out = _run_step(predict_fn, batch)
            outputs.append(nest.map_structure(_to_numpy_or_composite, out))
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict: the input produced no batches.")
        flat = [nest.flatten(o) for o in outputs]
        joined = [_concat_batches(parts) for parts in zip(*flat)]
        return nest.pack_sequence_as(outputs[0], joined)

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: dict | None = None, reset_metrics: bool = True,
                       return_dict: bool = False) -> Any:
        """One optimization step on one batch; returns its loss (and metrics)."""
        self._assert_compiled("training/testing")
        data = data_adapter.DataHandler(x, y, sample_weight, batch_size=None, shuffle=False,
                                        class_weight=class_weight, model=self)
        data._batch_size = data._n if data._source is None else None
        data.steps = 1
        if reset_metrics:
            self.reset_metrics()
        logs = {k: _to_float(v) for k, v in _run_step(self.make_train_function(),
                                                        next(iter(data.epoch()))).items()}
        return self._logs_result(logs, return_dict)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """Loss (and metrics) on one batch, without updating weights."""
        self._assert_compiled("training/testing")
        data = data_adapter.DataHandler(x, y, sample_weight, batch_size=None, model=self)
        data._batch_size = data._n
        data.steps = 1
        if reset_metrics:
            self.reset_metrics()
        logs = {k: _to_float(v) for k, v in _run_step(self.make_test_function(),
                                                        next(iter(data.epoch()))).items()}
        return self._logs_result(logs, return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """Model outputs on one batch, as NumPy arrays."""
        data = data_adapter.DataHandler(x, None, None, batch_size=None, model=self)
        data._batch_size = data._n
        data.steps = 1
        (batch,) = data.epoch()
        out = _run_step(self.make_predict_function(), batch)
        return nest.map_structure(lambda t: np.asarray(t), out)

    def _logs_result(self, logs: dict, return_dict: bool) -> Any:
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    # --- weights on disk --------------------------------------------------------------
    def save(self, filepath: Any, overwrite: bool = True, include_optimizer: bool = True,
             save_format: str | None = None, signatures: Any = None, options: Any = None,
             **kwargs: Any) -> None:
        """Save the model: ``.keras`` (zip), ``.h5`` (Keras 2 HDF5) or a SavedModel directory."""
        from tapeflow.keras.saving import saving_api

        saving_api.save_model(self, filepath, overwrite, include_optimizer, save_format,
                              signatures=signatures)

    def to_json(self, **kwargs: Any) -> str:
        """The model's architecture as Keras JSON (``tf.keras.models.model_from_json``)."""
        from tapeflow.keras.saving import saving_api

        return saving_api.model_to_json(self, **kwargs)

    def save_weights(self, filepath: str, overwrite: bool = True, save_format: Any = None,
                     options: Any = None) -> str:
        """Write every variable: HDF5 for ``*.h5`` paths, else a tapeflow checkpoint."""
        from tapeflow.keras.saving import saving_api
        from tapeflow.train import checkpoint

        if saving_api.save_weights(self, filepath, save_format):
            return str(filepath)
        return checkpoint.save_object(self, str(filepath))

    def load_weights(self, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                     options: Any = None) -> Any:
        """Restore variables saved by ``save_weights`` (HDF5 from tapeflow or Keras, or a
        checkpoint, deferred into unbuilt layers)."""
        from tapeflow.keras.saving import saving_api
        from tapeflow.train import checkpoint

        if saving_api.load_weights(self, filepath, by_name, skip_mismatch):
            return None
        return checkpoint.restore_into(self, str(filepath))

    def get_config(self) -> dict:
        """tf-keras's default config of a subclassed model: the arguments its constructor was
        called with, when they are plain values (else ``{}``, with tf-keras's warning); name,
        trainable and dtype only where ``__init__`` names them or takes ``**kwargs``.
        (An override calling ``super().get_config()`` starts from name and trainable.)"""
        if type(self).get_config is not Model.get_config:
            return {"name": self.name, "trainable": self.trainable}
        captured = self.__dict__.get("_init_config")
        if captured is None:
            warnings.warn("Model's `__init__()` arguments contain non-serializable objects. "
                          "Please implement a `get_config()` method in the subclassed Model "
                          "for proper saving and loading. Defaulting to empty config.",
                          stacklevel=2)
            return {}
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        own = set(config)
        config.update(captured)
        spec = inspect.getfullargspec(type(self).__init__)
        if spec.varkw != "kwargs":
            for key in own - set(spec.args[1:]):
                config.pop(key, None)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Model:
        try:
            return cls(**config)
        except TypeError as e:
            raise TypeError(
                f"Unable to revive model from config. When overriding the `get_config()` "
                f"method, make sure that the returned config contains all items used as "
                f"arguments in the  constructor to {cls}, which is the default behavior. You "
                f"can override this default behavior by defining a `from_config(cls, config)` "
                f"class method to specify how to create an instance of {cls.__name__} from its "
                f"config.\n\nReceived config={config}\n\nError encountered during "
                f"deserialization: {e}") from e


def _to_numpy_or_composite(t: Any) -> Any:
    """A predicted batch as NumPy; a RaggedTensor (or other composite) stays as it is."""
    from tapeflow.framework.composite import CompositeTensor

    return t if isinstance(t, CompositeTensor) else np.asarray(t)


def _concat_batches(parts: list) -> Any:
    """predict's batches joined along the batch axis (RaggedTensors with tf.concat, as
    tf-keras returns a RaggedTensor for a ragged output)."""
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts, axis=0)
    import tapeflow  # the public concat: its composite dispatch

    return tapeflow.concat(list(parts), 0) if len(parts) > 1 else parts[0]

