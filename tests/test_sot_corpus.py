"""framehook SOT's own translator (numpy backend) against the differential corpus in
tests/sot_corpus: each case runs eagerly and translated, on equal fresh arguments and the
same global state, and must give the same result, the same side effects on its arguments
and globals, the same stdout (or the same exception), and the counters the case expects
after the first call: graphs, captured ops, graph breaks (by reason) and fallbacks. A case
expecting no break runs under ``full_graph=True``; a case never translated fails (unless a
graph break inside a loop made the frame run eagerly, as the translator must). A second
call on fresh equal arguments must again match eager and be served from the cache.

The counters are checked at run time too (tests/sot_runtime.py): on each call, every
translation's generated code ran, and the compiled graphs that ran are the graphs the case
expects, with its ops; the second call runs what the first ran. (tests/test_sot_mutation.py
checks that a translator that translates and then runs the original code fails this.)
"""

import pytest

import framehook.sot as sot
from sot_corpus import collect
from sot_corpus._compare import GlobalState, assert_same
from sot_corpus.known_gaps import known_gap
from sot_runtime import RunTime

CASES, SKIPPED = collect()


def _params():
    params = []
    for entry in CASES:
        reason = entry.skip_reason
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        gap = known_gap(entry.id)
        if gap:
            marks.append(pytest.mark.xfail(strict=True, reason=f"translator gap: {gap}"))
        params.append(pytest.param(entry, id=entry.id, marks=marks))
    for skipped in SKIPPED:
        params.append(pytest.param(None, id=skipped.id, marks=[pytest.mark.skip(reason=skipped.reason)]))
    return params


@pytest.fixture(autouse=True)
def sot_forgets_everything():
    sot.reset()
    yield
    sot.reset()


@pytest.fixture
def run_time():
    with RunTime() as seen:
        yield seen


def _run(fn, args, kwargs):
    """``(result, exception)`` of one call."""
    try:
        return fn(*args, **kwargs), None
    except sot.GraphBreakError:
        raise
    except Exception as error:  # the outcome to compare
        return None, error


class Run:
    """One eager call and one translated call on equal fresh arguments."""

    def __init__(self, entry, state, capsys):
        self.entry = entry
        self.state = state
        self.capsys = capsys

    def eager(self):
        entry = self.entry
        self.args, self.kwargs = entry.make_args(), entry.make_kwargs()
        self.state.reset()
        self.capsys.readouterr()
        self.result, self.error = _run(entry.fn, self.args, self.kwargs)
        self.stdout = self.capsys.readouterr().out
        self.globals = self.state.capture()
        if entry.raises is None and self.error is not None:
            pytest.fail(f"{entry.id}: the eager run raised {self.error!r}; the case is broken")
        if entry.raises is not None and not isinstance(self.error, entry.raises):
            pytest.fail(f"{entry.id}: the eager run gave {self.error or self.result!r}, "
                        f"the case expects {entry.raises.__name__}; the case is broken")

    def translated(self, fast, describe):
        entry = self.entry
        args, kwargs = entry.make_args(), entry.make_kwargs()
        self.state.reset()
        self.capsys.readouterr()
        try:
            result, error = _run(fast, args, kwargs)
        except sot.GraphBreakError as error:
            pytest.fail(f"{entry.id}: expected to translate without a break or fallback, but: {error}\n"
                        f"{describe()}")
        stdout = self.capsys.readouterr().out
        try:
            if self.error is not None:
                assert error is not None, f"translated returned {result!r}, eager raised {self.error!r}"
                assert_same(self.error, error, "raised", entry.rtol)  # type, message, traceback, chain
            else:
                if error is not None:
                    raise AssertionError(f"translated raised {error!r}, eager returned {self.result!r}") from error
                assert_same(self.result, result, "result", entry.rtol)
            assert_same(self.args, args, "args (side effects)", entry.rtol)
            assert_same(self.kwargs, kwargs, "kwargs (side effects)", entry.rtol)
            got_globals = self.state.capture()
            for name in entry.globals_checked:
                assert_same(self.globals[name], got_globals[name], f"global {name}", entry.rtol)
            assert stdout == self.stdout, f"stdout {stdout!r}, eager printed {self.stdout!r}"
        except AssertionError as failure:
            pytest.fail(f"{entry.id}: {failure}\n{describe()}")


def _counters(st):
    return (f"translations={st.translations} cache_hits={st.cache_hits} guard_failures={st.guard_failures} "
            f"graphs={st.graphs} ops_captured={st.ops_captured} "
            f"graph_breaks={[(b.reason, b.lineno) for b in st.graph_breaks]!r} "
            f"fallbacks={[(f.reason, f.lineno) for f in st.fallbacks]!r}")


