"""The conformance corpus: scenarios, a brute-force oracle and an engine-pluggable runner.

See ``docs/conformance.md``. Import it as ``tests.conformance`` from the repository root
(``from tests.conformance.runner import assert_conforms, load, scenario_names``); the modules
import each other relatively.
"""
