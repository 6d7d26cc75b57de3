"""Template strings (Python 3.14+, string.templatelib): building, inspecting and rendering t-strings."""

from string.templatelib import Interpolation, Template

from ._case import arr, case


def _render(template):
    parts = []
    for item in template:
        if isinstance(item, Interpolation):
            parts.append(str(item.value))
        else:
            parts.append(item)
    return "".join(parts)


@case(args=lambda: (arr(3), "world"), graphs=1, ops=1)
def template_returned(x, name):
    t = t"hello {name}"
    return t, x * 2


@case(args=lambda: (arr(3), 4), graphs=1, ops=1)
def strings_and_values(x, n):
    t = t"{n} items of {n + 1}"
    return t.strings, t.values, x * n


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def array_interpolated(x):
    y = x + 1
    t = t"val {y}"
    return t.interpolations[0].value * 2


@case(args=lambda: (arr(3), 2.5), graphs=1, ops=1)
def conversion_and_format_spec(x, v):
    t = t"{v!r:>10}"
    i = t.interpolations[0]
    return i.expression, i.conversion, i.format_spec, x - v


@case(args=lambda: (arr(3), "n"), graphs=1, ops=1)
def rendered_by_user_function(x, name):
    return _render(t"a{name}b{3}c"), x + 1


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def templates_concatenated(x):
    t = t"a{1}" + t"b{2}"
    return t.strings, t.values, x * 3


@case(args=lambda: (arr(2, 3),), graphs=1, ops=1)
def shape_interpolated(x):
    t = t"{x.shape}"
    return isinstance(t, Template), t.values, x.T


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def template_holding_array(x):
    return t"{x * 2} and {'text'}"


@case(args=lambda: (arr(3), 7), graphs=1, ops=1)
def template_in_loop(x, n):
    rendered = []
    for k in range(2):
        rendered.append(_render(t"{k}:{n}"))
    return rendered, x + n


@case(args=lambda: (arr(3), arr(3, seed=1)), graphs=1, ops=3)
def values_of_array_template(x, y):
    t = t"{x + 1} then {y * 2}"
    a, b = t.values
    return a - b, t.strings


@case(args=lambda: (arr(3),), graphs=1, ops=4)
def iterate_template_holding_array(x):
    kinds = []
    total = 0
    for item in t"sum: {x * 2}{x.shape!r:>4}":
        if isinstance(item, Interpolation):
            kinds.append((item.expression, item.conversion, item.format_spec))
            total = total + (item.value if isinstance(item.value, tuple) else item.value.sum())
        else:
            kinds.append(item)
    return kinds, total


# str() of the array breaks in _render's loop; _render cannot resume there (its loop's
# iterator, a TemplateIter, is one generated code cannot make again as such), so the call is
# the break and _render runs as its own frame: the iterator is then made for real, and the
# loop over it runs in the original's code.
@case(args=lambda: (arr(3),), graphs=1, ops=1,
      breaks=["cannot rebuild", "cannot rebuild", "iteration over TemplateIter"])
def array_template_rendered(x):
    return _render(t"value {x + 1}"), x
