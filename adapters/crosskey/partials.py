"""Slice partials of the cross-key runtime as NumPy arrays, one per kind of output and field
(:class:`Component`), and their conversion to and from the per-key path's partials.

A slice partial of the per-key path is the output's partial, or for several outputs the tuple
of them (:func:`swag_core.aggregation.product`). Here outputs of one kind share an array:
``sum`` and ``mean`` of a field share its exact sum, the same fn twice shares it too.
:meth:`Partials.join` and :meth:`Partials.split` convert, so state moves between the paths
unchanged.

* ``count``: the events of a slice (int64); windows add them;
* ``max`` / ``min``: ``numpy`` reductions (float64, or int64 for an int field). ``0.0 ==
  -0.0``, so NumPy may return either: a zero result is refolded by the kernel's fold in
  Python, and the older wins, as with the per-key path's ``max``;
* ``sum`` / ``mean``: the kernel's exact partial (:mod:`swag_core.exact`, a Python ``int``) in
  an object array; windows add them exactly, so NumPy's order changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from adapters.crosskey.sorted_rows import INT64_MAX, INT64_MIN, SortedRows
from adapters.driver.kernels import Kernel

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]


class NotCovered(Exception):
    """A key's state holds what the cross-key runtime cannot hold exactly (raised before any
    change)."""


class Component(NamedTuple):
    """One partial array of the closed slices (a column after ids and starts): the slice
    partial of one kind of output, shared by the outputs of that kind."""

    #: ``"count"`` (int64: events per slice), ``"select"`` (float64: max / min) or
    #: ``"exact"`` (object: the exact int partial of :mod:`swag_core.exact`)
    kind: str
    #: the NumPy dtype of the array and the Python type of the partial in the per-key path
    dtype: Any
    part_type: type
    #: ``np.maximum`` / ``np.minimum`` (select), ``np.add`` (count), ``None`` (exact)
    ufunc: Any
    #: the output's kernel fold and fold_onto (:class:`~adapters.driver.kernels.Kernel`)
    fold: Any
    fold_onto: Any
    #: the field it reads, as an index into the intake's fields (0 for a count of events)
    col: int = 0


def component_key(fn: str, field: str | None) -> tuple[str, str | None]:
    """Outputs with the same key share one :class:`Component`."""
    # count of the field is the count of events here: the intake takes finite floats only
    return ("exact" if fn in ("sum", "mean") else fn, None if fn == "count" else field)


def _component(fn: str, kernel: Kernel, col: int) -> Component:
    if fn == "count":
        return Component("count", np.int64, int, np.add, kernel.fold, kernel.fold_onto, col)
    if fn in ("max", "min"):
        return Component("select", np.float64, float, np.maximum if fn == "max" else np.minimum,
                         kernel.fold, kernel.fold_onto, col)
    return Component("exact", object, int, None, kernel.fold, kernel.fold_onto, col)


def _in_int64(value: Any) -> bool:
    return bool(INT64_MIN <= value <= INT64_MAX)


def reduce_ranges(ufunc: Any, values: Any, lo: Any, hi: Any, fold: Any = None) -> Any:
    """``ufunc.reduce(values[lo[j]:hi[j]])`` for every j (``hi > lo``), ranges in any order
    (``reduceat`` on interleaved bounds). For ``maximum``/``minimum`` a zero result is
    refolded by the kernel's ``fold``, so that of ``0.0`` and ``-0.0`` the older wins, as the
    per-key path's ``max`` does (``0.0 == -0.0``: NumPy may return either)."""
    bounds = np.empty(2 * len(lo), np.int64)
    bounds[0::2] = lo
    bounds[1::2] = hi
    out = ufunc.reduceat(np.append(values, values.dtype.type(0)), bounds)[0::2]
    if ufunc is not np.add and values.dtype == np.float64:
        for j in np.flatnonzero(out == 0).tolist():
            out[j] = fold(values[lo[j]:hi[j]].tolist(), int(hi[j] - lo[j]))
    return out


