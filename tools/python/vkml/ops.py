"""Operators one at a time on NumPy arrays: the layer-by-layer API, for tests and prototypes.

    y = vkml.ops.conv(x, w, b, pads=[1, 1, 1, 1], activation="relu")
    y = vkml.ops.run("Softmax", x, axis=1)               # any operator vkml runs, ONNX attributes
    values, indices = vkml.ops.run("TopK", x, np.array([3]), outputs=2)

Every call builds the operator for its shapes (pipelines are cached on disk, so this is cheap
after the first time), runs it on the GPU and waits. float32 arrays run in f32 storage, float16
arrays in f16 storage; arithmetic is f32 either way. vkml.ops.supported() lists the operators.
"""
from . import _vkml

__all__ = ["conv", "run", "supported"]


def conv(x, w, b=None, *, strides=None, pads=None, dilations=None, group=1, auto_pad="NOTSET",
         activation=None, alpha=0.0, beta=0.0, residual=None, device=None):
    """ONNX Conv (NCHW, or NCW for 1-D) through vkml::ops::Conv, with vkml's fused extras:
    y = activation(conv(x, w) + b + residual). activation: None or a name such as "relu",
    "leaky_relu" (alpha), "clip" (alpha = min, beta = max), "sigmoid", "hard_swish", "silu",
    "gelu", "tanh", "elu", "mish". Every array has x's dtype, float32 or float16."""
    return _vkml._op_conv(x, w, b, strides, pads, dilations, group, auto_pad, activation, alpha, beta,
                          residual, device)


def run(op_type, *inputs, outputs=1, constants=(), opset=18, device=None, **attributes):
    """Runs the ONNX operator `op_type` on `inputs` (numpy arrays; None for an omitted optional
    input) with ONNX `attributes`, through a one-node model and a vkml session. Integer inputs
    (shapes, axes, pads, K) become constants, as vkml builds operators for fixed parameters; list
    other inputs that must be constant (e.g. Resize's float scales) by index in `constants`.
    Returns one array, or a tuple when outputs > 1."""
    return _vkml._op_run(op_type, list(inputs), attributes, outputs, list(constants), opset, device)


def supported():
    """The operators vkml supports: dicts of type, family, dtypes and notes (docs/ops.md)."""
    return _vkml._op_registry()
