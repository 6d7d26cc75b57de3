"""framehook's development tools, run as ``python -m framehook_dev.<tool>``.

* ``matrix``: build framehook for every supported interpreter and run the tests on each
  (``make test``), after ``lint`` when the whole matrix runs;
* ``lint``: rustfmt, clippy, ruff and stubtest (``make lint``);
* ``provision``: the interpreters the machine lacks (3.13t, 3.14, 3.14d, 3.15, 3.15d), cached;
* ``bench``: framehook's overhead per frame (``make bench``);
* ``torture``: CPython's own test suite under identity hooks (``torture_hooks``);
* ``stress``: leak and thread stress;
* ``sot_soak``: leak and thread soak of SOT's translator (``sot_vectors``, ``sot_workload``);
* ``sot_fuzz``: differential program fuzzer of SOT's translator (``sot_fuzz_gen`` generates);
* ``paddle_sot_suite``: PaddlePaddle's ``test/sot`` suite on Paddle's eval frame and on framehook's;
* ``demo``: SOT on a small numpy model among other hooks, in a venv of this python (``make demo``).

Standard library only (numpy in the venvs where sot_fuzz runs its cases), Python 3.9+; never
shipped in the framehook wheel.
"""
