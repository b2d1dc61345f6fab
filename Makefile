# swag: every command a user or CI needs. `make main` runs the main job, `make test` runs
# every suite; both create the virtual environments they need under .venvs/<name>.
PYTHON ?= python3
VENVS := .venvs
PYTEST_FLAGS ?=

.PHONY: main test test-core lint bench venvs clean-venvs

# ---- virtual environments: one per engine, each with the project installed editable ----
$(VENVS)/%/.installed: requirements/%.txt pyproject.toml
	@scripts/check_python.sh $(PYTHON)
	$(PYTHON) -m venv $(VENVS)/$*
	$(VENVS)/$*/bin/python -m pip install -q --upgrade pip
	$(VENVS)/$*/bin/python -m pip install -q -r requirements/$*.txt
	$(VENVS)/$*/bin/python -m pip install -q --no-deps -e .
	touch $@

venvs: $(VENVS)/core/.installed

# ---- tests ----
test: test-core lint

test-core: $(VENVS)/core/.installed
	$(VENVS)/core/bin/python -m pytest tests/core tests/adapters tests/conformance $(PYTEST_FLAGS)

lint: $(VENVS)/core/.installed
	$(VENVS)/core/bin/ruff check .
	$(VENVS)/core/bin/mypy

# ---- benchmarks (writes docs/benchmarks.md and docs/img/*.png) ----
bench: $(VENVS)/core/.installed
	$(VENVS)/core/bin/python -m benchmarks

clean-venvs:
	rm -rf $(VENVS)
