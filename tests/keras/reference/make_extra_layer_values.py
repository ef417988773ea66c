"""Records tf-keras 2.21 outputs and gradients of the layers in tests/keras/test_layers_extra.py.

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow), from the repository root:
    TF_USE_LEGACY_KERAS=1 python tests/keras/reference/make_extra_layer_values.py
Writes tests/keras/reference/extra_layer_values.npz: per case, the inputs, the weights (drawn
here, set on the layer), the output, and the gradients of sum(output * cotangent) w.r.t. the
inputs and each weight. CASES is imported by the test, so both build the same layers.
"""

import os

import numpy as np

# name: (layer class, constructor kwargs, input shapes: one, or a list for merge layers)
CASES = {
    "depthwise_valid": ("DepthwiseConv2D", {"kernel_size": 3, "depth_multiplier": 2},
                        (2, 6, 5, 3)),
    "depthwise_same_stride": ("DepthwiseConv2D", {"kernel_size": (3, 2), "strides": 2,
                                                  "padding": "same"}, (2, 7, 6, 2)),
    "depthwise_dilated": ("DepthwiseConv2D", {"kernel_size": 2, "dilation_rate": 2,
                                              "padding": "same", "activation": "tanh"},
                          (1, 5, 5, 2)),
    "depthwise1d": ("DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2,
                                        "padding": "same"}, (2, 7, 3)),
    "separable2d": ("SeparableConv2D", {"filters": 4, "kernel_size": 3, "depth_multiplier": 2,
                                        "padding": "same", "strides": 2}, (2, 6, 6, 3)),
    "separable1d": ("SeparableConv1D", {"filters": 3, "kernel_size": 2, "dilation_rate": 2},
                    (2, 8, 2)),
    "conv1d_transpose": ("Conv1DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2},
                         (2, 5, 2)),
    "conv1d_transpose_same": ("Conv1DTranspose", {"filters": 2, "kernel_size": 4, "strides": 2,
                                                  "padding": "same", "output_padding": 1},
                              (2, 4, 3)),
    "dot_2d": ("Dot", {"axes": 1}, [(3, 4), (3, 4)]),
    "dot_3d": ("Dot", {"axes": (2, 2)}, [(2, 3, 4), (2, 5, 4)]),
    "dot_3d_mixed": ("Dot", {"axes": (1, 2), "normalize": True}, [(2, 3, 4), (2, 5, 3)]),
    "prelu": ("PReLU", {}, (2, 3, 4)),
    "prelu_shared": ("PReLU", {"shared_axes": [1, 2]}, (2, 3, 3, 4)),
    "thresholded_relu": ("ThresholdedReLU", {"theta": 0.5}, (3, 5)),
    "unit_norm": ("UnitNormalization", {}, (3, 5)),
    "unit_norm_axes": ("UnitNormalization", {"axis": [1, 2]}, (2, 3, 4)),
    "group_norm": ("GroupNormalization", {"groups": 2}, (2, 3, 3, 4)),
    "group_norm_seq": ("GroupNormalization", {"groups": 3, "epsilon": 0.01}, (2, 5, 6)),
    "cropping1d": ("Cropping1D", {"cropping": (1, 2)}, (2, 6, 3)),
    "upsampling1d": ("UpSampling1D", {"size": 3}, (2, 3, 2)),
    "zeropadding1d": ("ZeroPadding1D", {"padding": (2, 1)}, (2, 3, 2)),
    "conv3d": ("Conv3D", {"filters": 3, "kernel_size": (2, 3, 2)}, (2, 4, 5, 4, 2)),
    "conv3d_same_stride": ("Conv3D", {"filters": 2, "kernel_size": 3, "strides": (2, 1, 2),
                                      "padding": "same", "activation": "relu"}, (1, 5, 4, 5, 2)),
    "conv3d_dilated": ("Conv3D", {"filters": 2, "kernel_size": 2, "dilation_rate": (2, 1, 1),
                                  "padding": "same"}, (1, 5, 3, 3, 2)),
    "conv3d_transpose": ("Conv3DTranspose", {"filters": 2, "kernel_size": (3, 2, 2),
                                             "strides": 2}, (2, 3, 2, 3, 3)),
    "conv3d_transpose_same": ("Conv3DTranspose", {"filters": 3, "kernel_size": 3,
                                                  "strides": (2, 1, 2), "padding": "same",
                                                  "output_padding": (1, 0, 0)},
                              (1, 3, 3, 2, 2)),
    "maxpool3d": ("MaxPooling3D", {"pool_size": 2}, (2, 4, 5, 4, 2)),
    "maxpool3d_same": ("MaxPooling3D", {"pool_size": (3, 2, 2), "strides": 2,
                                        "padding": "same"}, (1, 5, 5, 3, 2)),
    "avgpool3d": ("AveragePooling3D", {"pool_size": (2, 2, 1)}, (2, 4, 4, 3, 2)),
    "avgpool3d_same": ("AveragePooling3D", {"pool_size": 3, "strides": (2, 2, 1),
                                            "padding": "same"}, (1, 5, 4, 3, 2)),
    "global_avg3d": ("GlobalAveragePooling3D", {}, (2, 3, 2, 2, 3)),
    "global_max3d": ("GlobalMaxPooling3D", {"keepdims": True}, (2, 3, 2, 2, 3)),
    "upsampling3d": ("UpSampling3D", {"size": (2, 1, 3)}, (1, 2, 3, 2, 2)),
    "zeropadding3d": ("ZeroPadding3D", {"padding": ((1, 0), (0, 2), (1, 1))}, (1, 2, 2, 3, 2)),
    "cropping3d": ("Cropping3D", {"cropping": ((1, 0), (0, 1), 1)}, (1, 3, 4, 4, 2)),
    "conv_lstm2d": ("ConvLSTM2D", {"filters": 2, "kernel_size": 3}, (2, 3, 5, 4, 2)),
    "conv_lstm2d_seq": ("ConvLSTM2D", {"filters": 3, "kernel_size": (2, 3), "padding": "same",
                                       "strides": (2, 1), "return_sequences": True,
                                       "go_backwards": True, "activation": "relu",
                                       "recurrent_activation": "sigmoid"}, (1, 4, 4, 3, 2)),
    "conv_lstm1d": ("ConvLSTM1D", {"filters": 2, "kernel_size": 2, "padding": "same",
                                   "return_sequences": True}, (2, 3, 5, 2)),
    "conv_lstm3d": ("ConvLSTM3D", {"filters": 2, "kernel_size": (2, 2, 1),
                                   "strides": (1, 2, 1)}, (1, 2, 3, 4, 2, 2)),
}
PATH = os.path.join(os.path.dirname(__file__), "extra_layer_values.npz")


