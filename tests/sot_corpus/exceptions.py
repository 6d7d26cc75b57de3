"""Exceptions: try/except/else/finally that do not raise, that raise and catch, and re-raise to the caller."""

import sys

from ._case import arr, case
from ._elsewhere import Registry

# 3.9/3.10's handlers (blocks) run a resume function's handler eagerly: one break fewer.
HANDLER_RESUMES = sys.version_info >= (3, 11)


class _MyError(Exception):
    pass


def _raises_value(v):
    raise ValueError("boom", 1)


def _checked_div(a, b):
    if b == 0:
        raise ZeroDivisionError("b is zero")
    return a / b


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def try_without_raise(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def try_else(x):
    try:
        y = x * 2
    except KeyError:
        y = x
    else:
        y = y + 1
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def try_finally(x):
    try:
        y = x + 1
    finally:
        z = 2.0
    return y * z


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def raise_and_catch(x):
    try:
        raise ValueError("bad")
    except ValueError:
        return x * 2


@case(args=lambda: (arr(3), "x"), graphs=1, ops=1)
def catch_int_parse_error(x, s):
    try:
        k = int(s)
    except ValueError:
        k = -1
    return x * k


@case(args=lambda: (arr(3), {"a": 1}), graphs=1, ops=1)
def catch_key_error_message(x, d):
    try:
        v = d["missing"]
    except KeyError as e:
        v = len(str(e))
    return x + v


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def catch_from_callee(x):
    try:
        return _raises_value(x)
    except ValueError as e:
        return x - len(e.args)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def finally_after_return_value(x):
    try:
        return x + 1
    finally:
        x = x * 3


@case(args=lambda: (arr(3),), graphs=0, ops=0, raises=ValueError)
def uncaught_raise(x):
    raise ValueError("no")


# The KeyError is the RuntimeError's context, with its traceback: the RuntimeError escapes,
# so the generated code goes back to where the KeyError was raised, and the resume function
# raises it there for real and runs the handler as it is (no break).
@case(args=lambda: (arr(3),), graphs=0, ops=0, raises=RuntimeError)
def raise_inside_except(x):
    try:
        raise KeyError("k")
    except KeyError:
        raise RuntimeError("wrapped") from None


@case(args=lambda: (arr(3), "zz"), graphs=0, ops=0, raises=ValueError)
def uncaught_from_builtin(x, s):
    k = int(s)
    return x * k


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def nested_try_with_finally(x):
    try:
        try:
            raise TypeError("t")
        except ValueError:
            return x
        finally:
            x = x + 1
    except TypeError:
        x = x * 2
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def exception_arguments(x):
    try:
        raise ValueError("abc", 3)
    except ValueError as e:
        n = e.args[1]
    return x * n


@case(args=lambda: (arr(3), 7), graphs=1, ops=1)
def catch_zero_division(x, a):
    try:
        r = a / 0
    except ZeroDivisionError:
        r = 0.5
    return x + r


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def except_tuple_of_types(x):
    try:
        [][1]
    except (KeyError, IndexError):
        return x - 1
    return x


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def try_in_loop_without_raise(x):
    for i in range(3):
        try:
            x = x + i
        except ValueError:
            pass
    return x


@case(args=lambda: (arr(3),), graphs=0, ops=0, raises=_MyError)
def custom_exception_uncaught(x):
    raise _MyError("custom")


# The exception leaves the frame with the traceback CPython gave it: 3.11+'s generated code
# raises and catches its copy where the original raises it; 3.9/3.10 raise it for real (a
# break there).
@case(args=lambda: (arr(3),), graphs=1, ops=1,
      breaks=[] if HANDLER_RESUMES else ["raised and caught in the translation"])
def exception_object_returned(x):
    y = x * 2
    try:
        raise ValueError("v")
    except ValueError as e:
        err = e
    return y, err


@case(args=lambda: (arr(3), 0), graphs=1, ops=1)
def callee_raises_caught_as_base_class(x, b):
    try:
        return _checked_div(x, b)
    except ArithmeticError as e:
        return x * len(str(e))


@case(args=lambda: (arr(3), 2), graphs=1, ops=1)
def callee_does_not_raise(x, b):
    try:
        return _checked_div(x, b)
    except ArithmeticError:
        return x


@case(args=lambda: (arr(3), [1, 0, 2]), graphs=1, ops=2)
def catch_inside_loop(x, ds):
    for d in ds:
        try:
            x = x + 6 // d
        except ZeroDivisionError:
            continue
    return x


@case(args=lambda: (arr(3),), graphs=0, ops=0, raises=KeyError)
def reraise_bare(x):
    try:
        {}["gone"]
    except KeyError:
        raise


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def exception_chaining_cause(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as e:
        return x * 2, type(e.__cause__).__name__


class _CodepointError(ValueError):
    """idna's InvalidCodepoint: an exception given attributes after it is made."""


@case(args=lambda: (arr(3), _CodepointError("bad")), graphs=1, ops=1)
def an_attribute_stored_on_an_exception_from_the_frame(x, error):
    # BaseException's own __setattr__ is CPython's generic store: replayed as any store.
    error.codepoint = 5
    return x * error.codepoint, error.codepoint



@case(args=lambda: (arr(3), set()), graphs=1, ops=1, breaks=["unsupported call: set.update"])
def builtin_method_refusing_keywords_raises_cpythons_message(x, items):
    # CPython calls `items.update(...)` through set's method descriptor, which names the
    # type in its message ("set.update() takes no keyword arguments"); found by the fuzzer.
    try:
        items.update(k=2)
    except TypeError as error:
        return x * 2, str(error)
    return x, ""


@case(args=lambda: (arr(3), []), graphs=1, ops=1, raises=ValueError)
def raised_by_code_holding_another_modules_globals(x, items):
    # jinja2's rewrite_traceback_stack hashes each frame's code (`f_code in internal_code`):
    # the frame that raises runs generated code, which holds the globals of the module
    # `names` reads (a dict) to read `REGISTERED` from.
    items.append(Registry().names())
    items.append(x + 1)
    raise ValueError(f"after {len(items)}")
