"""The reference harness: a query run over scripted steps (events, watermarks) the way an
engine would run it (:func:`~adapters.conformance.runner.run_steps`,
:func:`~adapters.conformance.runner.run_scenario`). The conformance corpus
(``tests/conformance``) and the tests use it; engines do not."""
