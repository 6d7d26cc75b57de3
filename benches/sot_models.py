"""Python-heavy array workloads on small arrays, for benches/sot_workloads.py: the kind of
model code dynamic-to-static translation exists for. The models are written once against a
functional module ``F`` (benches/numpy_functional.py, or ``paddle.nn.functional``) and
operators, their tensors made by a ``to_tensor`` function, so that framehook's translator
runs them on numpy arrays and Paddle's SOT the same code on paddle tensors.

- ``mlp``: a model forward looping over a list of blocks, each reading its configuration
  (where to normalise, which activation, whether to add the residual) and branching on
  it, collecting intermediate tuples and returning a dict;
- ``adam``: an Adam step over a list of parameters, with per-parameter state in dicts;
- ``attention``: a small pre-norm multi-head self-attention block, softmax(q kᵀ / √d) v;
- ``dense``: six dense layers over a list, ``x = x + relu(x @ w + b)`` each, on a 2x8 input:
  a graph of matrix products and elementwise operations only, the arithmetic under a
  microsecond, so that what a graph's execution costs beside its operations shows.

Layers derive from ``Module``, whose ``__call__`` runs forward hooks around ``forward`` as
the layer base classes of deep-learning frameworks do.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np


class Init:
    """Makes a model's parameters: seeded numpy values, as tensors of the library at hand."""

    def __init__(self, to_tensor: Callable[[np.ndarray], Any], seed: int = 0):
        self.to_tensor = to_tensor
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape: int, std: float = 1.0) -> Any:
        return self.to_tensor((self.rng.standard_normal(shape) * std).astype(np.float32))

    def full(self, value: float, *shape: int) -> Any:
        return self.to_tensor(np.full(shape, value, dtype=np.float32))


# ------------------------------------------------------------------ layers


class Module:
    """A layer: calling it runs its forward pre-hooks, ``forward``, then its forward hooks."""

    def __init__(self):
        self.training = False
        self._forward_pre_hooks = {}
        self._forward_hooks = {}

    def __call__(self, *args, **kwargs):
        for hook in self._forward_pre_hooks.values():
            replaced = hook(self, args)
            if replaced is not None:
                args = replaced if isinstance(replaced, tuple) else (replaced,)
        result = self.forward(*args, **kwargs)
        for hook in self._forward_hooks.values():
            replaced = hook(self, args, result)
            if replaced is not None:
                result = replaced
        return result


