"""The due windows of a cross-key call and their rows.

Closed slices of every key are arrays sorted by (key id, slice start): general stream slicing
(:mod:`adapters.driver.time_lane`, Traub et al., EDBT 2019). A due window ``[e - range, e)``
is the reduction of its at most ``MAX_SLICES`` slices, all windows of the call in one
``ufunc.reduceat`` (:meth:`~adapters.crosskey.partials.Partials.window_values`):
recalculation over slices, in C, which costs less than a ``swag_core`` structure's
per-slice interpreter overhead while windows hold few slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from adapters.crosskey.columnar import key_time_order
from adapters.crosskey.partials import Partials
from adapters.crosskey.sorted_rows import SortedRows
from adapters.driver.key_runtime import INF
from adapters.driver.time_lane import due_window_ends, end_after

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

#: due windows of one key enumerated arithmetically up to this many, empty ones dropped in
#: bulk (more: a gap in the key's data; ``time_lane.due_window_ends`` skips the empty windows
#: by binary search). Enumerating is no slower than that generator, and faster when each
#: event falls in many windows (range much longer than slide).
_DENSE_WINDOWS = 4096


class WindowGrid(NamedTuple):
    """The query's one sliding spec: its window index, range and slide, and ``first_end``
    (its window ends are ``first_end + j * slide``)."""

    window: int
    range: int
    slide: int
    first_end: int


#: A key whose boundary advanced in a call: ``(position in the call, old boundary, new
#: boundary)`` (boundary: ``watermark - lateness``). A plain tuple: one is made per key and
#: call, and a named tuple's constructor (about 0.3 us more) adds 1-2% to a call at about
#: 100 events per key (``python -m timeit``, against the call's measured time).
Advance = tuple[int, "int | float", "int | float"]


class _DueEnds:
    """The due window ends of a call, gathered per key: runs of consecutive ends (dense)
    and single ends (a key with a gap in its data)."""

    __slots__ = ("dense_count", "dense_first", "dense_pos", "sparse_end", "sparse_pos")

    def __init__(self) -> None:
        self.dense_pos: list[int] = []    # per run: the key's position, first end, count
        self.dense_first: list[int] = []
        self.dense_count: list[int] = []
        self.sparse_pos: list[int] = []   # per window: the key's position, its end
        self.sparse_end: list[int] = []

    def arrays(self, slide: int) -> tuple[Any, Any] | None:
        """``(positions, ends)`` of every window, per key in call order, ends ascending."""
        counts = self.dense_count
        if not counts:
            if not self.sparse_end:
                return None
            return np.array(self.sparse_pos, np.int64), np.array(self.sparse_end, np.int64)
        offsets = np.repeat(np.cumsum(counts) - counts, counts)
        ends = np.repeat(np.array(self.dense_first, np.int64), counts) + slide * (
            np.arange(sum(counts), dtype=np.int64) - offsets)
        positions = np.repeat(np.array(self.dense_pos, np.int64), counts)
        if self.sparse_end:
            ends = np.concatenate((ends, np.array(self.sparse_end, np.int64)))
            positions = np.concatenate((positions, np.array(self.sparse_pos, np.int64)))
            order = key_time_order(positions, ends)
            ends, positions = ends[order], positions[order]
        return positions, ends


def due_windows(closed: SortedRows, ids: Any, advances: Sequence[Advance],
                grid: WindowGrid) -> tuple[Any, Any] | None:
    """``(positions, ends)`` of the due windows ``[e - range, e)`` (``old_bound < e <=
    bound``) of the advancing keys that hold a closed slice, per key in call order, ends
    ascending (``None``: no window); some may hold none of the key's slices."""
    starts = closed.times
    key_ids = ids[np.array([pos for pos, _, _ in advances])]
    lo = np.searchsorted(closed.ids, key_ids, "left").tolist()
    hi = np.searchsorted(closed.ids, key_ids, "right").tolist()
    oldest = starts[np.minimum(lo, len(starts) - 1)].tolist()
    newest = starts[np.maximum(np.array(hi) - 1, 0)].tolist()
    span, slide, first_end = grid.range, grid.slide, grid.first_end
    due = _DueEnds()
    for (pos, old_bound, bound), first_row, stop_row, old, new in zip(
            advances, lo, hi, oldest, newest):
        if stop_row == first_row:
            continue
        first = end_after(old if old_bound == -INF else old_bound, slide, first_end)
        # the last window holding the newest slice
        last = end_after(new + span, slide, first_end) - slide
        if bound != INF:
            last = min(last, end_after(bound, slide, first_end) - slide)
        if last < first:
            continue
        count = (int(last) - first) // slide + 1
        if count <= _DENSE_WINDOWS:
            due.dense_pos.append(pos)
            due.dense_first.append(first)
            due.dense_count.append(count)
        else:  # a gap in the key's data: skip its empty windows by binary search
            for end in due_window_ends(starts[first_row:stop_row].tolist(), 0, first - 1, last,
                                       span, slide, first_end):
                due.sparse_pos.append(pos)
                due.sparse_end.append(end)
    return due.arrays(slide)