def main() -> None:
    import tensorflow as tf
    import tf_keras as keras

    rng = np.random.default_rng(0)
    out = {}
    for name, (cls, kwargs, shapes) in CASES.items():
        multi = isinstance(shapes, list)
        xs = [rng.standard_normal(s).astype(np.float32) for s in (shapes if multi else [shapes])]
        layer = getattr(keras.layers, cls)(**kwargs)
        layer.build([x.shape for x in xs] if multi else xs[0].shape)
        weights = [rng.standard_normal(w.shape).astype(np.float32) * 0.5
                   for w in layer.get_weights()]
        layer.set_weights(weights)
        ts = [tf.constant(x) for x in xs]
        with tf.GradientTape() as tape:
            tape.watch(ts)
            y = layer(ts if multi else ts[0])
            cot = tf.constant(rng.standard_normal(y.shape).astype(np.float32))
            s = tf.reduce_sum(y * cot)
        grads = tape.gradient(s, ts + layer.trainable_weights)
        for i, x in enumerate(xs):
            out[f"{name}/x{i}"] = x
            out[f"{name}/dx{i}"] = grads[i].numpy()
        for i, w in enumerate(weights):
            out[f"{name}/w{i}"] = w
            out[f"{name}/dw{i}"] = grads[len(xs) + i].numpy()
        out[f"{name}/y"], out[f"{name}/cot"] = y.numpy(), cot.numpy()
    np.savez_compressed(PATH, **out)


if __name__ == "__main__":
    main()