def range_sums(parts: Any, lo: Any, hi: Any) -> list[int]:
    """Sums of the counts (int64) or exact partials (Python ints) ``parts[lo[j]:hi[j]]`` as
    Python ints: exact either way, so NumPy's order changes nothing.

    ``parts`` holds the closed slices of every key the runtime caches, the ranges those of a
    call's keys, so only the rows some range covers are summed: when the ranges overlap
    (more slices in all windows than rows covered), each is the difference of two prefix
    sums over the covered rows, one addition per row instead of one per slice of every
    window. (An exact partial is an int of over a thousand bits, in units of ``2**-1074``:
    summing every cached key's slices on each call cost more than the rest of a call at
    360 windows per event.)"""
    mark = np.zeros(len(parts) + 1, np.int64)
    np.add.at(mark, lo, 1)
    np.add.at(mark, hi, -1)
    rows = np.flatnonzero(np.cumsum(mark[:-1]))
    if int((hi - lo).sum()) <= len(rows):
        return reduce_ranges(np.add, parts, lo, hi).tolist()
    prefix = np.zeros(len(rows) + 1, parts.dtype)
    np.cumsum(parts[rows], out=prefix[1:])
    # every row of a range is covered: its sum is the covered rows' prefix at its bounds
    return (prefix[np.searchsorted(rows, hi)] - prefix[np.searchsorted(rows, lo)]).tolist()


