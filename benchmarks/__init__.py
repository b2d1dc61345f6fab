"""Reproducible benchmarks. ``python -m benchmarks`` (or ``make bench``) runs every suite,
stores raw results in ``benchmarks/results/*.json`` and renders ``docs/benchmarks.md`` with
plots in ``docs/img/``."""
