"""Build hook for the one compiled module (the metadata lives in pyproject.toml).

``adapters.crosskey._batch_reader`` is an optional accelerator of the columnar intake
(``adapters/crosskey/columnar.py``): without a C compiler the build skips it with a warning and the
pure-Python reader runs, with the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("adapters.crosskey._batch_reader",
                             ["adapters/crosskey/_batch_reader.c"], optional=True)])
