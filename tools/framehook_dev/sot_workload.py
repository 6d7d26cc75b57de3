"""The functions ``sot_soak`` translates. Load them with ``sot_soak.load_workload()``, not
by importing this module: see there why."""

import zlib


def affine(x, y):
    return x * 2.0 + y


def with_break(x, y):
    z = x * 2.0 + y
    zlib.crc32(b"framehook")  # an opaque C call: the graph breaks, a resume function runs on
    return z - x


def branchy(x, total):
    for _ in range(1):
        if total(x) > 0:  # data-dependent, in a loop: the graph breaks, each side resumes
            return x + 1.0
    return x - 1.0


def assumed(x, total):
    if total(x) > 0:  # data-dependent: assumed, checked by the graph; the other way reruns
        return x + 1.0
    return x - 1.0


def make_scaled(k):
    def scaled(x, y, c):
        return x * k + y * c

    return scaled
