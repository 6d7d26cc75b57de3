"""The benchmark workloads: pure Python, no framehook. Each entry of WORKLOADS
runs one iteration; iterations are a few milliseconds long on a release build."""

import math


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def run_fib():
    fib(16)  # 3193 calls, recursion up to 16 deep


class Vector:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def add(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def dot(self, other):
        return self.x * other.x + self.y * other.y

    def scaled(self, factor):
        return Vector(self.x * factor, self.y * factor)


def run_methods():
    total = Vector(0, 0)
    step = Vector(1, 2)
    checksum = 0
    for i in range(500):  # 2000 method calls (and 1000 __init__ calls)
        total = total.add(step.scaled(i & 3))
        checksum += total.dot(step) + step.dot(step)
    return checksum


def make_counter(start):
    count = start

    def increment(by):
        nonlocal count
        count += by
        return count

    return increment


def make_adder(n):
    def add(x):
        return x + n

    return add


def run_closures():
    counter = make_counter(0)
    adders = [make_adder(n) for n in range(8)]  # 8 closures made per iteration
    total = 0
    for i in range(250):  # 2250 closure calls
        for add in adders:
            total = add(total) & 0xFFFF
        counter(i)
    return total + counter(0)


def numbers(limit):
    for i in range(limit):
        yield i


def squares(values):
    for value in values:
        yield value * value


def evens(values):
    return (value for value in values if not value & 1)


def run_generators():
    # Three stacked generators, 1000 values: about 2500 resumes and yields.
    return sum(evens(squares(numbers(1000))))


class Encoder:
    """A small JSON encoder in the style of the stdlib's pure-Python one."""

    ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}

    def __init__(self, indent=None):
        self.indent = indent

    def encode(self, value):
        chunks = []
        self._encode(value, chunks, 0)
        return "".join(chunks)

    def _encode(self, value, chunks, depth):
        if value is None:
            chunks.append("null")
        elif value is True:
            chunks.append("true")
        elif value is False:
            chunks.append("false")
        elif isinstance(value, str):
            chunks.append(self._string(value))
        elif isinstance(value, int):
            chunks.append(str(value))
        elif isinstance(value, float):
            chunks.append(self._float(value))
        elif isinstance(value, dict):
            self._object(value, chunks, depth)
        elif isinstance(value, (list, tuple)):
            self._array(value, chunks, depth)
        else:
            raise TypeError(f"not JSON serialisable: {type(value).__name__}")

    def _string(self, text):
        return '"' + "".join(self.ESCAPES.get(char, char) for char in text) + '"'

    def _float(self, value):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("out of range float values are not JSON compliant")
        return repr(value)

    def _newline(self, chunks, depth):
        if self.indent is not None:
            chunks.append("\n" + " " * (self.indent * depth))

    def _object(self, value, chunks, depth):
        chunks.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                chunks.append(",")
            self._newline(chunks, depth + 1)
            chunks.append(self._string(str(key)))
            chunks.append(": ")
            self._encode(item, chunks, depth + 1)
        self._newline(chunks, depth)
        chunks.append("}")

    def _array(self, value, chunks, depth):
        chunks.append("[")
        for index, item in enumerate(value):
            if index:
                chunks.append(",")
            self._newline(chunks, depth + 1)
            self._encode(item, chunks, depth + 1)
        self._newline(chunks, depth)
        chunks.append("]")


DOCUMENT = {
    "name": "framehook",
    "versions": [3.9, 3.10, 3.11, 3.12, 3.13, 3.14],
    "hooks": [
        {"name": f"hook{i}", "cache": i % 2 == 0, "on_error": "raise", "calls": i * 7, "ratio": i / 3,
         "tags": ["a", "b\n", "c\"d"], "extra": None}
        for i in range(12)
    ],
    "matrix": {str(i): [i, i * 2, [True, False, None]] for i in range(10)},
}


def run_json():
    return Encoder(indent=2).encode(DOCUMENT)


WORKLOADS = {
    "fib": run_fib,
    "methods": run_methods,
    "closures": run_closures,
    "generators": run_generators,
    "json": run_json,
}


def all_codes():
    """Every code object of this module's functions, nested ones included."""
    found = {}  # by identity: equal code objects may be distinct
    namespaces = [globals(), vars(Encoder), vars(Vector)]
    pending = [value.__code__ for namespace in namespaces for value in namespace.values() if hasattr(value, "__code__")]
    while pending:
        code = pending.pop()
        if id(code) not in found:
            found[id(code)] = code
            pending += [const for const in code.co_consts if hasattr(const, "co_code")]
    return tuple(found.values())
