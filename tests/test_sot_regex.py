"""Regular expressions in translated code: a search of values is computed while translating
(`re`'s patterns and matches change under no method), the match it gives made again by the
generated code on every call where the program holds it as an object; what depends on
more than values (a buffer that may change, an iterator, a function of the program's)
runs as it is."""

import re

import numpy as np
import pytest

import framehook.sot as sot

pytestmark = pytest.mark.usefixtures("fresh_sot")

_WORD = re.compile(r"(?P<key>\w+)=(?P<value>\w+)")


def _returns_its_match(x, text):
    m = _WORD.search(text)
    return x + len(m.group("value")), m


def test_a_match_the_function_returns_is_a_new_object_on_every_call():
    fast = sot.translate(_returns_its_match, full_graph=True)
    x = np.arange(3.0)
    (first, m1), (second, m2) = fast(x, "a=bcd"), fast(x, "a=bcd")
    eager_result, eager_match = _returns_its_match(x, "a=bcd")
    np.testing.assert_array_equal(first, eager_result)
    np.testing.assert_array_equal(second, eager_result)
    assert m1 is not m2, "one match object for every call"
    assert (m1.span(), m1.groupdict(), m1.re) == (eager_match.span(), eager_match.groupdict(), _WORD)
    st = sot.stats(fast)
    assert (st.translations, st.graphs, st.ops_captured, st.graph_breaks, st.cache_hits) == (1, 1, 1, [], 1)


def _every_match(x, text):
    return [m.group() for m in _WORD.finditer(text)], x * 2


def test_an_iterator_of_matches_is_not_one_object_for_every_call():
    fast = sot.translate(_every_match)
    x = np.arange(2.0)
    for text in ("a=1 b=2", "a=1 b=2", "c=3"):
        got, expected = fast(x, text), _every_match(x, text)
        assert got[0] == expected[0]
        np.testing.assert_array_equal(got[1], expected[1])
    reasons = [b.reason for b in sot.stats(fast).graph_breaks]
    assert any("Pattern.finditer" in r for r in reasons), reasons


def _search_in(buffer):
    m = re.compile(rb"\d+").search(buffer)
    buffer[0:1] = b"9"  # the match reads the buffer as it is when asked
    return m.group(), len(buffer)


def test_a_match_in_a_buffer_that_changes_reads_it_as_it_is():
    fast = sot.translate(_search_in)
    for _ in range(2):
        assert fast(bytearray(b"1 2")) == _search_in(bytearray(b"1 2")) == (b"9", 3)
    assert sot.stats(fast).graph_breaks, "a search of a bytearray computed while translating"


def _search_with(pattern, x):
    m = pattern.search("key=value")
    return x + len(m.group(1))


def test_a_pattern_from_the_frame_is_guarded_by_identity():
    fast = sot.translate(_search_with, full_graph=True)
    x = np.arange(2.0)
    first, other = re.compile(r"(\w+)="), re.compile(r"=(\w+)")
    for pattern in (first, first, other, other):
        np.testing.assert_array_equal(fast(pattern, x), _search_with(pattern, x))
    st = sot.stats(fast)
    assert (st.translations, st.cache_hits, st.graph_breaks) == (2, 2, []), st


def _replaced(x, text, seen):
    def upper(m):
        seen.append(m.group())
        return m.group().upper()

    return _WORD.sub(upper, text), x - 1


def test_a_replacement_by_a_function_of_the_program_runs_on_every_call():
    fast = sot.translate(_replaced)
    x = np.arange(2.0)
    seen, eager_seen = [], []
    for _ in range(2):
        got, expected = fast(x, "a=b c=d", seen), _replaced(x, "a=b c=d", eager_seen)
        assert got[0] == expected[0] == "A=B C=D"
        np.testing.assert_array_equal(got[1], expected[1])
    assert seen == eager_seen == ["a=b", "c=d"] * 2
    assert sot.stats(fast).graph_breaks, "the function ran while translating"


def _groups_of(m, x):
    return m.group(1), x * 2


def test_a_match_from_the_frame_is_not_pinned():
    # A program makes a new match on every call: pinned, each call would miss the cache.
    fast = sot.translate(_groups_of)
    x = np.arange(2.0)
    for text in ("a=b", "c=d", "e=f"):
        m = _WORD.search(text)
        assert fast(m, x)[0] == text[0]
    st = sot.stats(fast)
    # The frame and its resume function, translated once each: no guard on the match.
    assert st.graph_breaks and (st.translations, st.guard_failures, st.cache_hits) == (2, 0, 4), st


def _hash_of_a_match(x, text):
    m = _WORD.search(text)
    return x + 1, hash(m), m


def test_the_hash_of_a_match_made_anew_is_its_own():
    # A match's hash is its identity's: each call's match has its own.
    fast = sot.translate(_hash_of_a_match)
    x = np.arange(2.0)
    for text in ("a=b", "a=b", "c=d"):
        result, its_hash, match = fast(x, text)
        np.testing.assert_array_equal(result, x + 1)
        assert its_hash == hash(match) and match.group() == text
