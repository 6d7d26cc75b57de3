"""Objects that are one per thread or one per process, as library code reads them
(scikit-learn's input validation, dataclasses' generated ``__init__``): a thread-local's
attributes, a function's defaults, an enum's members. Each is an object reached from the
frame, through the one way to it (``local.name``, read again in the thread that calls;
``f.__defaults__[i]``; the member with its attributes), guarded and mutated as any other."""

import dataclasses
import enum
import threading

import numpy as np

from ._case import Cycling, arr, case

# ---------------------------------------------------------------- thread-locals

# scikit-learn's sklearn/_config.py: a per-thread copy of the defaults, made on first use.
_DEFAULT_SETTINGS = {"assume_finite": False, "scale": 3}
_settings_local = threading.local()
_settings_local.settings = _DEFAULT_SETTINGS.copy()  # this thread's, made at import


def _threadlocal_settings():
    if not hasattr(_settings_local, "settings"):
        _settings_local.settings = _DEFAULT_SETTINGS.copy()
    return _settings_local.settings


def _get_settings():
    return _threadlocal_settings().copy()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def thread_local_config_read_as_scikit_learn_reads_it(x):
    settings = _get_settings()
    if settings["assume_finite"]:
        return x
    return x * settings["scale"]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def thread_local_value_is_the_object_stored(x):
    # One object at both reads, and the caller's own (not a copy).
    return x * 2, _settings_local.settings is _threadlocal_settings(), _settings_local.settings


_empty_local = threading.local()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def thread_local_attribute_absent(x):
    return x * 2, hasattr(_empty_local, "settings"), getattr(_empty_local, "settings", "unset")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def thread_local_missing_attribute_raises_cpythons_error(x):
    try:
        _empty_local.settings  # noqa: B018 - the read raises
    except AttributeError as error:
        return x * 2, str(error)
    return x


_visits = threading.local()


def _with_no_visits():
    # Each run starts without the attribute (a thread-local cannot be deep-copied, which
    # `globals_checked` would do).
    _visits.__dict__.pop("count", None)
    return (arr(3),)


@case(args=_with_no_visits, graphs=1, ops=1)
def thread_local_set_where_absent(x):
    # Stored by the generated code, in the thread that runs it.
    if not hasattr(_visits, "count"):
        _visits.count = 0
    _visits.count += 1
    return x * _visits.count, _visits.count


_modes = Cycling("double", "negate")
_mode_local = threading.local()


def _with_a_new_mode():
    _mode_local.mode = _modes.next_value()
    return (arr(3),)


@case(args=_with_a_new_mode, graphs=1, ops=1, rejected=1)
def thread_local_value_set_between_calls_is_seen(x):
    # The guards read `_mode_local.mode` again on every call.
    if _mode_local.mode == "double":
        return x * 2
    return -x


class _LocalWithInit(threading.local):
    def __init__(self):
        # Runs in each thread on its first use of the object: not modeled.
        self.settings = {"scale": 4}


_local_with_init = _LocalWithInit()


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["attribute settings of _LocalWithInit"])
def thread_local_subclass_attribute_breaks(x):
    return x * _local_with_init.settings["scale"]


# ---------------------------------------------------------------- defaults

_SEEN: list = []


class _Registry:
    def remember(self, item, seen=_SEEN):
        # One list for every call: what one call appends, the next sees.
        seen.append(item)
        return len(seen)

    def lookup(self, key, *, cache={}):  # noqa: B006 - the shared default is the test
        if key not in cache:
            cache[key] = len(cache) + 1
        return cache[key]


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("_SEEN",))
def a_list_default_mutated_by_one_call_is_seen_by_the_next(x):
    registry = _Registry()
    first = registry.remember("a")
    second = registry.remember("b")
    return x * second, first, _SEEN


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_keyword_only_dict_default_caches_across_calls(x):
    registry = _Registry()
    first, again, other = registry.lookup("a"), registry.lookup("a"), registry.lookup("b")
    return x * 2, first, again, other


_UNITS: list = []
_unit_lists = Cycling(["m"], ["m", "s"])


def _with_units():
    _UNITS[:] = _unit_lists.next_value()
    return (arr(3),)


class _Formatter:
    def count(self, units=_UNITS):
        return len(units)


@case(args=_with_units, graphs=1, ops=1, rejected=1)
def a_list_default_changed_between_calls_is_seen(x):
    return x * _Formatter().count()


_kinds = Cycling(("double",), ("negate",))


class _Scaler:
    def apply(self, x, kind="double"):
        if kind == "double":
            return x * 2
        return -x


def _with_new_defaults():
    _Scaler.apply.__defaults__ = _kinds.next_value()
    return (arr(3),)


@case(args=_with_new_defaults, graphs=1, ops=1, rejected=1)
def a_methods_defaults_replaced_between_calls_are_seen(x):
    # The method is found on its class (pinned), its defaults through the function.
    return _Scaler().apply(x)


def _stepped_class():
    step = "double"

    class Stepped:
        def apply(self, x):
            if step == "double":
                return x * 2
            return -x

    def set_step(value):
        nonlocal step
        step = value

    return Stepped, set_step


_Stepped, _set_step = _stepped_class()
_steps = Cycling("double", "negate")


def _with_a_new_step():
    _set_step(_steps.next_value())
    return (arr(3),)


@case(args=_with_a_new_step, graphs=1, ops=1, rejected=1)
def a_methods_closure_variable_rebound_between_calls_is_seen(x):
    # As its defaults, the method's closure cells are read through it: another closure
    # stores into them.
    return _Stepped().apply(x)


_MISSING = object()


class _Lookup:
    def get(self, default=_MISSING):
        if default is _MISSING:
            return "no default"
        return default


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_sentinel_default_keeps_its_identity(x):
    lookup = _Lookup()
    return x * 2, lookup.get(), lookup.get(5)


@dataclasses.dataclass
class _Options:
    scale: float = 2.0
    tags: list = dataclasses.field(default_factory=list)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def a_dataclass_with_a_default_factory_is_made(x):
    # dataclasses' __init__ takes a sentinel object as the factory field's default.
    options = _Options()
    options.tags.append("made")
    return x * options.scale, options.tags, _Options(tags=[1]).tags


# ---------------------------------------------------------------- enum members


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def a_numpy_copy_mode_passed_to_an_operation(x):
    # scikit-learn's array_api_compat: np.array(obj, copy=np._CopyMode.IF_NEEDED).
    y = np.array(x, copy=np._CopyMode.IF_NEEDED)
    return y + 1, y is x


class _Unit(enum.Enum):
    METRE = "m"
    SECOND = "s"


_unit_values = Cycling("m", "metre")


def _with_the_unit_value_rebound():
    _Unit.METRE._value_ = _unit_values.next_value()
    return (arr(3),)


@case(args=_with_the_unit_value_rebound, graphs=1, ops=1, rejected=1)
def an_enum_members_value_rebound_between_calls_is_seen(x):
    # A member is one object for the process, but its attributes can be set again.
    if _Unit.METRE.value == "m":
        return x * 2, _Unit.METRE.value
    return -x, _Unit.METRE.value


class _Listed(enum.Enum):
    ITEMS = [1]  # a mutable value


@case(args=lambda: (arr(3),), graphs=1, ops=1, breaks=["a mutable _Listed passed to a tensor operation"])
def an_enum_member_with_a_mutable_value_passed_to_an_operation_breaks(x):
    y = np.array(x, copy=_Listed.ITEMS)
    return y + 1, y is x
