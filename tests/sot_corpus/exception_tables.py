"""try and with (exception tables on 3.11+) combined with comprehensions, loops and callees."""

from ._case import arr, case


class _Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append("exit")
        return False


def _guarded(v):
    try:
        return v + 1
    finally:
        pass


def _scaled(v, n):
    for i in range(n):
        yield v * i


@case(args=lambda: (arr(2, 3), arr(3, 2, seed=1)), graphs=1, ops=2)
def try_around_matmul(x, y):
    try:
        z = x @ y + 1
    except ValueError:
        z = None
    return z


@case(args=lambda: (arr(3), []), graphs=1, ops=1)
def with_and_try_finally(x, log):
    with _Recorder(log):
        try:
            y = x * 2
        finally:
            log.append("finally")
    return y


@case(args=lambda: ([arr(3, seed=i) for i in range(3)],), graphs=1, ops=3)
def try_around_comprehension(xs):
    try:
        return [v * 2 for v in xs]
    except TypeError:
        return []


@case(args=lambda: (arr(3), []), graphs=1, ops=3)
def comprehension_inside_with(x, log):
    with _Recorder(log):
        ys = [x + k for k in range(3)]
    return ys


@case(args=lambda: (arr(3),), graphs=1, ops=1)
def reraise_caught_by_outer_try(x):
    try:
        try:
            raise ValueError("in")
        except ValueError:
            raise KeyError("out") from None
    except KeyError as e:
        return x * len(e.args)


@case(args=lambda: (arr(3),), graphs=1, ops=2)
def callee_with_try_finally(x):
    return _guarded(x) * 2


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def with_in_loop(x, log):
    for i in range(2):
        with _Recorder(log):
            x = x + i
    return x


@case(args=lambda: (arr(3), []), graphs=1, ops=2)
def try_except_else_finally(x, log):
    try:
        y = x + 1
    except ZeroDivisionError:
        log.append("except")
    else:
        log.append("else")
        y = y * 2
    finally:
        log.append("finally")
    return y


@case(args=lambda: (arr(3),), graphs=1, ops=3)
def generator_consumed_in_try(x):
    try:
        return list(_scaled(x, 3))
    finally:
        pass


@case(args=lambda: (arr(3), ["1", "x", "3"]), graphs=1, ops=1)
def comprehension_with_try_in_helper(x, texts):
    def parse(s):
        try:
            return int(s)
        except ValueError:
            return 0

    return x * sum([parse(s) for s in texts])


@case(args=lambda: (arr(3), []), graphs=1, ops=3)
def dict_comprehension_in_with_in_try(x, log):
    try:
        with _Recorder(log):
            d = {k: x * k for k in (1, 2)}
    except RuntimeError:
        d = {}
    return d, d[1] + d[2]


@case(args=lambda: (arr(3),), graphs=1, ops=5)
def break_out_of_try_finally_in_loop(x):
    for i in range(5):
        try:
            if i == 2:
                break
            x = x + 1
        finally:
            x = x * 2
    return x


@case(args=lambda: (arr(3), {"a": 2.0}), graphs=1, ops=2)
def set_comprehension_and_try_lookup(x, d):
    keys = {k.upper() for k in d}
    try:
        k = d["A"]
    except KeyError:
        k = d["a"]
    return x * k + len(keys), keys
