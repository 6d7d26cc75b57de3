"""docs/sot_model.md, the table of what SOT's translator models (builtin × kind of value),
is what the translator does now, and has no wrong cell. ``python -m
framehook_dev.sot_model_table --output docs/sot_model.md`` regenerates it (on 3.12)."""

import sys
from pathlib import Path
from typing import Any

import pytest

from framehook_dev import sot_model_table

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 12),
                                reason="docs/sot_model.md is generated on 3.12: other versions break elsewhere")

TABLE = Path(__file__).resolve().parent.parent / "docs" / "sot_model.md"


@pytest.fixture(scope="module")
def generated() -> tuple[str, list[dict[str, Any]]]:
    pytest.importorskip("numpy")
    return sot_model_table.generate(sys.executable)  # the probes run in children of this python


def test_no_cell_is_wrong(generated: tuple[str, list[dict[str, Any]]]) -> None:
    """A translated probe computes what eager does: modeled or breaks, never wrong."""
    _, cells = generated
    wrong = sot_model_table.report_wrong(cells)
    assert not wrong, f"translated probes that differ from eager:\n\n{wrong}"


def test_the_committed_table_is_what_the_translator_does(generated: tuple[str, list[dict[str, Any]]]) -> None:
    text, _ = generated
    assert sot_model_table.comparable(TABLE.read_text()) == sot_model_table.comparable(text), (
        "docs/sot_model.md is out of date: python -m framehook_dev.sot_model_table --output docs/sot_model.md")


def test_every_builtin_meets_every_kind(generated: tuple[str, list[dict[str, Any]]]) -> None:
    """One cell per (row, kind), each classified, and the translator exercised: most cells
    ran without a break, and both kinds of raising cells occur."""
    _, cells = generated
    assert len(cells) == len(sot_model_table.ROWS) * len(sot_model_table.KINDS)
    assert {(c["row"], c["kind"]) for c in cells} == {(r.label, k.name) for r, k in sot_model_table.probes()}
    counts = sot_model_table.counts(cells)
    assert counts["modeled"] >= 0.3 * len(cells)
    assert counts["modeled (raises)"] > 0 and counts["breaks (raises)"] > 0
