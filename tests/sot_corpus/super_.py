"""super() in methods and inheritance: overriding, chained super, MRO diamonds, classmethods, properties."""

from ._case import Cycling, arr, case


class _Base:
    def __init__(self, k):
        self.k = k

    def forward(self, v):
        return v * self.k

    @property
    def doubled(self):
        return self.k * 2

    @classmethod
    def make(cls, k):
        return cls(k)


class _Child(_Base):
    def __init__(self, k, b):
        super().__init__(k)
        self.b = b

    def forward(self, v):
        return super().forward(v) + self.b


class _ExplicitSuper(_Base):
    def forward(self, v):
        return super(_ExplicitSuper, self).forward(v) - 1  # noqa: UP008


class _Grandchild(_Child):
    def forward(self, v):
        return super().forward(v) * 2


class _Other(_Base):
    def forward(self, v):
        return v / self.k


class _A:
    def f(self, v):
        return v + 1


class _B(_A):
    def f(self, v):
        return super().f(v) * 2


class _C(_A):
    def f(self, v):
        return super().f(v) - 3


class _D(_B, _C):
    def f(self, v):
        return super().f(v) / 4


class _PropertyChild(_Base):
    @property
    def doubled(self):
        return super().doubled + 1


class _MadeChild(_Base):
    @classmethod
    def make(cls, k):
        made = super().make(k * 10)
        made.tag = cls.__name__
        return made


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def super_method(x):
    return _Child(2.0, 1.0).forward(x)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def super_init(x):
    c = _Child(3.0, 0.5)
    return x * c.k - c.b


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def explicit_super_arguments(x):
    return _ExplicitSuper(2.0).forward(x)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def super_through_two_levels(x):
    return _Grandchild(2.0, 1.0).forward(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def override_without_super(x):
    return _Other(2.0).forward(x)


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def diamond_mro(x):
    return _D().f(x)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def super_property(x):
    return x * _PropertyChild(1.5).doubled


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def super_classmethod(x):
    made = _MadeChild.make(0.5)
    return made.forward(x), made.tag


@case(args=lambda: (_Child(2.0, 1.0), arr(3)), graphs=1, ops=2)
def instance_argument(model, x):
    return model.forward(x)


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def isinstance_of_subclass(x):
    c = _Grandchild(1.0, 0.0)
    if isinstance(c, _Base) and issubclass(_Grandchild, _Child):
        return c.forward(x)
    return x


class _PlainFunctions:
    def doubled(k):  # noqa: N805 (called through the class: a plain function)
        return k * 2


class _ThroughSuperOfTheClass(_PlainFunctions):
    @classmethod
    def scale(cls, k):
        # super() of a class (here in a classmethod) gives a function unbound, as
        # CPython's super does (`super().__new__(cls)` works so).
        return super().doubled(k)


class _ReportsSuper(_Base):
    def kind(self):
        return super().__class__


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def super_of_a_class_gives_functions_unbound(x):
    return x * _ThroughSuperOfTheClass.scale(1.5)


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def super_class_attribute_is_super(x):
    return x + 1, _ReportsSuper(1.0).kind() is super


@case(args=lambda: (arr(3),), graphs=1, ops=1, raises=TypeError)
def super_of_a_non_type_raises(x):
    y = x + 1
    return super(1, int), y


@case(args=lambda: (arr(3),), graphs=1, ops=1, raises=TypeError)
def super_of_an_unrelated_object_raises(x):
    y = x + 1
    return super(_Base, 1), y


class _Routes(dict):
    """scikit-learn's Bunch: a dict subclass whose own `__getitem__` checks a note kept in its
    `__dict__`, then reads dict's item through super()."""

    def __init__(self, **items):
        super().__init__(items)
        self.__dict__["_renamed"] = {}

    def __getitem__(self, key):
        if key in self.__dict__.get("_renamed", {}):
            key = self.__dict__["_renamed"][key]
        return super().__getitem__(key)

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def scale_or(self, default):
        return super().get("scale", default), super().__contains__("shift")


_routes = Cycling(_Routes(scale=2.0, shift=1.0), _Routes(scale=3.0))


@case(args=lambda: (arr(3), _routes.next_value()), graphs=1, ops=2, rejected=1)
def super_getitem_of_a_dict_base_reads_the_entry(x, routes):
    # dict's own methods through super(): the entries read from the dict's storage, each
    # guarded present or absent (the second object lacks `shift`: the guards reject it).
    scale, has_shift = routes.scale_or(1.0)
    shift = routes.shift if has_shift else 0.0
    try:
        missing = routes["missing"]
    except KeyError:
        missing = None
    return x * routes["scale"] + shift * scale, missing


class _RenamedRoutes(_Routes):
    def __init__(self, **items):
        super().__init__(**items)
        self.__dict__["_renamed"] = {"factor": "scale"}


@case(args=lambda: (arr(3), _RenamedRoutes(scale=4.0)), graphs=1, ops=1)
def super_getitem_of_a_dict_base_after_the_subclass_logic(x, routes):
    # The subclass's own logic first (a renamed key), then dict's entry under the new key.
    return x * routes.factor


class _Defaulted(dict):
    def __missing__(self, key):
        return ("made for", key)

    def __getitem__(self, key):
        return super().__getitem__(key)


@case(
    args=lambda: (arr(3), _Defaulted(a=1.0)),
    graphs=1,
    ops=2,
    breaks=["dict.__getitem__", "dict.__getitem__"],
)
def super_getitem_of_a_dict_base_with_missing_is_a_break(x, table):
    # dict's __getitem__ calls the class's __missing__ for a missing key: not modeled (a
    # break in the caller, then in `__getitem__` run as its own frame); a present key's
    # entry is read.
    y = x * table["a"]
    return y + 1, table[(1, 2)]


@case(args=lambda: (arr(3), _Routes(scale=2.0)), graphs=1, ops=1)
def super_getitem_of_a_dict_base_raises_keyerror_of_the_key(x, routes):
    # A tuple key: dict's KeyError holds the key itself as its one argument.
    try:
        routes[(1, 2)]
    except KeyError as error:
        return x * routes["scale"], error.args
    return x, None


_CONTAINS_ASKED = []


class _AskedDefaulted(dict):
    def __missing__(self, key):
        return 0.0

    def __contains__(self, key):
        _CONTAINS_ASKED.append(key)
        return dict.__contains__(self, key)

    def __getitem__(self, key):
        return super().__getitem__(key)


@case(args=lambda: (arr(3), _AskedDefaulted(a=2.0)), graphs=1, ops=1, globals_checked=("_CONTAINS_ASKED",))
def super_getitem_of_a_dict_base_with_missing_runs_no_python_contains(x, table):
    # Whether the key is there (else `__missing__`) is the storage's answer: translating
    # runs no `__contains__` of the class's (eager never calls it here).
    return x * table["a"]
