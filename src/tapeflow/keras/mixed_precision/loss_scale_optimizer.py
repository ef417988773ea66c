"""``tf.keras.mixed_precision.LossScaleOptimizer``: dynamic loss scaling around an optimizer.

float16 gradients of small losses underflow to zero. Multiplying the loss by a large scale
(2**15 to start) before differentiating, and dividing the gradients by it afterwards, keeps
them representable. Dynamic scaling halves the scale (not below 1) and skips the update when a
gradient is inf/NaN, and doubles it after ``dynamic_growth_steps`` finite steps in a row. The
decision is a ``tf.cond``, so it works inside a traced train step. Keras 2 semantics: a skipped
step still counts in ``iterations``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.framework.context import eager_scope
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, recorded_loss


class LossScaleOptimizer(Optimizer):
    """Wraps `inner_optimizer`; ``minimize`` (used by ``fit``) scales the loss and unscales
    the gradients itself, a custom loop calls ``get_scaled_loss`` / ``get_unscaled_gradients``."""

    def __init__(self, inner_optimizer: Optimizer, dynamic: bool = True,
                 initial_scale: float | None = None, dynamic_growth_steps: int | None = None):
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f'"inner_optimizer" must be an instance of '
                            f'`tf.keras.optimizers.Optimizer`, but got: {inner_optimizer}.')
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer")
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, '
                            f'but got: {dynamic!r}')
        if dynamic:
            initial_scale = 2.0 ** 15 if initial_scale is None else initial_scale
            dynamic_growth_steps = 2000 if dynamic_growth_steps is None else dynamic_growth_steps
            if dynamic_growth_steps < 1:
                raise ValueError(f'"dynamic_growth_steps" must be positive, got '
                                 f'{dynamic_growth_steps}')
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, '
                                 f'but got: {dynamic_growth_steps}')
        if initial_scale <= 0 or not np.isfinite(initial_scale):
            raise ValueError(f'"initial_scale" must be a positive finite number, got '
                             f'{initial_scale}')
        self._optimizer = inner_optimizer
        self._dynamic = dynamic
        self._initial_scale = float(initial_scale)
        self._growth_steps = dynamic_growth_steps
        name = inner_optimizer.name
        with eager_scope():
            self._loss_scale = Variable(np.float32(initial_scale), trainable=False,
                                        name=f"{name}/loss_scale")
            self._counter = Variable(np.int64(0), trainable=False,
                                     name=f"{name}/good_steps") if dynamic else None

    def __getattr__(self, name: str) -> Any:
        # attributes the wrapper does not define (slots, clipping...) are the inner optimizer's
        if name.startswith("__") or name == "_optimizer":
            raise AttributeError(name)
        return getattr(self._optimizer, name)

    # --- the loss scale ----------------------------------------------------------------------
    @property
    def inner_optimizer(self) -> Optimizer:
        return self._optimizer

    @property
    def dynamic(self) -> bool:
        return self._dynamic

    @property
    def loss_scale(self) -> Any:
        """The current scale, a float32 scalar tensor."""
        return self._loss_scale.read_value()

    @property
    def dynamic_counter(self) -> Variable | None:
        """Finite steps since the scale last changed (None when not dynamic)."""
        return self._counter

    @property
    def initial_scale(self) -> float:
        return self._initial_scale

    @property
    def dynamic_growth_steps(self) -> int | None:
        return self._growth_steps

    def get_scaled_loss(self, loss: Any) -> Any:
        """`loss` times the scale (in the loss's dtype); a callable gives a callable."""
        if callable(loss):
            return lambda: self.get_scaled_loss(loss())
        loss = tf.convert_to_tensor(loss)
        return loss * tf.cast(self._loss_scale, loss.dtype)

    def get_unscaled_gradients(self, grads: list) -> list:
        """Each gradient divided by the scale (None stays None)."""
        inverse = 1.0 / self._loss_scale
        return [None if g is None else g * tf.cast(inverse, g.dtype) for g in grads]

    # --- optimizer API -----------------------------------------------------------------------
    @property
    def iterations(self) -> Variable:
        return self._optimizer.iterations

    @iterations.setter
    def iterations(self, value: Any) -> None:
        self._optimizer.iterations = value

    @property
    def learning_rate(self) -> Any:
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._optimizer.learning_rate = value

    lr = learning_rate

    @property
    def name(self) -> str:
        return self._optimizer.name

    def minimize(self, loss: Any, var_list: Any, grad_loss: Any = None, name: str | None = None,
                 tape: Any = None) -> Any:
        """Scale the loss, differentiate, unscale, apply (skipping non-finite steps)."""
        tape, loss, var_list = recorded_loss(loss, var_list, tape)
        with tape:
            scaled = self.get_scaled_loss(loss)
        grads = self.get_unscaled_gradients(tape.gradient(scaled, var_list, grad_loss))
        return self.apply_gradients(zip(grads, var_list), name=name)

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None,
                        experimental_aggregate_gradients: bool = True, **kwargs: Any) -> Any:
        """Apply unscaled gradients; with dynamic scaling, update the scale and skip the step
        (counting it in ``iterations``) when any gradient is inf or NaN."""
        pairs = list(grads_and_vars)
        inner = self._optimizer
        if not self._dynamic:
            return inner.apply_gradients(pairs, name=name, experimental_aggregate_gradients=
                                         experimental_aggregate_gradients, **kwargs)
        grads = [g for g, _ in pairs if g is not None]
        finite = tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(g)) for g in grads]))
        self._update_scale(finite)

        def apply_fn() -> Any:
            inner.apply_gradients(pairs, name=name, experimental_aggregate_gradients=
                                  experimental_aggregate_gradients, **kwargs)
            return tf.identity(inner.iterations)

        def skip_fn() -> Any:
            inner.iterations.assign_add(np.int64(1))
            return tf.identity(inner.iterations)

        return tf.cond(finite, apply_fn, skip_fn)

    def _update_scale(self, finite: Any) -> None:
        scale, counter, steps = self._loss_scale, self._counter, self._growth_steps

        def grow() -> Any:
            doubled = scale * 2.0
            scale.assign(tf.where(tf.math.is_finite(doubled), doubled, scale))
            counter.assign(np.int64(0))
            return tf.identity(counter)

        def count() -> Any:
            counter.assign_add(np.int64(1))
            return tf.identity(counter)

        def on_finite() -> Any:
            return tf.cond(counter + np.int64(1) >= np.int64(steps), grow, count)

        def on_overflow() -> Any:
            scale.assign(tf.math.maximum(scale / 2.0, 1.0))
            counter.assign(np.int64(0))
            return tf.identity(counter)

        tf.cond(finite, on_finite, on_overflow)

    # --- state and config: slots are the inner optimizer's ------------------------------------
    def add_slot(self, var: Variable, slot_name: str, initializer: Any = "zeros") -> Variable:
        return self._optimizer.add_slot(var, slot_name, initializer)

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        return self._optimizer.get_slot(var, slot_name)

    def get_slot_names(self) -> list[str]:
        return self._optimizer.get_slot_names()

    def _active_slots(self) -> tuple[str, ...]:
        return self._optimizer._active_slots()

    def _create_slots(self, var: Variable) -> dict[str, Variable]:
        return self._optimizer._create_slots(var)

    def variables(self) -> list[Variable]:
        extra = [self._loss_scale] + ([self._counter] if self._counter is not None else [])
        return self._optimizer.variables() + extra

    @property
    def weights(self) -> list[Variable]:
        return self.variables()

    def _checkpoint_dependencies(self) -> list[tuple[str, Any]]:
        deps: list[tuple[str, Any]] = [("inner_optimizer", self._optimizer),
                                       ("loss_scale", self._loss_scale)]
        if self._counter is not None:
            deps.append(("good_steps", self._counter))
        return deps

    def _checkpoint_slots(self) -> Any:
        return iter(())

    def get_config(self) -> dict[str, Any]:
        from tapeflow.keras import optimizers

        return {"inner_optimizer": optimizers.serialize(self._optimizer),
                "dynamic": self._dynamic, "initial_scale": self._initial_scale,
                "dynamic_growth_steps": self._growth_steps}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None
                    ) -> LossScaleOptimizer:
        from tapeflow.keras import optimizers

        config = dict(config)
        config["inner_optimizer"] = optimizers.deserialize(config["inner_optimizer"],
                                                           custom_objects)
        return cls(**config)

    def __repr__(self) -> str:
        return (f"<LossScaleOptimizer inner={self._optimizer!r} "
                f"loss_scale={float(self._loss_scale.numpy())}>")
