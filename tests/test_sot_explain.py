"""What SOT says it did: ``sot.explain``'s text (graphs, guards and breaks, and the values
a break handed on, named as the user wrote them), ``sot.stats``' guard count, and the
debug log of translations, breaks and guard failures."""

import logging
import re

import numpy as np
import pytest

import framehook.sot as sot
from framehook.sot._numpy_backend import NumpyBackend

pytestmark = pytest.mark.usefixtures("fresh_sot")


def test_explain_names_graphs_guards_and_breaks():
    def f(x):
        y = np.tanh(x)
        print("hi")
        return y

    text = sot.explain(f, np.ones(2))
    assert "tanh" in text and "guards" in text and "graph break: print()" in text
    assert 'print("hi")' in text


def test_logging_reports_breaks(caplog):
    def f(x):
        print("x")
        return x

    def g(x, k):
        return x * k

    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        sot.translate(f)(np.ones(1))
        fast = sot.translate(g)
        fast(np.ones(1), 2)
        fast(np.ones(1), 3)
    messages = [r.getMessage() for r in caplog.records if r.name == "framehook.sot"]
    assert any("graph break" in m and "print" in m for m in messages)
    # The qualified name where the code has one (3.11+), else the name.
    assert any(m.startswith("translated ") and m.split(":")[0].split(".")[-1] in ("g", "translated g")
               for m in messages)
    assert any("guard failure in" in m and "k == 2" in m for m in messages)


class _Tempered:
    """A model whose reads after a graph break reach a resume function."""

    def __init__(self):
        self.config = {"temperature": 2.0}

    def forward(self, x):
        y = np.tanh(x)
        print("between the graphs")
        return y / self.config["temperature"]

    def scaled(self, x):
        y = np.tanh(x)
        return y * (print("inside the expression") or self.config["temperature"])

    def gated(self, x):
        y = np.tanh(x)
        if (y > 0).all():
            return y * self.config["temperature"]
        return y

    def gated_by_name(self, x):
        positive = (np.tanh(x) > 0).all()
        if positive:
            return x * self.config["temperature"]
        return x


class _BreakingAtBranches(NumpyBackend):
    runs_assumptions = False


def guard_blocks(text):
    """Each translation's guard lines in ``sot.explain``'s text, in its order."""
    lines = text.splitlines()
    blocks = []
    for start, line in enumerate(lines):
        if line.startswith("  guards ("):
            count = int(line.split("(")[1].split(")")[0])
            blocks.append([g.strip() for g in lines[start + 1:start + 1 + count]])
    return blocks


def line_of(fn, text):
    """The line of ``fn``'s source that holds ``text``."""
    import inspect

    source, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(source) if text in line)


# What a resume function's guards read was handed to it in one list, its one argument
# (named as the original's first parameter where that is handed on): they were shown as
# items of that list (`self type is list`, `self[1].config['temperature'] == 2.0`).
PACKED = re.compile(r"^(self|__sot_\w+)\[|__sot_|^self type is list|^self len ==")


def test_explain_names_what_a_break_handed_on_as_the_user_wrote_it(capsys):
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.forward)
    np.testing.assert_array_equal(fast(x), np.tanh(x) / 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, len(st.graph_breaks), st.fallbacks) == (2, 2, 2, 1, [])
    text = sot.explain(model.forward, x)
    assert "translations=2 graphs=2 ops=2 breaks=1 fallbacks=0" in text, text
    before, resumed = guard_blocks(text)
    # The variables handed on, by the names the user wrote.
    assert "self.config['temperature'] == 2.0" in resumed, text
    assert "self type is _Tempered" in resumed, text
    assert "y tensor ndarray dtype=dtype('float64') shape=(2,)" in resumed, text
    # The list itself, which the user never wrote, as such.
    assert "<values handed on> type is list" in resumed, text
    assert not [g for g in before + resumed if PACKED.search(g)], text
    assert capsys.readouterr().out.count("between the graphs") == 2


def test_stats_count_the_guards_of_every_translation():
    # Two translations (before and after the break): their guards, as explain lists them.
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.forward)
    fast(x)
    blocks = guard_blocks(sot.explain(model.forward, x))
    assert len(blocks) == 2 and all(blocks)
    assert sot.stats(fast).guards == sum(len(block) for block in blocks)


