"""The fast part of the SOT program fuzzer (``python -m framehook_dev.sot_fuzz``, whose long
runs have their own command): a fixed seed and number of generated functions, each run
eagerly and translated twice, which must compute the same."""

import pytest

from framehook_dev import sot_fuzz, sot_fuzz_gen

# Issue 40's seed; the number of cases takes about 5 s on a debug build when nothing
# diverges (shrinking divergent cases takes longer: it is kept short here, one case per
# cause, and the long runs of the tool shrink further).
SEED = 40
CASES = 500


@pytest.fixture(scope="module")
def fuzzed():
    return sot_fuzz.fuzz(SEED, cases=CASES, shrinks_per_cause=1, shrink_steps=80)


def test_translated_functions_compute_what_eager_does(fuzzed):
    """Result or exception (type and message), the arguments afterwards and stdout."""
    found = fuzzed["divergences"]
    report = "\n\n".join(
        f"{d['cause']} ({d['count']}x, case {d['seed']}, {d['run']}):\n{d['reproducer']}"
        f"eager:      {d['eager']}\ntranslated: {d['translated']}" for d in found)
    assert not found, f"{len(found)} causes of divergence in {fuzzed['counts'].get('divergent')} cases:\n\n{report}"


def test_the_fuzzer_exercises_the_translator(fuzzed):
    """The cases ran as generated code, with graphs, breaks and cache hits: a translator that
    ran every function eagerly would fail here, not pass the test above vacuously."""
    counts = fuzzed["counts"]
    assert counts["cases"] >= CASES * 0.98  # at most a few skipped (an argument that does not build)
    assert counts["own frame translated"] >= 0.9 * counts["cases"]
    assert counts["with graphs"] >= 0.15 * counts["cases"]
    assert counts["ops captured"] >= 0.3 * counts["cases"]
    assert counts["with breaks"] >= 0.3 * counts["cases"]
    assert counts["cache hits"] >= counts["cases"]  # the second translated call of each case
    assert counts["eager raised"] <= 0.7 * counts["cases"]  # most cases run to their end


def test_some_calls_hold_one_object_in_two_parameters():
    """A share of the first calls and of the later calls pass an earlier argument's object
    again (`f(x, x, c)`), as the runner builds them and as a reproducer prints them."""
    cases = [sot_fuzz_gen.generate(f"{SEED}:{index}") for index in range(CASES)]
    for calls in ([case.args for case in cases], [case.later for case in cases]):
        aliased = [values for values in calls if any(v.expr.startswith(sot_fuzz_gen.ALIAS) for v in values)]
        assert 0.1 * CASES <= len(aliased) <= 0.3 * CASES
    runner = sot_fuzz.Runner()
    case = next(case for case in cases if case.args[1].expr.startswith(sot_fuzz_gen.ALIAS + "a"))
    built = runner.arguments(case)
    assert built[1] is built[0]
    printed = eval(sot_fuzz_gen.arguments_source(case.args), runner.helpers)
    assert printed[1] is printed[0] and len(printed) == len(sot_fuzz_gen.PARAMS)


