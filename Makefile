# The README's commands. The development tools are the package in tools/ (framehook_dev),
# run from the host's dev venv, .venv (made here with $(PYTHON); git-ignored).
PYTHON ?= python3
PY ?=
VENV := .venv
DEV := $(VENV)/bin/python
DEV_STAMP := $(VENV)/framehook-dev.stamp

.PHONY: dev demo test lint hostile bench wheel

# The dev venv: this checkout's tools/ installed editable (each clone has its own venv, so
# it never runs another clone's tools) and the pinned ruff. Made again when they change.
$(DEV_STAMP): tools/pyproject.toml tools/requirements-lint.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(DEV) -m pip install --quiet --upgrade pip
	$(DEV) -m pip install --quiet -r tools/requirements-lint.txt --editable tools
	touch $@

dev: $(DEV_STAMP)

# The main job: SOT on a small numpy model among other hooks (examples/sot_demo.py), on the
# machine's default python3.
demo: $(DEV_STAMP)
	$(DEV) -m framehook_dev.demo

# rustfmt, clippy, ruff and stubtest (on 3.12); exits non-zero when one fails.
lint: $(DEV_STAMP)
	$(DEV) -m framehook_dev.lint

# The lint steps, then every test on every interpreter, then cargo test; or only
# PY=3.12, PY=3.13t,3.14d, ... (without the lint steps: run `make lint` for them).
test: $(DEV_STAMP)
	$(DEV) -m framehook_dev.matrix $(if $(PY),--only $(PY))

# The hostile-hook and hostile-input (SOT) property tests with thousands of examples per
# interpreter (PY= as for test).
hostile: $(DEV_STAMP)
	FRAMEHOOK_HYPOTHESIS_PROFILE=full $(DEV) -m framehook_dev.matrix --no-cargo --no-lint $(if $(PY),--only $(PY)) -- \
		tests/test_hostile.py tests/test_sot_hostile.py --hypothesis-show-statistics

# framehook's overhead per frame, measured with pyperf on every interpreter (or PY=...);
# results in benches/results/ and the results table.
bench: $(DEV_STAMP)
	$(DEV) -m framehook_dev.bench $(if $(PY),--only $(PY))

# The optimised wheel for $(PYTHON), in dist/: a release build with profile-guided
# optimisation (trained on the fuzzer's programs, the SOT corpus and the model workloads),
# the build the scikit-learn benchmark measures.
wheel: $(DEV_STAMP)
	$(DEV) -m framehook_dev.wheel --python $$(command -v $(PYTHON))
