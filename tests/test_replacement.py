"""Replacement code objects with layouts that differ from the original's run
correctly through framehook's shadow-frame path."""

import asyncio
import inspect
import sys
import traceback

import pytest

import framehook
from conftest import FREE_THREADED_313, HOOKS_GENERATORS, renamed, replace_code, with_extra_local


def run_replaced(func, replacement_func_or_code, *args, **kwargs):
    code = getattr(replacement_func_or_code, "__code__", replacement_func_or_code)
    hook = replace_code(func.__code__, renamed(code, func.__code__))
    with framehook.frame_hook(hook):
        return func(*args, **kwargs)


def test_plain_function_replaced():
    def f(a, b):
        return a + b

    def g(a, b):
        return a * b

    assert run_replaced(f, g, 3, 4) == 12
    assert f(3, 4) == 7


def test_extra_locals_in_replacement():
    def f(a, b):
        return a - b

    def g(a, b):
        x = a * 10
        y = b * 100
        z = [x, y]
        return sum(z) - a

    assert run_replaced(f, g, 1, 2) == 209
    assert run_replaced(f, with_extra_local(f.__code__), 5, 2) == 3


def test_fewer_locals_in_replacement():
    def f(a):
        p = a + 1
        q = p + 1
        r = q + 1
        return r

    def g(a):
        return -a

    assert run_replaced(f, g, 4) == -4


def test_arguments_mapped_by_name_when_reordered_in_layout():
    def f(a, b, *, c, d):
        return (a, b, c, d)

    # Same signature shape, names in a different order: values follow the names.
    def g(b, a, *, d, c):
        return (a, b, c, d)

    assert run_replaced(f, g, 1, 2, c=3, d=4) == (1, 2, 3, 4)


def test_argument_captured_by_a_closure():
    def f(a, b):
        return a + b

    def g(a, b):
        def inner():
            return a * b

        a += 1
        return inner()

    assert run_replaced(f, g, 2, 5) == 15
    assert run_replaced(g, with_extra_local(g.__code__), 2, 5) == 15


def make_closures():
    base = 10
    scale = 3

    def f(x):
        return base + x + scale

    def g(x):
        def level1(y):
            def level2(z):
                return base * scale + z + y

            return level2(x)

        return level1(1)

    return f, g


def test_closures_and_nested_closures():
    f, g = make_closures()
    assert f.__code__.co_freevars == g.__code__.co_freevars == ("base", "scale")
    assert run_replaced(f, g, 5) == 36
    assert run_replaced(g, with_extra_local(g.__code__), 5) == 36


def test_defaults_kwonly_posonly_varargs_varkw():
    def f(a, b=2, /, c=3, *args, d, e=5, **kw):
        return "orig"

    def g(a, b=2, /, c=3, *args, d, e=5, **kw):
        extra = (a, b, c, args, d, e, sorted(kw.items()))
        return extra

    assert run_replaced(f, g, 1, d=4) == (1, 2, 3, (), 4, 5, [])
    assert run_replaced(f, g, 1, 9, 8, 7, 6, d=4, e=0, z=1, b=2) == (1, 9, 8, (7, 6), 4, 0, [("b", 2), ("z", 1)])


def test_method_with_super_in_both():
    class A:
        def f(self, n):
            return n

    class B(A):
        def f(self, n):
            return super().f(n) + 1

        def g(self, n):
            unused = 0
            return super().f(n) * 100 + unused

    assert run_replaced(B().f, B.g, 3) == 300


def test_lambdas_and_comprehensions():
    f = lambda x: x + 1  # noqa: E731
    g = lambda x: [i * x for i in range(3)] + [{k: k for k in "ab"}]  # noqa: E731
    assert run_replaced(f, g, 2) == [0, 2, 4, {"a": "a", "b": "b"}]

    def h(xs):
        return [x * 2 for x in xs]

    assert run_replaced(h, with_extra_local(h.__code__), [1, 2]) == [2, 4]


def test_try_except_finally_with_in_original_and_replacement():
    log = []

    class CM:
        def __enter__(self):
            log.append("enter")
            return self

        def __exit__(self, *exc):
            log.append("exit")
            return True  # swallow

    def f(x):
        try:
            return 1 / x
        except ZeroDivisionError:
            return "zero"
        finally:
            log.append("finally-f")
            assert CM  # same free variables as g

    def g(x):
        with CM():
            raise ValueError(x)
        try:
            try:
                return 1 / x
            finally:
                log.append("finally-g")
        except ZeroDivisionError as exc:
            return type(exc).__name__

    assert run_replaced(f, g, 0) == "ZeroDivisionError"
    assert log == ["enter", "exit", "finally-g"]
    log.clear()
    assert run_replaced(f, with_extra_local(f.__code__), 0) == "zero"
    assert log == ["finally-f"]


def test_exception_propagates_from_replacement_with_traceback():
    def f(x):
        return x

    def g(x):
        raise KeyError(x)

    replacement = renamed(g.__code__, f.__code__)
    hook = replace_code(f.__code__, replacement)
    with framehook.frame_hook(hook):
        with pytest.raises(KeyError) as info:
            f("k")
    codes = [entry.tb_frame.f_code for entry in _tb_entries(info.value.__traceback__)]
    assert replacement in codes
    assert f.__code__ not in codes
    text = "".join(traceback.format_exception(info.type, info.value, info.tb))
    assert "raise KeyError(x)" in text


