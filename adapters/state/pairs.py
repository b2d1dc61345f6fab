"""A key's *pair map*: the engine-held key-value store of the MTA KVS layout
(:mod:`swag_core.algorithms.mta_kvs`, ``docs/adapters.md``, "KVS layout").

A :class:`~adapters.state.backend.KeyState` may offer ``pair_map()``, a map ``int -> bytes``
of the key (an engine's keyed map state: Flink ``MapState[long, bytes]``, Spark
``getMapState``; :class:`MemoryPairMap` here). :class:`LanePairs` is the
:class:`~swag_core.algorithms.mta_kvs.PairStore` the structure sees: it puts the lane into the
slot, encodes values with the codec's value encoding (:func:`~adapters.state.codec.encode_value`,
no pickle) and holds one call's writes until :meth:`LanePairs.apply`, so a call that fails
before its state writes leaves the key's map as the last completed call wrote it; the local
part carries the nonce of the metadata written after it, so a reload detects a call that
failed between the two writes.

Format (golden samples in ``tests/golden``): map key ``lane << 56 | level << 48 | pair``
(:func:`~swag_core.algorithms.mta_kvs.slot` plus the lane index); value
``encode_value(tuple of the pair's elements)``, level-0 elements ``(time, partial)``. The map
key ``lane << 56 | LOCAL`` holds the structure's local part,
``encode_value([PAIRS_VERSION, fingerprint, ints, partials, meta nonce])``
(:meth:`~swag_core.algorithms.mta_kvs.KvsAmta.local_state`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

from adapters.errors import CodecError, StateError
from adapters.state.codec import decode_value, encode_value, version_error

#: version of the local-part record (the first element)
PAIRS_VERSION: Final = 1
#: bits below the lane index in a map key
LANE_SHIFT: Final = 56
#: the slot (below the lane bits) of a lane's local-part record: above every pair slot
LOCAL: Final = (1 << LANE_SHIFT) - 1

_DELETED: Final = object()


@runtime_checkable
class PairMap(Protocol):
    """The engine's map ``int -> bytes`` of one key (what ``KeyState.pair_map()`` returns).
    Contract as for :class:`~adapters.state.backend.KeyState`: writes apply in call order and
    survive a restore."""

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        """The values at ``keys``, in order, ``None`` where absent."""
        ...

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        """Store each ``(key, value)``."""
        ...

    def delete_many(self, keys: Sequence[int]) -> None:
        """Delete the values at ``keys`` (absent keys are ignored)."""
        ...


class MemoryPairMap:
    """In-memory :class:`PairMap` (the reference, held by
    :class:`~adapters.state.backend.MemoryKeyState`); counts calls and bytes written."""

    __slots__ = ("bytes_written", "calls", "data")

    def __init__(self, data: dict[int, bytes] | None = None) -> None:
        self.data: dict[int, bytes] = {} if data is None else data
        self.calls = 0
        self.bytes_written = 0

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        self.calls += 1
        get = self.data.get
        return [get(k) for k in keys]

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        self.calls += 1
        for k, v in items:
            if type(k) is not int or not isinstance(v, bytes):
                raise TypeError(f"pair map items are (int, bytes), got {(k, v)!r:.80}")
            self.data[k] = v
            self.bytes_written += 8 + len(v)

    def delete_many(self, keys: Sequence[int]) -> None:
        self.calls += 1
        pop = self.data.pop
        for k in keys:
            pop(k, None)


class LanePairs:
    """One lane's :class:`~swag_core.algorithms.mta_kvs.PairStore` over a key's
    :class:`PairMap` (see the module docstring): encodes, prefixes with the lane, and holds
    the writes of the current call until :meth:`apply`."""

    __slots__ = ("key", "lane", "map", "pending")

    def __init__(self, pair_map: PairMap, lane: int, key: Any) -> None:
        self.map = pair_map
        self.lane = lane << LANE_SHIFT
        self.key = key  # for error messages
        self.pending: dict[int, Any] = {}   # slot -> value, or _DELETED

    def get_many(self, slots: Sequence[int]) -> list[Any]:
        pending = self.pending
        out: list[Any] = [pending.get(s) for s in slots]
        missing = [s for s, v in zip(slots, out) if v is None]
        if missing:
            lane = self.lane
            got = iter(self.map.get_many([lane | s for s in missing]))
            out = [self._decode(next(got)) if v is None else v for v in out]
        return [None if v is _DELETED else v for v in out]

    def _decode(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return decode_value(data)
        except CodecError as exc:
            raise StateError(f"key {self.key!r}: corrupt window pair in state: {exc}") from None

    def put_many(self, items: Sequence[tuple[int, Any]]) -> None:
        self.pending.update(items)

    def delete_many(self, slots: Sequence[int]) -> None:
        pending = self.pending
        for s in slots:
            pending[s] = _DELETED

    def encode(self, local: list[Any]) -> tuple[list[int], list[tuple[int, bytes]]]:
        """The map writes of the call's pairs and the structure's local part ``local``:
        ``(slots to delete, (slot, bytes) to put)``; writes nothing (an encoding error leaves
        the map as it was)."""
        lane = self.lane
        puts = [(lane | s, encode_value(v)) for s, v in self.pending.items() if v is not _DELETED]
        puts.append((lane | LOCAL, encode_value([PAIRS_VERSION, *local])))
        gone = [lane | s for s, v in self.pending.items() if v is _DELETED]
        return gone, puts

    def apply(self, gone: list[int], puts: list[tuple[int, bytes]]) -> None:
        """Write what :meth:`encode` returned and forget the call's pairs."""
        if gone:
            self.map.delete_many(gone)
        self.map.put_many(puts)
        self.pending.clear()

    def read_local(self) -> list[Any] | None:
        """The lane's local-part record without its version, or ``None`` if it has none."""
        data = self.map.get_many([self.lane | LOCAL])[0]
        if data is None:
            return None
        record = self._decode(data)
        if not isinstance(record, list) or not record or record[0] != PAIRS_VERSION:
            found = record[0] if isinstance(record, list) and record else record
            raise StateError(f"key {self.key!r}: "
                             f"{version_error('window pairs', found, [PAIRS_VERSION])}")
        return record[1:]


__all__ = ["LANE_SHIFT", "LOCAL", "PAIRS_VERSION", "LanePairs", "MemoryPairMap", "PairMap"]
