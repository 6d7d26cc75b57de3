"""The case registry of the SOT differential corpus (numpy only: no framehook import here).

A case is a small function with a factory for its arguments and the counters the translator
must report after the first translated call::

    @case(args=lambda: (arr(3), 2.0), graphs=1, ops=2)
    def add_scale(x, k):
        return x + x * k

Counting rules (the translator's semantics, see tests/test_sot_corpus.py): an op is one
numpy function or ufunc call, one Python operator with a tensor operand (in-place ones and
subscript loads and stores included), one array method call, ``x.T``, one row of an iterated
array or one element of an unpacked array; ``x.shape``/``dtype``/``ndim``/``size``, Python
arithmetic, containers and inlined user calls are free. A segment without an op compiles no
graph, unless it computes with numbers seen to change between calls (dynamic numbers: their
arithmetic runs in the graph, free). A case expecting no break and no fallback runs with ``full_graph=True``.
"""

import copy
import dataclasses
import sys
from typing import Any, Callable, Optional, Union

import numpy as np

REGISTRY: list = []

# A break deep in inlined calls resumes in each frame where it stopped (3.11+): one break,
# not one per frame translated again. 3.9/3.10 set up blocks no bridge sets up again.
NESTED_RESUME = sys.version_info >= (3, 11)


@dataclasses.dataclass(frozen=True)
class Case:
    fn: Callable
    name: str
    module: str
    args: Callable[[], tuple]
    kwargs: Optional[Callable[[], dict]]
    graphs: int
    ops: int
    # An int, or one reason substring per expected break, in order.
    breaks: Union[int, tuple]
    fallbacks: int = 0
    translations: Optional[int] = None
    globals_checked: tuple = ()
    min_version: Optional[tuple] = None
    # The exception type the eager run raises (None: it returns).
    raises: Optional[type] = None
    rtol: Optional[float] = None
    # Whether the second call (fresh, equal arguments) must be a cache hit.
    hot: bool = True
    # Calls after the first that recompile, each because a number it saw changed (then
    # made dynamic); the call after them must be a cache hit.
    recompiles: int = 0
    # Runs after the first whose arguments (a `Cycling` value) the first translation's
    # guards must reject: each is translated again, and computes what the eager call does.
    rejected: int = 0
    category: str = ""

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"

    @property
    def break_count(self) -> int:
        return self.breaks if isinstance(self.breaks, int) else len(self.breaks)

    @property
    def strict(self) -> bool:
        """No break and no fallback expected: translated with ``full_graph=True``."""
        return self.break_count == 0 and self.fallbacks == 0

    @property
    def skip_reason(self) -> Optional[str]:
        if self.min_version and sys.version_info < self.min_version:
            return "needs Python {}.{}+".format(*self.min_version)
        return None

    def make_args(self) -> tuple:
        return tuple(self.args())

    def make_kwargs(self) -> dict:
        return dict(self.kwargs()) if self.kwargs else {}


def _no_args() -> tuple:
    return ()


def case(
    args: Callable[[], Any] = _no_args,
    *,
    graphs: int,
    ops: int,
    breaks: Union[int, tuple, list] = 0,
    kwargs: Optional[Callable[[], dict]] = None,
    fallbacks: int = 0,
    translations: Optional[int] = None,
    globals_checked: tuple = (),
    min_version: Optional[tuple] = None,
    raises: Optional[type] = None,
    rtol: Optional[float] = None,
    hot: Optional[bool] = None,
    recompiles: int = 0,
    rejected: int = 0,
    name: Optional[str] = None,
):
    """Registers the decorated function (returned unchanged) as a case."""
    if isinstance(breaks, list):
        breaks = tuple(breaks)
    if hot is None:
        hot = raises is None

    def register(fn):
        REGISTRY.append(Case(
            fn=fn, name=name or fn.__name__, module=fn.__module__, args=args, kwargs=kwargs,
            graphs=graphs, ops=ops, breaks=breaks, fallbacks=fallbacks, translations=translations,
            globals_checked=tuple(globals_checked), min_version=min_version, raises=raises,
            rtol=rtol, hot=hot, recompiles=recompiles, rejected=rejected,
        ))
        return fn

    return register


# Argument helpers: fresh, equal arrays on every call of a factory (seeded generators).

def arr(*shape: int, seed: int = 0, dtype=np.float64) -> np.ndarray:
    """Floats in [-1, 1) of ``shape`` (default float64), from ``default_rng(seed)``."""
    values = np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape)
    return values.astype(dtype)


def pos(*shape: int, seed: int = 0, dtype=np.float64) -> np.ndarray:
    """Floats in [0.5, 2) of ``shape``: safe to divide by and take logs of."""
    values = np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)
    return values.astype(dtype)


def iarr(*shape: int, seed: int = 0, low: int = -5, high: int = 6, dtype=np.int64) -> np.ndarray:
    """Integers in [low, high) of ``shape`` (default int64)."""
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


class Changing:
    """A number that changes from one run of a case to the next and is equal for the two
    calls of a run (the eager call, then the translated one): ``next_value()`` is called
    once by each call's argument factory, in that order."""

    def __init__(self, start, step=1):
        self.start, self.step, self.calls = start, step, 0

    def next_value(self):
        value = self.start + self.step * (self.calls // 2)
        self.calls += 1
        return value



class Cycling:
    """Values that change from one run of a case to the next, in turn, and are equal (deep
    copies) for the two calls of a run: ``next_value()`` is called once by each call's
    argument factory, the eager call's first."""

    def __init__(self, *values):
        self.values, self.calls = values, 0

    def next_value(self):
        value = copy.deepcopy(self.values[(self.calls // 2) % len(self.values)])
        self.calls += 1
        return value