def _tb_entries(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_getframe_and_inspect_inside_replacement():
    seen = {}

    def caller():
        return f(1)

    def f(x):
        return x, seen  # same free variables as g

    def g(x):
        frame = sys._getframe()
        seen["code"] = frame.f_code
        seen["back"] = frame.f_back.f_code
        seen["inspect"] = inspect.currentframe().f_code
        seen["locals"] = dict(frame.f_locals)
        seen["stack"] = [info.function for info in inspect.stack()[:2]]
        return x

    replacement = renamed(g.__code__, f.__code__)
    with framehook.frame_hook(replace_code(f.__code__, replacement)):
        caller()
    assert seen["code"] is replacement
    assert seen["inspect"] is replacement
    assert seen["back"] is caller.__code__
    assert seen["locals"]["x"] == 1
    assert seen["stack"] == ["f", "caller"]


def test_recursion_through_replacement():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def fib2(n):
        a = n
        return a if a < 2 else fib(a - 1) + fib(a - 2)

    assert run_replaced(fib, fib2, 20) == 6765

    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)

    # Deep enough to cross the data stack's chunk boundaries several times.
    assert run_replaced(depth, with_extra_local(depth.__code__), 400) == 400


def test_generator_function():
    def gen(n):
        for i in range(n):
            yield i

    def gen2(n):
        total = 0
        for i in range(n):
            total += i
            yield total

    hook = replace_code(gen.__code__, renamed(gen2.__code__, gen.__code__))
    with framehook.frame_hook(hook):
        result = list(gen(4))
    if HOOKS_GENERATORS:
        assert result == [0, 1, 3, 6]
        assert hook.calls >= 1
    else:
        # 3.9/3.10: generator frames pass through unhooked.
        assert result == [0, 1, 2, 3]


def test_coroutine_function():
    async def coro(x):
        return x

    async def coro2(x):
        await asyncio.sleep(0)
        return x * 2

    hook = replace_code(coro.__code__, renamed(coro2.__code__, coro.__code__))
    with framehook.frame_hook(hook):
        result = asyncio.run(coro(21))
    assert result == (42 if HOOKS_GENERATORS else 21)


def test_async_generator_function():
    async def agen(n):
        for i in range(n):
            yield i

    async def agen2(n):
        for i in range(n):
            yield -i

    async def collect():
        return [x async for x in agen(3)]

    hook = replace_code(agen.__code__, renamed(agen2.__code__, agen.__code__))
    with framehook.frame_hook(hook):
        result = asyncio.run(collect())
    assert result == ([0, -1, -2] if HOOKS_GENERATORS else [0, 1, 2])


def test_generator_resume_is_not_hooked():
    def gen():
        yield 1
        yield 2

    calls = []

    def hook(frame):
        if frame.original_code is gen.__code__:
            calls.append(1)

    with framehook.frame_hook(hook):
        assert list(gen()) == [1, 2]
    assert len(calls) == (1 if HOOKS_GENERATORS else 0)


def test_module_body_replaced_keeps_its_namespace():
    original = compile("a = 1\nb = a + 1\n", "<mod>", "exec")
    replacement = compile("a = 10\nb = a + 1\nc = 'new'\n", "<mod>", "exec")
    namespace = {}
    with framehook.frame_hook(replace_code(original, replacement)):
        exec(original, namespace)
    assert (namespace["a"], namespace["b"], namespace["c"]) == (10, 11, "new")


def test_class_body_replaced():
    def make():
        class C:
            x = 1

        return C

    body = next(c for c in make.__code__.co_consts if hasattr(c, "co_code") and c.co_name == "C")
    source = compile("class C:\n    x = 2\n    y = 3\n", "<cls>", "exec")
    new_body = next(c for c in source.co_consts if hasattr(c, "co_code"))
    kwargs = {"co_qualname": body.co_qualname} if sys.version_info >= (3, 11) else {}
    new_body = new_body.replace(**kwargs)
    with framehook.frame_hook(replace_code(body, new_body)):
        cls = make()
    assert (cls.x, cls.y) == (2, 3)


@pytest.mark.skipif(FREE_THREADED_313, reason="free-threaded 3.13 makes every code object made at run time "
                    "immortal once a thread has run (gh-117696), so whether it can go depends on test order")
def test_a_replacement_is_not_kept_alive_by_framehook():
    """framehook remembers a checked replacement (its argument map) without keeping it: a
    replacement that references its original's globals would otherwise make globals ->
    function -> code -> co_extra -> replacement -> globals a cycle the GC cannot see."""
    import gc
    import weakref

    namespace = {}
    exec("def f(a, b):\n    return a + b\n", namespace)
    f = namespace["f"]
    replacements = [renamed(with_extra_local((lambda a, b: a * b).__code__), f.__code__) for _ in range(3)]
    gone = [weakref.ref(code) for code in replacements]
    for code in replacements:
        with framehook.frame_hook(replace_code(f.__code__, code)):
            assert [f(3, 4), f(2, 5)] == [12, 10]  # the second call reuses the remembered plan
    assert f(3, 4) == 7
    del code, replacements
    gc.collect()
    assert [ref() for ref in gone] == [None] * 3