class Partials:
    """The partial arrays of a query's outputs (``fns`` with their ``kernels``) over the
    intake's ``fields``, and the conversions to and from the per-key path's partials."""

    def __init__(self, fns: Sequence[str], kernels: Sequence[Kernel],
                 fields: tuple[str, ...], lower: Any) -> None:
        self.fields = fields
        #: per field: whether its values are ints (an int64 column; max / min partials are
        #: ints), else floats (:meth:`set_types`)
        self.ints = (False,) * len(fields)
        #: the partial arrays and, per output, the index of its array
        self.comps: list[Component] = []
        self.of: list[int] = []
        shared: dict[tuple[str, str | None], int] = {}
        for fn, kernel in zip(fns, kernels, strict=True):
            key = component_key(fn, kernel.field)
            index = shared.get(key)
            if index is None:
                index = shared[key] = len(self.comps)
                self.comps.append(_component(fn, kernel, 0 if key[1] is None
                                             else fields.index(key[1])))
            self.of.append(index)
        self._float_comps = list(self.comps)
        #: per array: the first output that reads it (a partial's component)
        self.first = [self.of.index(c) for c in range(len(self.comps))]
        #: one output: the partial is its own; several: a tuple of one partial per output
        self.single = len(self.of) == 1
        #: per output: the index of the field it reads, or -1 (a count of events)
        self.reads = [-1 if k.field is None else fields.index(k.field) for k in kernels]
        #: per field: the first output that reads it
        self.first_reader = [self.reads.index(j) for j in range(len(fields))]
        self.lower = lower
        #: one max / min output: its results are its partials (no lowering)
        self.raw_results = self.single and self.comps[0].kind == "select"

    def set_types(self, ints: tuple[bool, ...]) -> None:
        """Hold the fields as ints (``True``) or floats from now on: the max / min partials
        of an int field are ints (an int64 array), as the per-key path's."""
        self.ints = ints
        self.comps = [c._replace(dtype=np.int64, part_type=int)
                      if c.kind == "select" and ints[c.col] else c for c in self._float_comps]

    def dtypes(self) -> list[Any]:
        """The dtype of each partial array."""
        return [comp.dtype for comp in self.comps]

    def value_dtypes(self) -> list[Any]:
        """The dtype of each field's value array (pending events)."""
        return [np.int64 if ints else np.float64 for ints in self.ints]

    # ------------------------------------------------------------------ conversions
    def checked(self, part: Any) -> tuple[Any, ...]:
        """A slice partial of the per-key path as one value per partial array, checked to fit
        them exactly (:class:`NotCovered` if not: e.g. int values of max / min the per-key
        path took, or a ``None`` partial of a skipping output)."""
        if self.single:
            parts: Any = (part,)
        elif type(part) is tuple and len(part) == len(self.of):
            parts = part
        else:
            raise NotCovered
        values: list[Any] = [None] * len(self.comps)
        for j, c in enumerate(self.of):
            value: Any = parts[j]
            comp = self.comps[c]
            if type(value) is not comp.part_type or (comp.dtype is np.int64
                                                     and not _in_int64(value)):
                raise NotCovered  # (an int partial beyond int64: the per-key path took it)
            if self.first[c] != j:  # an array shared by outputs: the same partial
                other = values[c]
                if value != other or (type(value) is float and math.copysign(1.0, value) !=
                                      math.copysign(1.0, other)):
                    raise NotCovered
            values[c] = value
        return tuple(values)

    def split(self, part: Any) -> list[Any]:
        """A partial this runtime made as one value per partial array (unchecked)."""
        return [part] if self.single else [part[j] for j in self.first]

    def join(self, values: Sequence[Any]) -> Any:
        """The per-key path's partial of one value per partial array."""
        return values[0] if self.single else tuple([values[c] for c in self.of])

    def get(self, arrays: list[Any], j: int) -> Any:
        """The per-key path's partial of row ``j`` of the partial arrays."""
        if self.single:
            comp = self.comps[0]
            return arrays[0][j] if comp.kind == "exact" else comp.part_type(arrays[0][j])
        return self.join([arr[j] if comp.kind == "exact" else comp.part_type(arr[j])
                          for comp, arr in zip(self.comps, arrays)])

    def put(self, arrays: list[Any], j: int, part: Any) -> None:
        """Row ``j`` of the partial arrays := the per-key path's partial ``part``."""
        if self.single:
            arrays[0][j] = part
            return
        for arr, value in zip(arrays, self.split(part)):
            arr[j] = value

    def arrays_of(self, parts: Sequence[tuple[Any, ...]]) -> list[Any]:
        """The partial arrays of checked partials (:meth:`checked`), one row each."""
        arrays = []
        for c, comp in enumerate(self.comps):
            arr = np.empty(len(parts), comp.dtype)
            arr[:] = [values[c] for values in parts]
            arrays.append(arr)
        return arrays

    # ------------------------------------------------------------------ folds
    def of_runs(self, columns: list[Any], run_at: Any, run_end: Any, goes_on: Any) -> list[Any]:
        """Slice partials of the runs ``columns[field][run_at[j]:run_end[j]]``, one array per
        :class:`Component`; exact sums of the runs that continue an open slice (``goes_on``)
        are left at 0 (the caller folds them onto the open slice)."""
        arrays: list[Any] = []
        lists: dict[int, list[float]] = {}
        for comp in self.comps:
            if comp.kind == "count":
                arrays.append(run_end - run_at)
            elif comp.kind == "select":
                arrays.append(reduce_ranges(comp.ufunc, columns[comp.col], run_at, run_end,
                                            comp.fold))
            else:
                values = lists.get(comp.col)
                if values is None:
                    values = lists[comp.col] = columns[comp.col].tolist()
                fold = comp.fold
                parts = np.empty(len(run_at), object)
                parts[:] = [0 if skip else fold(values[a:e], e - a) for a, e, skip in
                            zip(run_at.tolist(), run_end.tolist(), goes_on.tolist())]
                arrays.append(parts)
        return arrays

    def fold_run(self, acc: Any, run_parts: list[Any], columns: list[Any], j: int,
                 run_first: Any, run_stop: Any) -> Any:
        """The open slice's partial ``acc`` folded on with run ``j`` (events ``run_first[j]
        .. run_stop[j] - 1`` of ``columns``; ``run_parts``: the runs' partial arrays), each
        array's kind by its kernel: for ``max``/``min`` the older operand of a tie is
        ``acc``, so combining with the run's partial is the same left fold; counts add the
        run's length; sums add the run's exact partial."""
        if self.single:  # (without the loop: once per key and call)
            return _fold_one(self.comps[0], acc, run_parts[0], columns, j, run_first, run_stop)
        return self.join([_fold_one(comp, part, arr, columns, j, run_first, run_stop)
                          for comp, part, arr in zip(self.comps, self.split(acc), run_parts)])

    # ------------------------------------------------------------------ windows
    def window_values(self, closed: SortedRows, lo: Any, hi: Any) -> list[Any]:
        """Lowered aggregates of the closed slices ``lo[j] .. hi[j] - 1``, all windows at
        once (``hi > lo``): one reduction per partial array, then the lane's ``lower`` (a
        dict of the outputs, for several)."""
        per_comp = []
        for comp, arr in zip(self.comps, closed.columns):
            if comp.kind == "select":
                per_comp.append(reduce_ranges(comp.ufunc, arr, lo, hi, comp.fold).tolist())
            else:
                per_comp.append(range_sums(arr, lo, hi))
        if self.raw_results:
            return per_comp[0]
        if self.single:
            return list(map(self.lower, per_comp[0]))
        return list(map(self.lower, zip(*[per_comp[c] for c in self.of])))


def _fold_one(comp: Component, part: Any, run_parts: Any, columns: list[Any], j: int,
              run_first: Any, run_stop: Any) -> Any:
    """One partial array's part of :meth:`Partials.fold_run`."""
    if comp.kind == "select":
        return comp.fold_onto(part, (comp.part_type(run_parts[j]),), 1)
    first, stop = int(run_first[j]), int(run_stop[j])
    if comp.kind == "count":
        return comp.fold_onto(part, (), stop - first)
    return comp.fold_onto(part, columns[comp.col][first:stop].tolist(), stop - first)


__all__ = ["Component", "NotCovered", "Partials", "component_key", "range_sums",
           "reduce_ranges"]
