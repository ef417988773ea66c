"""The optimizer cases recorded from tf-keras (reference/make_optimizer_values.py) and checked on
tapeflow (test_optimizers_keras2.py): five steps on 0.5 * sum(A x^2) + sum(B x) from X0."""

import numpy as np

A = np.array([[1.0, 0.5, -2.0], [3.0, -0.25, 0.75]], np.float32)
B = np.array([[0.3, -1.2, 0.1], [-0.5, 0.8, 2.0]], np.float32)
X0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
FTRL_ALL = dict(learning_rate_power=-0.7, l1_regularization_strength=0.05,
                l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.02,
                beta=0.3, initial_accumulator_value=0.2)
CASES = {  # name: (namespace, class, kwargs); the test builds the same optimizers
    "legacy_nadam": ("legacy", "Nadam", dict(learning_rate=0.1)),
    "legacy_adamax": ("legacy", "Adamax", dict(learning_rate=0.1)),
    "legacy_adadelta": ("legacy", "Adadelta", dict(learning_rate=1.0)),
    "legacy_ftrl": ("legacy", "Ftrl", dict(learning_rate=0.1)),
    "legacy_ftrl_all": ("legacy", "Ftrl", dict(learning_rate=0.1, **FTRL_ALL)),
    "nadam": ("", "Nadam", dict(learning_rate=0.1)),
    "adamax": ("", "Adamax", dict(learning_rate=0.1)),
    "adadelta": ("", "Adadelta", dict(learning_rate=1.0)),
    "ftrl": ("", "Ftrl", dict(learning_rate=0.1)),
    "adamw": ("", "AdamW", dict(learning_rate=0.1, weight_decay=0.05)),
    "adamw_amsgrad": ("", "AdamW", dict(learning_rate=0.1, weight_decay=0.05, amsgrad=True)),
    "adam": ("", "Adam", dict(learning_rate=0.1)),
    "rmsprop": ("", "RMSprop", dict(learning_rate=0.05, momentum=0.5, centered=True)),
    "adagrad": ("", "Adagrad", dict(learning_rate=0.1)),
    "sgd": ("", "SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
}
