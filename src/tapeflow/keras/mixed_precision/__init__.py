"""``tf.keras.mixed_precision``: dtype policies (float16/bfloat16 compute, float32 variables)
and loss scaling. See docs/mixed_precision.md."""

import types

from tapeflow.keras.mixed_precision.autocast_variable import AutoCastVariable
from tapeflow.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer
from tapeflow.keras.mixed_precision.policy import Policy, global_policy, set_global_policy

# Keras 2.3-2.8 spelled these under `experimental` (set_policy / global_policy)
experimental = types.ModuleType("tapeflow.keras.mixed_precision.experimental",
                                "Keras 2's older names for the mixed precision API.")
experimental.Policy = Policy
experimental.LossScaleOptimizer = LossScaleOptimizer
experimental.global_policy = global_policy
experimental.set_policy = set_global_policy

__all__ = ["AutoCastVariable", "LossScaleOptimizer", "Policy", "global_policy",
           "set_global_policy"]
