"""Arrow columns in and out of the OVER kernel (``adapters.engine.arrow_kernel``)."""

from __future__ import annotations

import math

import pytest

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

from adapters.crosskey.over_runtime import Values  # noqa: E402
from adapters.engine.arrow_kernel import arrow_array, kernel_column  # noqa: E402


def test_number_columns_become_kernel_columns_with_their_missing_values():
    ints = kernel_column(pa.chunked_array([pa.array([3, None, 2**62], pa.int64())]))
    assert ints is not None and ints.data.dtype == np.int64
    assert ints.data.tolist()[::2] == [3, 2**62] and ints.missing.tolist() == [False, True, False]
    floats = kernel_column(pa.chunked_array([pa.array([1.5, math.nan, None], pa.float32())]))
    assert floats is not None and floats.data.dtype == np.float64
    assert floats.missing.tolist() == [False, True, True]
    whole = kernel_column(pa.chunked_array([pa.array([1, 2], pa.int16())]))
    assert whole is not None and whole.missing is None
    assert kernel_column(pa.chunked_array([pa.array(["a"])])) is None


def test_values_that_do_not_fit_the_output_type_give_none():
    values = Values(np.array([1, 2**40], np.int64), np.array([False, True]))
    assert arrow_array(values, pa.int64()).to_pylist() == [1, None]
    assert arrow_array(values, pa.int32()).to_pylist() == [1, None]
    assert arrow_array(Values(np.array([2**40], np.int64), None), pa.int32()) is None