class Linear(Module):
    def __init__(self, init, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = init.normal(in_features, out_features, std=1.0 / math.sqrt(in_features))
        self.bias = init.full(0.0, out_features) if bias else None

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected {self.in_features} features, got {x.shape[-1]}")
        y = x @ self.weight
        if self.bias is not None:
            y = y + self.bias
        return y


class LayerNorm(Module):
    def __init__(self, init, F, dim, eps=1e-5):
        super().__init__()
        self.F = F
        self.normalized_shape = (dim,)
        self.eps = eps
        self.weight = init.full(1.0, dim)
        self.bias = init.full(0.0, dim)

    def forward(self, x):
        return self.F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


# ------------------------------------------------------------------ the MLP


class MLPConfig:
    def __init__(self, dim=16, hidden=32, depth=4, classes=4, activation="gelu", norm="pre", residual=True,
                 norm_eps=1e-5, output_hidden_states=True, return_dict=True):
        self.dim = dim
        self.hidden = hidden
        self.depth = depth
        self.classes = classes
        self.activation = activation
        self.norm = norm  # "pre", "post" or None
        self.residual = residual
        self.norm_eps = norm_eps
        self.output_hidden_states = output_hidden_states
        self.return_dict = return_dict


class FeedForwardBlock(Module):
    def __init__(self, init, F, config, index):
        super().__init__()
        self.F = F
        self.config = config
        self.index = index
        self.norm = LayerNorm(init, F, config.dim, config.norm_eps) if config.norm else None
        self.up = Linear(init, config.dim, config.hidden)
        self.down = Linear(init, config.hidden, config.dim)

    def activation(self, x):
        name = self.config.activation
        if name == "relu":
            return self.F.relu(x)
        if name == "gelu":
            return self.F.gelu(x, approximate=True)
        raise ValueError(f"unknown activation {name!r}")

    def forward(self, x):
        config = self.config
        residual = x
        if config.norm == "pre":
            x = self.norm(x)
        hidden = self.activation(self.up(x))
        out = self.down(hidden)
        if config.residual:
            out = out + residual
        if config.norm == "post":
            out = self.norm(out)
        return out, {"block": self.index, "hidden": hidden}


class MLP(Module):
    def __init__(self, init, F, config):
        super().__init__()
        self.config = config
        self.blocks = [FeedForwardBlock(init, F, config, index) for index in range(config.depth)]
        self.head = Linear(init, config.dim, config.classes)

    def forward(self, x):
        config = self.config
        hidden_states = (x,) if config.output_hidden_states else None
        activations = []
        for block in self.blocks:
            x, details = block(x)
            activations.append(details["hidden"])
            if hidden_states is not None:
                hidden_states = hidden_states + (x,)
        logits = self.head(x)
        if not config.return_dict:
            return logits, hidden_states
        return {"logits": logits, "hidden_states": hidden_states, "activations": activations}


# ------------------------------------------------------------------ the optimizer


class Adam:
    """Adam (with optional decoupled weight decay, AdamW), parameters in groups of options."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "decoupled": decoupled}
        self.param_groups = [dict(defaults, params=list(params))]
        self.state = [{} for _ in self.param_groups[0]["params"]]

    def step(self, grads):
        """Updates the parameters from their gradients (None: not updated); returns them."""
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            params = group["params"]
            for index, (param, grad) in enumerate(zip(params, grads)):
                if grad is None:
                    continue
                state = self.state[index]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = grad * 0.0
                    state["exp_avg_sq"] = grad * 0.0
                if group["weight_decay"] != 0.0:
                    if group["decoupled"]:
                        param = param * (1.0 - group["lr"] * group["weight_decay"])
                    else:
                        grad = grad + group["weight_decay"] * param
                state["step"] += 1
                exp_avg = state["exp_avg"] * beta1 + grad * (1.0 - beta1)
                exp_avg_sq = state["exp_avg_sq"] * beta2 + grad * grad * (1.0 - beta2)
                state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
                bias_correction1 = 1.0 - beta1 ** state["step"]
                bias_correction2 = 1.0 - beta2 ** state["step"]
                step_size = group["lr"] / bias_correction1
                denom = (exp_avg_sq / bias_correction2) ** 0.5 + group["eps"]
                params[index] = param - step_size * exp_avg / denom
        return [param for group in self.param_groups for param in group["params"]]


# ------------------------------------------------------------------ attention


class AttentionConfig:
    def __init__(self, dim=16, heads=4, max_tokens=32, causal=True, scale=None, need_weights=True, norm_eps=1e-5):
        self.dim = dim
        self.heads = heads
        self.max_tokens = max_tokens
        self.causal = causal
        self.scale = scale  # None: 1 / sqrt(head size)
        self.need_weights = need_weights
        self.norm_eps = norm_eps


class SelfAttention(Module):
    def __init__(self, init, F, config):
        super().__init__()
        self.F = F
        self.config = config
        self.qkv = Linear(init, config.dim, 3 * config.dim)
        self.out = Linear(init, config.dim, config.dim)
        # Added to the scores: -1e9 above the diagonal, where a token would see later ones.
        self.causal_mask = init.to_tensor(np.triu(np.full((config.max_tokens,) * 2, -1e9, dtype=np.float32), 1))

    def forward(self, x):
        config = self.config
        tokens, dim = x.shape
        heads = config.heads
        head_dim = dim // heads
        qkv = self.qkv(x)
        q, k, v = (qkv[:, i * dim:(i + 1) * dim].reshape([tokens, heads, head_dim]).transpose([1, 0, 2])
                   for i in range(3))
        scale = config.scale if config.scale is not None else 1.0 / math.sqrt(head_dim)
        scores = (q @ k.transpose([0, 2, 1])) * scale
        if config.causal:
            scores = scores + self.causal_mask[:tokens, :tokens]
        weights = self.F.softmax(scores, axis=-1)
        out = self.out((weights @ v).transpose([1, 0, 2]).reshape([tokens, dim]))
        return out, (weights if config.need_weights else None)


class AttentionBlock(Module):
    def __init__(self, init, F, config):
        super().__init__()
        self.norm = LayerNorm(init, F, config.dim, config.norm_eps)
        self.attention = SelfAttention(init, F, config)

    def forward(self, x):
        attended, weights = self.attention(self.norm(x))
        return x + attended, weights


# ------------------------------------------------------------------ the workloads


class Dense:
    """A dense layer's parameters, read by the loop that applies it."""

    def __init__(self, init, features):
        self.w = init.normal(features, features, std=features**-0.5)
        self.b = init.normal(features, std=0.1)


def dense_stack(layers, x, F):
    for layer in layers:
        h = x @ layer.w + layer.b
        h = F.relu(h)
        x = x + h
    return x


class Workload(NamedTuple):
    name: str
    description: str
    function: Callable[..., Any]
    args: tuple


def run_model(model, x):
    return model(x)


def optimizer_step(optimizer, grads):
    return optimizer.step(grads)


def workloads(to_tensor: Callable[[np.ndarray], Any], F: Any) -> dict[str, Workload]:
    """The four workloads by name, with fresh state, their tensors made by ``to_tensor`` (a
    numpy array in, the library's tensor out) and their functions taken from ``F``."""
    init = Init(to_tensor)
    x = init.normal(8, 16)
    mlp = MLP(init, F, MLPConfig())
    shapes = [(16, 32), (32,), (32, 16), (16,), (16, 4), (4,)]
    adam = Adam([init.normal(*shape) for shape in shapes], weight_decay=0.01, decoupled=True)
    grads = [init.normal(*shape) for shape in shapes]
    attention = AttentionBlock(init, F, AttentionConfig())
    layers = [Dense(init, 8) for _ in range(6)]
    return {workload.name: workload for workload in (
        Workload("mlp", "4 pre-norm GELU blocks with residuals, 8x16 in", run_model, (mlp, x)),
        Workload("adam", "AdamW over 6 parameters (biases and 16x32 weights)", optimizer_step, (adam, grads)),
        Workload("attention", "pre-norm 4-head causal self-attention, 8 tokens x 16", run_model, (attention, x)),
        Workload("dense", "6 dense layers with ReLU and residuals, 2x8 in", dense_stack,
                 (layers, init.normal(2, 8), F)),
    )}