def test_explain_names_stack_values_a_break_handed_on():
    # A value on the stack at the break by the variable it was read from; the call's
    # result by its place and line; a branch's condition as the truth of the tensor tested.
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.scaled)
    np.testing.assert_array_equal(fast(x), np.tanh(x) * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    _, resumed = guard_blocks(sot.explain(model.scaled, x))
    line = line_of(_Tempered.scaled, "print(")
    assert f"<stack 1 at line {line}> == None" in resumed, resumed
    assert "y tensor ndarray dtype=dtype('float64') shape=(2,)" in resumed, resumed
    assert "self.config['temperature'] == 2.0" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed

    # Under a backend whose graphs do not check assumptions, a branch on a value breaks.
    sot.register_backend("numpy-breaking-at-branches", _BreakingAtBranches())
    fast = sot.translate(model.gated, backend="numpy-breaking-at-branches")
    np.testing.assert_array_equal(fast(x), np.tanh(x) * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    assert st.graph_breaks[0].reason == "data-dependent branch on a tensor's value"
    _, resumed = guard_blocks(sot.explain(fast, x))
    line = line_of(_Tempered.gated, "if (y > 0)")
    assert f"bool(<tensor at line {line}>) == True" in resumed, resumed
    assert "self.config['temperature'] == 2.0" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed

    fast = sot.translate(model.gated_by_name, backend="numpy-breaking-at-branches")
    np.testing.assert_array_equal(fast(x), x * 2.0)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, len(st.graph_breaks), st.fallbacks) == (2, 2, 1, [])
    _, resumed = guard_blocks(sot.explain(fast, x))
    assert "bool(positive) == True" in resumed, resumed
    assert not [g for g in resumed if PACKED.search(g)], resumed


def test_a_resume_functions_guard_failure_is_logged_by_the_users_names(caplog, capsys):
    model, x = _Tempered(), np.ones(2)
    fast = sot.translate(model.forward)
    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        fast(x)
        model.config["temperature"] = 4.0
        np.testing.assert_array_equal(fast(x), np.tanh(x) / 4.0)
    st = sot.stats(fast)
    # The generated code before the break hits its cache; the resume function's guard fails.
    assert (st.translations, st.graphs, st.cache_hits, st.guard_failures, st.recompilations) == (3, 3, 1, 1, 1)
    assert len(st.graph_breaks) == 1 and st.fallbacks == []
    failures = [r.getMessage() for r in caplog.records if "guard failure" in r.getMessage()]
    assert len(failures) == 1, failures
    assert failures[0].endswith("no longer holds: self.config['temperature'] == 2.0"), failures


def _breaking_scale(x, k):
    import zlib

    y = x * k
    zlib.crc32(b"")  # an opaque call: a graph break
    return y


def test_translations_breaks_and_guard_failures_are_logged_at_debug_level(caplog):
    fast = sot.translate(_breaking_scale)
    fast(np.ones(2), 2)  # the logger at its default level: nothing described
    assert [r for r in caplog.records if r.name == "framehook.sot"] == []
    with caplog.at_level(logging.DEBUG, logger="framehook.sot"):
        fast(np.ones(2), 3.5)  # another type: the guard on k fails
    messages = [r.getMessage() for r in caplog.records if r.name == "framehook.sot"]
    assert any(m.startswith("guard failure in _breaking_scale: no longer holds: k") for m in messages), messages
    assert any(m.startswith("translated _breaking_scale:") for m in messages), messages
    assert any(m.startswith("graph break in _breaking_scale:") for m in messages), messages


class _LoudMeta(type):
    shown = 0

    def __repr__(cls):
        _LoudMeta.shown += 1
        return "loud"


class _LoudConfig(metaclass=_LoudMeta):
    scale = 2.0


def _scaled_by_a_pinned_class(x):
    return x * _LoudConfig.scale


def test_explain_describes_guarded_values_without_running_their_code():
    # A guard's description showed repr(): a __repr__ with side effects ran while
    # translating (a list appending to itself as it was shown never ended).
    fast = sot.translate(_scaled_by_a_pinned_class)
    fast(np.ones(2))
    text = sot.explain(fast, np.ones(2))
    assert _LoudMeta.shown == 0
    assert "G[_LoudConfig] is <class '_LoudConfig'>" in text, text


_collected: list = []


class _Collecting(logging.Handler):
    """A user's log handler: user code, which a session translates where translated code
    calls it."""

    def emit(self, record):
        _collected.append(record.getMessage())


def test_a_users_log_handler_runs_as_it_is():
    """The translator's own log records reach a user's handler untranslated: translated on
    account of the report, the handler's append to a global list was guarded on the list's
    length, which each record changes (a translation and a guard failure, itself reported,
    per record)."""

    def f(x, k):
        return x * k

    logger = logging.getLogger("framehook.sot")
    handler, level = _Collecting(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    _collected.clear()
    try:
        fast = sot.translate(f, cost_model=False)
        x = np.ones(2)
        for k in (2.0, 2.0, 3.0, 3.0):
            np.testing.assert_array_equal(fast(x, k), x * k)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    st = sot.stats(fast)
    # f's two translations (k == 2.0, then k == 3.0) and their cache hits, nothing else.
    assert (st.translations, st.cache_hits, st.guard_failures) == (2, 2, 1), st
    assert len(_collected) == 3, _collected
    assert _collected[0].startswith("translated ") and _collected[2].startswith("translated "), _collected
    assert _collected[1].startswith("guard failure in ") and "k == 2.0" in _collected[1], _collected
