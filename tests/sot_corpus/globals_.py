"""Globals: reading module globals (values, arrays, containers, objects) and `global` stores."""

import numpy as np

from ._case import arr, case


class _Settings:
    def __init__(self):
        self.scale = 1.5
        self.calls = 0


G_SCALE = 2.0
G_ARRAY = np.array([1.0, 2.0, 3.0])
G_COUNTER = 0
G_LIST = [1.0, 2.0]
G_CONFIG = {"mode": "train", "k": 3}
G_SHAPE = (3, 1)
G_SETTINGS = _Settings()
G_STATE = _Settings()
G_ARRAY2 = np.array([0.5, 0.25, 0.125])
G_NAMES = ("a", "b")


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def read_global_float(x):
    return x * G_SCALE


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def read_global_array(x):
    return x + G_ARRAY


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("G_COUNTER",))
def global_int_store(x):
    global G_COUNTER
    G_COUNTER += 1
    return x * G_COUNTER


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("G_LIST",))
def global_list_append(x):
    G_LIST.append(3.0)
    return x * len(G_LIST)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def global_dict_read(x):
    if G_CONFIG["mode"] == "train":
        return x * G_CONFIG["k"]
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2, globals_checked=("G_NEW",))
def global_store_new_name(x):
    global G_NEW
    G_NEW = x + 1
    return G_NEW * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def module_attribute_constant(x):
    return x * np.pi


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("G_CONFIG",))
def global_dict_store(x):
    G_CONFIG["last"] = "run"
    return x - 1


@case(args=lambda: (arr(3),), graphs=1, ops=2, globals_checked=("G_ARRAY2",))
def global_array_rebound(x):
    global G_ARRAY2
    G_ARRAY2 = G_ARRAY2 * 2
    return x + G_ARRAY2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def global_tuple_shape(x):
    return x.reshape(G_SHAPE)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def global_object_attribute(x):
    return x * G_SETTINGS.scale


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("G_STATE",))
def global_object_attribute_store(x):
    G_STATE.calls += 1
    return x * G_STATE.calls


@case(args=lambda: (arr(3),), graphs=1, ops=2, globals_checked=("G_COUNTER", "G_LIST"))
def two_globals_stored(x):
    global G_COUNTER
    G_COUNTER = len(G_LIST) + 10
    G_LIST.pop()
    return x * G_COUNTER + G_LIST[0]


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def global_loop_over_tuple(x):
    out = {}
    for name in G_NAMES:
        out[name] = len(name)
    return out, x + len(out)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def globals_in_builtin_calls(x):
    return x * len(G_NAMES) + max(G_SCALE, 1.0)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def relative_imports_of_modules_already_imported(x):
    # jinja2 and idna import their own modules inside functions: resolved against the
    # module's __package__ (its __spec__ agreeing), then read from sys.modules.
    from . import _case
    from ._case import Cycling

    return x * 2, _case.Cycling is Cycling
