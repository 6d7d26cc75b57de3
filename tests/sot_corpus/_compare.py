"""The corpus's comparator and global-state keeper (numpy only), shared by the pytest
harness (tests/test_sot_corpus.py) and eager self-checks."""

import copy
import math
import traceback

import numpy as np

_MISSING = object()


# The nested comparator: exact types, containers recursively (dict order included), arrays
# by dtype, shape and values, floats exactly unless the case gives an rtol.

def _fail(path, message):
    raise AssertionError(f"{path}: {message}")


def _same_float(a, b, rtol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if rtol is None:
        return a == b
    return math.isclose(a, b, rel_tol=rtol)


def _slots(cls):
    """The slot names of a class written in Python, over its MRO."""
    names = []
    for klass in cls.__mro__:
        declared = vars(klass).get("__slots__", ())
        names += [declared] if isinstance(declared, str) else list(declared)
    return [name for name in names if name not in ("__dict__", "__weakref__")]


def _raised_at(exception):
    """Each frame's function and line, and whether its code object can be hashed (code that
    keys code objects, as jinja2's `internal_code` set, must get the original's answer)."""
    return [(frame.f_code.co_name, line, _can_hash(frame.f_code))
            for frame, line in traceback.walk_tb(exception.__traceback__)]


def _can_hash(code):
    try:
        hash(code)
    except TypeError:
        return False
    return True


def assert_same(expected, got, path="result", rtol=None):
    if type(expected) is not type(got):
        _fail(path, f"type {type(got).__name__} (value {got!r}), expected {type(expected).__name__} "
                    f"(value {expected!r})")
    if isinstance(expected, (np.ndarray, np.generic)):
        if expected.dtype != got.dtype or np.shape(expected) != np.shape(got):
            _fail(path, f"dtype/shape {got.dtype}{np.shape(got)}, expected {expected.dtype}{np.shape(expected)}")
        try:
            if rtol is None or expected.dtype.kind not in "fc":
                np.testing.assert_array_equal(got, expected)
            else:
                np.testing.assert_allclose(got, expected, rtol=rtol)
        except AssertionError as error:
            _fail(path, str(error))
    elif isinstance(expected, float):
        if not _same_float(expected, got, rtol):
            _fail(path, f"{got!r} != expected {expected!r}")
    elif isinstance(expected, complex):
        if not (_same_float(expected.real, got.real, rtol) and _same_float(expected.imag, got.imag, rtol)):
            _fail(path, f"{got!r} != expected {expected!r}")
    elif isinstance(expected, (list, tuple)):
        if len(expected) != len(got):
            _fail(path, f"length {len(got)}, expected {len(expected)}: {got!r} vs {expected!r}")
        for index, (left, right) in enumerate(zip(expected, got)):
            assert_same(left, right, f"{path}[{index}]", rtol)
    elif isinstance(expected, dict):
        if list(expected) != list(got):
            _fail(path, f"keys {list(got)!r}, expected {list(expected)!r} (order included)")
        for key in expected:
            assert_same(expected[key], got[key], f"{path}[{key!r}]", rtol)
    elif isinstance(expected, BaseException):
        if str(expected) != str(got):
            _fail(path, f"exception {got!r}, expected {expected!r}")
        # Where it was raised (each frame's function and line), and what it chains to.
        if _raised_at(expected) != _raised_at(got):
            _fail(path, f"traceback {_raised_at(got)}, expected {_raised_at(expected)}")
        for link in ("__cause__", "__context__"):
            linked = getattr(expected, link)
            if linked is None or path.count(".__") >= 3:
                if linked is None and getattr(got, link) is not None:
                    _fail(f"{path}.{link}", f"{getattr(got, link)!r}, expected None")
                continue
            assert_same(linked, getattr(got, link), f"{path}.{link}", rtol)
        if expected.__suppress_context__ != got.__suppress_context__:
            _fail(path, f"__suppress_context__ {got.__suppress_context__}, expected {expected.__suppress_context__}")
    elif type(expected).__name__ in ("Template", "Interpolation") and "templatelib" in type(expected).__module__:
        # Template (strings, interpolations) and Interpolation (value, expression, conversion, format_spec).
        for field in ("strings", "interpolations", "value", "expression", "conversion", "format_spec"):
            if hasattr(expected, field):
                assert_same(getattr(expected, field), getattr(got, field), f"{path}.{field}", rtol)
    elif isinstance(expected, (type, type(len), type(assert_same))) or expected is None:
        if expected is not got:
            _fail(path, f"{got!r} is not {expected!r}")
    elif hasattr(expected, "__dict__") and not isinstance(expected, (set, frozenset)):
        assert_same(vars(expected), vars(got), f"{path}.__dict__", rtol)
    elif _slots(type(expected)) and type(expected).__eq__ is object.__eq__:
        # A slotted object: its type, and each slot set or not, as the eager run left it.
        if type(expected) is not type(got):
            _fail(path, f"type {type(got).__name__}, expected {type(expected).__name__}")
        for name in _slots(type(expected)):
            missing = object()
            assert_same(getattr(expected, name, missing), getattr(got, name, missing), f"{path}.{name}", rtol)
    else:
        # int, bool, str, bytes, set, frozenset, range, slice, dtype, ...
        if not (expected == got):
            _fail(path, f"{got!r} != expected {expected!r}")


# Globals named by a case: every run starts from the state the module had, reset in place
# (the same objects, so guards on them keep holding), and the module gets its state back.

class GlobalState:
    def __init__(self, namespace, names):
        self.namespace = namespace
        self.names = names
        self.originals = {name: namespace.get(name, _MISSING) for name in names}
        self.snapshot = {name: copy.deepcopy(value) for name, value in self.originals.items()}

    def reset(self):
        for name in self.names:
            original, saved = self.originals[name], self.snapshot[name]
            if original is _MISSING:
                self.namespace.pop(name, None)
                continue
            self.namespace[name] = original
            if isinstance(original, list):
                original[:] = copy.deepcopy(saved)
            elif isinstance(original, (dict, set)):
                original.clear()
                original.update(copy.deepcopy(saved))
            elif isinstance(original, np.ndarray):
                original[...] = saved
            elif hasattr(original, "__dict__") and not isinstance(original, type):
                vars(original).clear()
                vars(original).update(copy.deepcopy(vars(saved)))

    def capture(self):
        return {name: copy.deepcopy(self.namespace[name]) if name in self.namespace else "<unbound>"
                for name in self.names}
