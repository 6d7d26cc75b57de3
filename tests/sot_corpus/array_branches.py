"""Branches on array shape/ndim/dtype (guarded constants) and on array values (assumed: the graph
checks the value goes the same way, the frame runs again untranslated where it does not): no break."""

import numpy as np

from ._case import arr, case, iarr, pos


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def branch_on_ndim(x):
    if x.ndim == 2:
        return x.sum(axis=1)
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def branch_on_shape(x):
    if x.shape[0] == 3:
        return x * 3
    return x


@case(args=lambda: (iarr(4),), graphs=1, ops=2)
def branch_on_dtype_kind(x):
    if x.dtype.kind == "i":
        return x.astype(np.float64) / 2
    return x / 2


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def branch_on_size(x):
    return x.reshape(-1) if x.size > 4 else x


@case(args=lambda: (arr(4),), graphs=1, ops=3)
def branch_on_len(x):
    if len(x) > 1:
        return x[1:] - x[:-1]
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def loop_bound_from_shape(x):
    for _ in range(x.shape[0]):
        x = x * 2
    return x


@case(args=lambda: (pos(3),), graphs=1, ops=3)
def branch_on_positive_sum(x):
    if x.sum() > 0:
        return x * 2
    return x


@case(args=lambda: (pos(3, seed=3),), graphs=1, ops=3)
def branch_on_numpy_any(x):
    if np.any(x > 1.5):
        return x - 1
    return x + 1


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=3)
def branch_picks_an_argument(x, y):
    if x.max() > y.max():
        return x
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def branch_on_stored_flag(x):
    flag = x.mean() > 0
    if flag:
        k = 2.0
    else:
        k = 3.0
    return x * k


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def branch_on_not(x):
    if not (x < 0).any():
        return x
    return -x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def ternary_on_value(x):
    return x + 1 if x.sum() > 0 else x - 1


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def shape_dependent_reshape(x):
    n, m = x.shape
    return x.reshape(m, n) if n != m else x.T


@case(args=lambda: (arr(3, dtype=np.float32),), graphs=1, ops=1)
def branch_on_itemsize(x):
    if x.dtype.itemsize == 4:
        return x * 2
    return x


@case(args=lambda: (arr(3), arr(3, 3, seed=1)), graphs=1, ops=1)
def branch_on_ndim_of_each(a, b):
    if a.ndim < b.ndim:
        return b @ a
    return a @ b


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def ops_on_both_sides_of_branch(x):
    y = x * 2
    if y.min() < -10:
        y = y + 10
    return y - 1


@case(args=lambda: (arr(4),), graphs=1, ops=4)
def branch_on_element(x):
    if x[0] > x[1]:
        return x[0]
    return x[1]


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def branch_on_device_of_a_computed_array(x):
    # numpy's arrays are all on the cpu ("device", numpy 2): a constant, as the dtype is.
    y = x * 2
    if getattr(y, "device", "cpu") == "cpu":
        return y + 1
    return y


class _OnDevice(np.ndarray):
    """An array class whose ``device`` a property computes: read from the array, a break."""

    @property
    def device(self):
        return "gpu" if self.ndim > 3 else "cpu"


@case(args=lambda: (arr(3).view(_OnDevice),), graphs=2, ops=2, breaks=["attribute device of a tensor"])
def branch_on_device_of_a_subclass_array(x):
    y = x * 2
    if y.device == "cpu":
        return y + 1
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def builtin_dtype_made_from_its_name(x):
    # numpy gives its one float64 dtype object for either spelling: the call is that object.
    if x.dtype == np.dtype("float64") and np.dtype(np.float64) is x.dtype:
        return x * 2
    return x


@case(args=lambda: (arr(3),), graphs=2, ops=2, breaks=("creating a dtype object",))
def string_dtype_made_anew_on_each_call(x):
    # np.dtype("U5") is a new object on each call: a constant would be one object for all.
    y = x + 1
    kind = np.dtype("U5")
    return y * 2, kind.itemsize


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def dtype_question_answered_while_translating(x):
    # scikit-learn's check_array: np.issubdtype of a dtype is a constant, not a value to break on.
    if np.issubdtype(x.dtype, np.floating) and np.can_cast(x.dtype, np.float64):
        return x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def array_made_from_constants_stays_an_operation(x):
    # np.zeros(3) is a new array on each call: the caller may write into it.
    out = np.zeros(3)
    out += x
    return out


@case(args=lambda: (iarr(3), np.int32), graphs=1, ops=3)
def branch_on_a_dtypes_limits(x, index_dtype):
    # scikit-learn's `_safely_cast_index_arrays`: np.iinfo(dtype).max, a value of the dtype
    # alone, made while translating (no break), compared with an array's value (assumed).
    max_value = np.iinfo(index_dtype).max
    if x.max() > max_value:
        raise ValueError("too large")
    return x + 1, max_value, np.iinfo("int8").min, np.finfo(np.float32).bits, np.finfo("float64").bits


@case(args=lambda: (arr(3, dtype=np.float32),), graphs=1, ops=2)
def limits_of_an_arrays_dtype(x):
    # np.finfo(x.dtype): the dtype is the array's, guarded; the limits are made for it.
    return x * 2, np.finfo(x.dtype).bits, np.iinfo(x.astype(np.int16).dtype).max
