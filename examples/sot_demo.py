"""framehook's main job: SOT translates a small numpy model as one frame hook among others.

1. ``sot.translate(model.forward)``: SOT's hook ("sot.translate") runs the forward as code it
   generated around a compiled graph of the model's numpy operations. The finiteness check
   branches on the data: SOT assumes it goes as it went while translating, and the graph
   checks it; where it goes the other way (a diverging input), the forward runs again
   untranslated and raises as eagerly.
2. ``watch``, a Python hook added after SOT's, sees each frame after SOT's turn
   (``frame.f_code`` is what will run) and counts those running SOT's code in place of their
   own (``frame.original_code``).
3. the hookprof profiler (examples/profiler, a separate extension on framehook's C API)
   observes the code that actually ran.

It prints the results beside eager execution, SOT's counters and ``sot.explain``, what the
hooks saw, and the time per call, eager and translated.

Run: ``python examples/sot_demo.py`` (with numpy and hookprof installed:
``pip install numpy . ./examples/profiler``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

import numpy as np

import framehook
import framehook.sot as sot
import hookprof


class Dense:
    def __init__(self, rng, fan_in, fan_out, activation):
        self.weight = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        self.bias = np.zeros(fan_out)
        self.activation = activation

    def __call__(self, x):
        y = x @ self.weight + self.bias
        if self.activation == "relu":
            return np.maximum(y, 0.0)
        if self.activation == "tanh":
            return np.tanh(y)
        return y


class Model:
    def __init__(self, sizes, activations, seed=0):
        rng = np.random.default_rng(seed)
        self.layers = [Dense(rng, fan_in, fan_out, activation)
                       for fan_in, fan_out, activation in zip(sizes, sizes[1:], activations)]
        self.config = {"residual": True, "temperature": 2.0, "check_finite": True}

    def forward(self, x):
        hidden = []
        for layer in self.layers:
            y = layer(x)
            if self.config["residual"] and y.shape == x.shape:
                y = y + x
            hidden.append(y)
            x = y
        if self.config["check_finite"] and not np.isfinite(x).all():
            raise FloatingPointError("the model diverged")
        return {"logits": x / self.config["temperature"], "hidden": tuple(hidden)}


class Watch:
    """A hook that changes nothing: counts frames, and notes the codes an earlier hook chose."""

    def __init__(self):
        self.frames = 0
        # The original's name -> the codes that ran instead, by identity: code objects hash
        # their constants, and SOT's hold its compiled graphs in a list.
        self.replacements: dict[str, dict[int, Any]] = {}

    def __call__(self, frame):
        self.frames += 1
        if frame.f_code is not frame.original_code:  # an earlier hook (SOT's) replaced it
            self.replacements.setdefault(frame.original_code.co_name, {})[id(frame.f_code)] = frame.f_code
        return None


def same_output(actual: dict, expected: dict) -> bool:
    return (np.allclose(actual["logits"], expected["logits"])
            and all(map(np.allclose, actual["hidden"], expected["hidden"])))


def time_per_call(call: Callable[[], Any], calls: int = 2000, repeats: int = 5) -> float:
    """Microseconds per call, the best of ``repeats`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    model = Model(sizes=(4, 8, 8, 8, 3), activations=("relu", "relu", "tanh", None))
    x = np.random.default_rng(1).standard_normal((2, 4))
    eager = model.forward(x)
    # The translation's own behaviour, call by call (no cost model choosing the original).
    forward = sot.translate(model.forward, cost_model=False)
    watch = Watch()
    watch_handle = framehook.add_frame_hook(watch, name="watch")
    with hookprof.Profiler() as profiler:
        hooks = [handle.name for handle in framehook.frame_hooks()]
        translated = [forward(x) for _ in range(3)]
    framehook.remove_frame_hook(watch_handle)

    print("eager logits:       ", np.round(eager["logits"], 4).tolist())
    print("translated logits:  ", np.round(translated[-1]["logits"], 4).tolist())
    print("equal to eager:     ", all(same_output(result, eager) for result in translated), "(3 calls)")
    print("hooks, in order:    ", hooks)
    stats = sot.stats(forward)
    print("SOT's stats:        ", f"translations={stats.translations} graphs={stats.graphs} "
          f"ops={stats.ops_captured} cache_hits={stats.cache_hits} fallbacks={len(stats.fallbacks)}")
    for graph_break in stats.graph_breaks:
        print("SOT's graph break:  ", f"{os.path.basename(graph_break.filename)}:{graph_break.lineno}: "
              f"{graph_break.reason}")
    if not stats.graph_breaks:
        print("SOT's graph breaks:  none (the finiteness check is assumed, checked by the graph)")
    for name, codes in watch.replacements.items():
        print("watch saw:          ", f"{watch.frames} frames; {name} ran SOT's code ({len(codes)} code "
              f"object{'s' if len(codes) > 1 else ''}: the generated code, and a resume function after each break)")
    diverging = np.full_like(x, np.nan)
    outcomes = []
    for call in (model.forward, forward):
        try:
            call(diverging)
        except FloatingPointError as error:
            outcomes.append(f"{type(error).__name__}: {error}")
    print("a diverging input:  ", " / ".join(outcomes), "(eager / translated: the assumption failed, "
          "the forward ran again untranslated)")
    print("the profiler saw:")
    profiler.print_stats(sort="ncalls", file=sys.stdout)
    print(sot.explain(model.forward, x), end="")

    eager_us = time_per_call(lambda: model.forward(x))
    translated_us = time_per_call(lambda: forward(x))
    print(f"time per call:       eager {eager_us:.1f} µs, translated {translated_us:.1f} µs: "
          f"{eager_us / translated_us:.2f}x eager's speed")
    # As users get it by default: after its timed trials, the faster of translation and original.
    judged = sot.translate(model.forward, cost_model=True)
    for _ in range(20):
        judged(x)
    print("cost model:          ", f"{sot.stats(judged).cost_model} runs "
          f"({sot.stats(judged).runs_original} of 20 calls ran the original)")


if __name__ == "__main__":
    main()
