"""A module measured by coverage.py and stepped through by pdb in test_coexistence.py.

Every kind of function a hook may replace: branches, loops, closures, a generator,
try/except, a class with methods, comprehensions. Some branches are never taken, so
coverage has missing lines and arcs to report: the lines marked "never runs". The pdb
test finds the lines it expects by their text."""

import threading


def classify(n):
    if n < 0:
        return "negative"
    elif n == 0:
        return "zero"
    return "positive"


def accumulate(values):
    total = 0
    for value in values:
        if value % 2:
            total += value
        else:
            total -= 1
    while total > 100:
        total //= 2
    return total


def make_counter(start):
    count = start

    def bump(step=1):
        nonlocal count
        count += step
        return count

    return bump


def countdown(n):
    while n > 0:
        yield n
        n -= 1
    if n < 0:
        yield "never"  # never runs


def parse(text):
    try:
        number = int(text)
    except ValueError:
        number = None
    except TypeError:  # never runs
        number = -1  # never runs
    finally:
        parsed = True
    return number, parsed


class Shape:
    sides = 0

    def __init__(self, name, sides):
        self.name = name
        self.sides = sides

    def describe(self):
        if self.sides == 0:
            return self.name + " (round)"
        return f"{self.name} ({self.sides} sides)"

    @staticmethod
    def unused():
        return "never called"  # never runs


def squares(limit):
    evens = [i * i for i in range(limit) if i % 2 == 0]
    lookup = {i: classify(i - 1) for i in range(3)}
    return evens, lookup, sum(x for x in evens)


def scale(values, factor):
    doubled = [v * factor for v in values]
    result = accumulate(doubled)
    label = classify(result)
    return label, result


def in_thread(values):
    results = []
    worker = threading.Thread(target=lambda: results.append(accumulate(values)))
    worker.start()
    worker.join()
    return results


def run():
    bump = make_counter(10)
    shapes = [Shape("circle", 0), Shape("square", 4)]
    return (
        [classify(n) for n in (-1, 0, 1)],
        accumulate([1, 2, 3, 50, 99]),
        [bump(), bump(5)],
        list(countdown(3)),
        [parse("12"), parse("x")],
        [shape.describe() for shape in shapes],
        squares(5),
        scale([1, 3], 7),
        in_thread([5, 6]),
    )
