"""f-strings and string formatting of Python values, beside array ops."""

from ._case import arr, case


@case(args=lambda: (arr(3), 4), graphs=1, ops=1)
def fstring_of_int(x, n):
    label = f"n={n}"
    return label, x * n


@case(args=lambda: (arr(3), 3.14159), graphs=1, ops=1)
def fstring_format_spec(x, v):
    return f"{v:.3f}|{v:>8}|{v:e}", x + v


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def fstring_of_shape_and_dtype(x):
    return f"{x.shape}-{x.dtype}", x.sum()


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def fstring_conversions(x):
    name = "a\u00e9"
    return f"{name!r}{name!s}{name!a}", x * 2


@case(args=lambda: (arr(3), 6), graphs=1, ops=1)
def fstring_nested_spec(x, width):
    return f"{'v':>{width}}|{12:0{width}d}", x - 1


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def fstring_keys_in_loop(x):
    d = {}
    for i in range(2):
        d[f"k{i}"] = x + i
    return d


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def fstring_implicit_concat(x):
    s = f"{1 + 1}" f"{'b'}" + "c"
    return s, x * len(s)


@case(args=lambda: (arr(3), 2), graphs=1, ops=1)
def fstring_self_documenting(x, k):
    return f"{k=}, {k + 1 = }", x * k


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def fstring_of_ndim_and_size(x):
    return f"{x.ndim}/{x.size}", x.T


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def str_format_method(x):
    return "{}-{:d}-{name}".format("a", 3, name="n"), x / 3


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def percent_format(x):
    return "%s:%.2f:%d" % ("a", 1.5, 7), x * 1.5  # noqa: UP031


@case(args=lambda: (arr(4),), graphs=1, ops=1)
def fstring_of_len(x):
    return f"{len(x)} rows", x[0]


@case(args=lambda: (arr(3), "relu", 2), graphs=1, ops=1)
def fstring_as_dict_key(x, act, layer):
    return {f"{act}_{layer}": x * layer}