def window_slices(closed: SortedRows, window_ids: Any, ends: Any, span: int
                  ) -> tuple[Any, Any]:
    """``(lo, hi)`` per window: its closed slices ``[end - span, end)`` are rows ``lo .. hi -
    1``; binary searches on (key id, start)."""
    ids, starts = closed.ids, closed.times
    t0 = int(starts.min())
    width = int(starts.max()) - t0 + 1
    if width * (int(ids.max()) + 2) < 2**62:
        key = ids * width + (starts - t0)
        lo = np.searchsorted(key, window_ids * width + np.clip(ends - span - t0, 0, width), "left")
        hi = np.searchsorted(key, window_ids * width + np.clip(ends - t0, 0, width), "left")
        return lo, hi
    # times spanning beyond 2**62 / keys (tested)
    lo = np.empty(len(ends), np.int64)
    hi = np.empty(len(ends), np.int64)
    for j, (ident, end) in enumerate(zip(window_ids.tolist(), ends.tolist())):
        first = int(np.searchsorted(ids, ident, "left"))
        stop = int(np.searchsorted(ids, ident, "right"))
        lo[j] = first + int(np.searchsorted(starts[first:stop], end - span, "left"))
        hi[j] = first + int(np.searchsorted(starts[first:stop], end, "left"))
    return lo, hi


def emit(closed: SortedRows, keys: list[Any], ids: Any, advances: Sequence[Advance],
         grid: WindowGrid, partials: Partials, out_name: str | None,
         rows: list[dict[str, Any]]) -> None:
    """Rows of the due windows of the advancing keys (:func:`due_windows`) into ``rows``:
    ``row[out_name]`` for one output, else the lowered dict of the outputs, as the per-key
    path's rows."""
    if not len(closed.ids):
        return
    due = due_windows(closed, ids, advances, grid)
    if due is None:
        return
    positions, ends = due
    lo, hi = window_slices(closed, ids[positions], ends, grid.range)
    full = hi > lo
    if not full.all():
        positions, ends, lo, hi = positions[full], ends[full], lo[full], hi[full]
    values = partials.window_values(closed, lo, hi)
    window, span = grid.window, grid.range
    if out_name is not None:
        rows.extend([{"window": window, "key": keys[p], "start": e - span, "end": e, out_name: v}
                     for p, e, v in zip(positions.tolist(), ends.tolist(), values)])
    else:  # several outputs: the lowered dict of each window, as the per-key path
        rows.extend([{"window": window, "key": keys[p], "start": e - span, "end": e, **v}
                     for p, e, v in zip(positions.tolist(), ends.tolist(), values)])


__all__ = ["Advance", "WindowGrid", "due_windows", "emit", "window_slices"]