def test_same_compares_values_as_a_user_of_the_results_does():
    np = pytest.importorskip("numpy")
    nan = float("nan")
    assert sot_fuzz.same([nan, {"k": (1, nan)}], [nan, {"k": (1, nan)}])
    assert not sot_fuzz.same(0.0, -0.0)
    assert not sot_fuzz.same(1, 1.0) and not sot_fuzz.same(True, 1)
    assert sot_fuzz.same(np.array([nan, 1.0]), np.array([nan, 1.0]))
    assert not sot_fuzz.same(np.array([1.0]), np.array([1.0], dtype=np.float32))
    assert not sot_fuzz.same(np.array([1.0]), np.array([[1.0]]))
    assert not sot_fuzz.same(np.float64(1.0), 1.0)
    assert not sot_fuzz.same({"a": 1, "b": 2}, {"b": 2, "a": 1})  # order is part of a dict's value
    assert not sot_fuzz.same([1, 2], [1, 3])
    assert sot_fuzz.same(ValueError("x", 1), ValueError("x", 1))
    objects = np.array([complex(float("inf"), float("nan")), 1], dtype=object)
    assert sot_fuzz.same(objects, objects.copy()) and not sot_fuzz.same(objects, objects[::-1].copy())
    # Values holding themselves (twice at each level): compared once per pair, at once.
    ones, twos, other = [1, 2], [1, 2], [1, 3]
    for value in (ones, twos, other):
        value += [value, value]
    assert sot_fuzz.same(ones, twos) and not sot_fuzz.same(ones, other)
    assert not sot_fuzz.same(ValueError("x"), TypeError("x"))
    # 3.15 words an oversized repeat count two ways by its call site's specialization.
    too_large = "Python int too large to convert to C ssize_t"
    assert sot_fuzz.same(OverflowError(too_large), OverflowError("cannot fit 'int' into an index-sized integer"))
    assert not sot_fuzz.same(OverflowError(too_large), OverflowError("int too large to convert to float"))
    assert not sot_fuzz.same(OverflowError(too_large), ValueError(too_large))
    assert sot_fuzz.same(("caught", too_large), ("caught", "cannot fit 'int' into an index-sized integer"))
    assert not sot_fuzz.same("a", "b")
    raised = sot_fuzz.Outcome("raise", OverflowError(too_large), (), "", sot_fuzz.NUMPY_ERRORS)
    worded = raised._replace(value=OverflowError("cannot fit 'int' into an index-sized integer"))
    assert sot_fuzz.differences(raised, worded) == []
    assert sot_fuzz.differences(raised, raised._replace(value=OverflowError("other"))) == ["exception"]


def test_generation_is_deterministic_and_covers_the_templates():
    cases = [sot_fuzz_gen.generate(f"{SEED}:{i}") for i in range(400)]
    assert [c.source() for c in cases[:50]] == [sot_fuzz_gen.generate(f"{SEED}:{i}").source() for i in range(50)]
    templates = {t.split(":")[0] for c in cases for f in c.body for t in (f.template.replace("caught:", ""),)}
    expected = {"builtin", "numpy", "binop", "compare", "truth", "augassign", "store", "unpack", "loop",
                "comprehension", "with", "closure", "class", "generator", "raise", "print", "identity", "try"}
    if sot_fuzz_gen.HAS_MATCH:
        expected.add("match")
    assert expected <= templates, expected - templates


def test_shrinking_keeps_the_divergence_and_drops_the_rest():
    """With a stand-in for the translator that changes one result, a case shrinks to the
    statement that shows it."""
    runner = sot_fuzz.Runner()

    class WrongOnLen:
        """Runs the function eagerly, then claims a different result when it used len()."""

        def run(self, case, count=False):
            function, args = runner.function(case), runner.arguments(case)
            eager = sot_fuzz.run_once(function, args)
            if "len(" not in case.source():
                return None
            wrong = eager._replace(value="wrong") if eager.kind == "return" else eager._replace(kind="return")
            return ("translating call", eager, wrong, sot_fuzz.differences(eager, wrong))

    body = (sot_fuzz_gen.Fragment("x", ("r.append(a + 1)",)), sot_fuzz_gen.Fragment("len", ("r.append(len(b))",)),
            sot_fuzz_gen.Fragment("y", ("print(c)",)))
    args = tuple(sot_fuzz_gen.Value(expr, "x") for expr in ("3", "[1, 2, 3]", "'text'"))
    case = sot_fuzz_gen.Case("test", args, body)
    fake = WrongOnLen()
    wanted = sot_fuzz.signature(*fake.run(case))
    small = sot_fuzz.shrink(fake, case, wanted)
    assert small.templates() == ["len"]
    assert [v.expr for v in small.args] == ["None", "[]", "None"]
