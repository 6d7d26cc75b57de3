"""del: of locals, dict items, list items and slices, attributes and globals."""

from ._case import arr, case


class _Obj:
    def __init__(self):
        self.a = 1.0
        self.b = 2.0


G_TEMP = "temporary"


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def del_local(x):
    y = x + 1
    z = y * 2
    del y
    return z


@case(args=lambda: (arr(3), {"a": 1.0, "b": 2.0}), graphs=1, ops=1)
def del_dict_item_argument(x, d):
    del d["a"]
    return x * len(d)


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=1)
def del_list_item_argument(x, items):
    del items[0]
    return x + items[0]


@case(args=lambda: (arr(3), [1.0, 2.0, 3.0]), graphs=1, ops=1)
def del_list_slice_argument(x, items):
    del items[1:]
    return x * len(items)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def del_then_rebind(x):
    y = x * 2
    del y
    y = x + 3
    return y


@case(args=lambda: (arr(3), _Obj()), graphs=1, ops=1)
def del_attribute_argument(x, obj):
    del obj.a
    return x * obj.b


@case(args=lambda: (arr(3),), graphs=1, ops=1, globals_checked=("G_TEMP",))
def del_global(x):
    global G_TEMP
    del G_TEMP
    return x + 1


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def del_in_loop(x):
    for i in range(2):
        t = x + i
        del t
    return x * 2


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def del_item_of_local_dict(x):
    d = {"a": x, "b": x * 2}
    del d["a"]
    return d


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def del_several_names(x):
    a = x + 1
    b = x - 1
    del a, b
    return x * 3


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def del_local_list_items(x):
    items = [x, 1, 2, 3, 4]
    del items[1::2]
    return items[0] * len(items)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def del_argument(x, y=1.0):
    z = x * y
    del x
    return z
