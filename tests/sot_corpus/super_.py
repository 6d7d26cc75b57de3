"""super() in methods and inheritance: overriding, chained super, MRO diamonds, classmethods, properties."""

from ._case import arr, case


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
