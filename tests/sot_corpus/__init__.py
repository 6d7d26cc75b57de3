"""framehook SOT's differential corpus: small functions run eagerly and translated, with the
graphs, captured ops and breaks each must give (tests/test_sot_corpus.py runs them).

The case modules import only numpy and ``_case``, so they can be checked without framehook.
Modules with syntax that only newer interpreters compile are imported only there; elsewhere
they are reported as skipped, with the reason.
"""

import dataclasses
import importlib
import sys
from typing import NamedTuple, Optional

from ._case import REGISTRY, Case, arr, case, iarr, pos

__all__ = ["MODULES", "Case", "Skipped", "arr", "case", "collect", "iarr", "pos"]


class Module(NamedTuple):
    name: str
    category: str
    min_version: Optional[tuple] = None
    reason: str = ""


class Skipped(NamedTuple):
    id: str
    reason: str


# In the order of Paddle's test/sot suite, then what Paddle's translator cannot do.
MODULES = [
    Module("basics", "basics"),
    Module("inplace", "inplace"),
    Module("containers", "containers"),
    Module("calls", "calls"),
    Module("unpacking", "unpacking"),
    Module("stack", "stack"),
    Module("fstrings", "fstrings"),
    Module("build", "build"),
    Module("jumps", "jumps"),
    Module("for_loops", "for_loops"),
    Module("make_function", "make_function"),
    Module("operators", "operators"),
    Module("slices", "slices"),
    Module("closures", "closures"),
    Module("strings", "strings"),
    Module("regex", "regex"),
    Module("globals_", "globals"),
    Module("generators", "generators"),
    Module("super_", "super"),
    Module("exceptions", "exceptions"),
    Module("with_", "with"),
    Module("graph_breaks", "graph_breaks"),
    Module("call_objects", "call_objects"),
    Module("constant_graphs", "constant_graphs"),
    Module("del_", "del"),
    Module("builtins_", "builtins"),
    Module("side_effects", "side_effects"),
    Module("output_restoration", "output_restoration"),
    Module("array_branches", "array_branches"),
    Module("exception_tables", "exception_tables"),
    Module("comprehensions", "comprehensions"),
    Module("breaks_in_blocks", "breaks_in_blocks"),
    Module("breaks_in_closures", "breaks_in_closures"),
    Module("nested_resume", "nested_resume"),
    Module("recursion", "recursion"),
    Module("walrus", "walrus"),
    Module("dynamic_numbers", "dynamic_numbers"),
    Module("exact", "exact"),
    Module("shared_objects", "shared_objects"),
    Module("library_calls", "library_calls"),
    Module("match_310", "match", (3, 10), "match statements need Python 3.10+"),
    Module("except_star_311", "except_star", (3, 11), "except* needs Python 3.11+"),
    Module("type_params_312", "type_params", (3, 12), "PEP 695 type parameters need Python 3.12+"),
    Module("tstrings_314", "tstrings", (3, 14), "t-strings (string.templatelib) need Python 3.14+"),
]


def collect():
    """``(cases, skipped)``: every case of the modules this interpreter can import, in
    module order, and one ``Skipped`` per module it cannot (never imported here)."""
    cases, skipped = [], []
    for module in MODULES:
        if module.min_version and sys.version_info < module.min_version:
            skipped.append(Skipped(f"{module.category}/(module {module.name})", module.reason))
            continue
        qualified = f"{__name__}.{module.name}"
        importlib.import_module(qualified)
        cases.extend(dataclasses.replace(entry, category=module.category)
                     for entry in REGISTRY if entry.module == qualified)
    ids = [entry.id for entry in cases]
    duplicates = sorted({name for name in ids if ids.count(name) > 1})
    assert not duplicates, f"duplicate case ids: {duplicates}"
    return cases, skipped
