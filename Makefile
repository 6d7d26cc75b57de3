# The README's two commands.
PYTHON ?= python3
PY ?=

.PHONY: demo test hostile bench
# The main job: the chained-hooks example on the machine's default python3.
demo:
	$(PYTHON) tools/demo.py

# Every test on every interpreter (or only PY=3.12, PY=3.13t,3.14d, ...).
test:
	$(PYTHON) tools/matrix.py $(if $(PY),--only $(PY))

# The hostile-hook property tests with thousands of examples per interpreter (PY= as for test).
hostile:
	FRAMEHOOK_HYPOTHESIS_PROFILE=full $(PYTHON) tools/matrix.py --no-cargo $(if $(PY),--only $(PY)) -- \
		tests/test_hostile.py --hypothesis-show-statistics

# framehook's overhead per frame, measured with pyperf on every interpreter (or PY=...);
# results in benches/results/ and the README's table.
bench:
	$(PYTHON) tools/bench.py $(if $(PY),--only $(PY))