def _counter_problems(entry, st):
    problems = []
    # A graph break inside a loop makes the translator run the frame eagerly (the issue's
    # rule): that frame was judged, not skipped. Anything else must have been translated.
    ran_eagerly_for_a_loop = any("loop" in b.reason for b in st.graph_breaks)
    if st.translations < 1 and not ran_eagerly_for_a_loop:
        problems.append("the function was never translated (it ran as plain Python)")
    if entry.translations is not None and st.translations != entry.translations:
        problems.append(f"translations {st.translations}, expected {entry.translations}")
    if st.graphs != entry.graphs:
        problems.append(f"graphs {st.graphs}, expected {entry.graphs}")
    if st.ops_captured != entry.ops:
        problems.append(f"ops_captured {st.ops_captured}, expected {entry.ops}")
    reasons = [brk.reason for brk in st.graph_breaks]
    if len(reasons) != entry.break_count:
        problems.append(f"{len(reasons)} graph breaks, expected {entry.break_count}")
    elif not isinstance(entry.breaks, int):
        for reason, wanted in zip(reasons, entry.breaks):
            if wanted.lower() not in reason.lower():
                problems.append(f"graph break reason {reason!r} does not contain {wanted!r}")
    if len(st.fallbacks) != entry.fallbacks:
        problems.append(f"{len(st.fallbacks)} fallbacks, expected {entry.fallbacks}")
    return problems


def _first_run_problems(entry, st, ran):
    """What the first call ran against what it translated and what the case expects."""
    problems = []
    if ran.generated_frames < st.translations:
        problems.append(f"{st.translations} translations, but {ran.generated_frames} frames ran generated code")
    if (ran.graphs, ran.ops) != (entry.graphs, entry.ops):
        problems.append(f"{ran.graphs} graphs of {ran.ops} ops ran, expected {entry.graphs} of {entry.ops}")
    return problems


def _hot_run_problems(first, second):
    """What the second call (from the cache) ran against what the first ran."""
    if second != first:
        return [f"the second call ran {second.describe()}, the first {first.describe()}"]
    return []


@pytest.mark.parametrize("entry", _params())
def test_case(entry, capsys, run_time):
    fn = entry.fn
    state = GlobalState(fn.__globals__, entry.globals_checked)
    fast = None

    def explanation():
        """What the translator says about the case (on failure only): counters and sot.explain."""
        lines = []
        if fast is not None:
            try:
                lines.append(_counters(sot.stats(fast)))
            except Exception as error:  # the explanation must not hide the failure
                lines.append(f"(sot.stats failed: {error!r})")
        try:
            state.reset()
            text = sot.explain(fn, *entry.make_args(), **entry.make_kwargs())
        except Exception as error:
            text = f"(sot.explain failed: {error!r})"
        return "\n".join(lines + ["--- sot.explain ---", text])

    try:
        first = Run(entry, state, capsys)
        first.eager()
        fast = sot.translate(fn, backend="numpy", full_graph=entry.strict)
        ran_first = run_time.measure(fast, lambda: first.translated(fast, explanation))

        st = sot.stats(fast)
        problems = _counter_problems(entry, st) + _first_run_problems(entry, st, ran_first)
        if problems:
            pytest.fail(f"{entry.id}: " + "; ".join(problems) + f"\n{explanation()}")
        # Calls on which a number the translation saw has changed: each recompiles once,
        # computing with that number in the graph from then on (a dynamic source).
        failures_before = sot.stats(fast).guard_failures
        for _ in range(entry.recompiles + entry.rejected):
            changed = Run(entry, state, capsys)
            changed.eager()
            changed.translated(fast, explanation)
        st = sot.stats(fast)
        if entry.rejected and st.guard_failures - failures_before < entry.rejected:
            pytest.fail(f"{entry.id}: {st.guard_failures - failures_before} guard failures on arguments the "
                        f"first translation must reject, expected {entry.rejected}\n{explanation()}")
        if entry.recompiles and st.recompilations != entry.recompiles:
            pytest.fail(f"{entry.id}: {st.recompilations} recompilations, expected {entry.recompiles}\n"
                        f"{explanation()}")
        # Numbers, not the object: stats may be a live view.
        hits, graphs = st.cache_hits, st.graphs

        # The second call, on fresh equal arguments: again eager's result, from the cache.
        second = Run(entry, state, capsys)
        second.eager()
        ran_second = run_time.measure(fast, lambda: second.translated(fast, explanation))
        if entry.hot:
            problems = _hot_run_problems(ran_first, ran_second)
            if problems:
                pytest.fail(f"{entry.id}: " + "; ".join(problems) + f"\n{explanation()}")
            again = sot.stats(fast)
            if again.cache_hits <= hits:
                pytest.fail(f"{entry.id}: the second call was not served from the cache "
                            f"(cache_hits {hits} -> {again.cache_hits})\n{explanation()}")
            if again.graphs != graphs:
                pytest.fail(f"{entry.id}: the second call compiled graphs again ({graphs} -> {again.graphs})\n"
                            f"{explanation()}")
    finally:
        state.reset()


def test_the_corpus_is_large_and_covers_every_category():
    from sot_corpus import MODULES

    assert len(CASES) >= 400, f"only {len(CASES)} cases"
    present = {entry.category for entry in CASES} | {skipped.id.split("/")[0] for skipped in SKIPPED}
    assert present == {module.category for module in MODULES}
