"""What benches/sot_models.py's models use of ``paddle.nn.functional``, in numpy, with the
same signatures: the models call ``F.relu(x)`` and so on, F being this module or paddle's."""

import math

import numpy as np


def relu(x):
    return np.maximum(x, 0.0)


def gelu(x, approximate=False):
    # Always the tanh approximation: numpy has no erf.
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def softmax(x, axis=-1):
    exps = np.exp(x - x.max(axis=axis, keepdims=True))
    return exps / exps.sum(axis=axis, keepdims=True)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-5):
    axes = tuple(range(-len(normalized_shape), 0))
    centered = x - x.mean(axis=axes, keepdims=True)
    y = centered / np.sqrt((centered * centered).mean(axis=axes, keepdims=True) + epsilon)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
