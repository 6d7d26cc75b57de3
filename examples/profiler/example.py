"""A small program to profile: python -m hookprof examples/profiler/example.py 22"""

import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def primes():
    found = []
    candidate = 2
    while True:
        if all(candidate % p for p in found):
            found.append(candidate)
            yield candidate
        candidate += 1


class Report:
    def __init__(self, n):
        self.n = n

    def lines(self):
        yield f"fib({self.n}) = {fib(self.n)}"
        first = primes()
        yield "primes: " + " ".join(str(next(first)) for _ in range(300))[:60] + " ..."


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 20
    for line in Report(n).lines():
        print(line)


if __name__ == "__main__":
    main(sys.argv)
