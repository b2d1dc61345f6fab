"""What driver calls return: :class:`Output` (rows, late events, timers), :class:`LateEvent`
and the per-key metrics :class:`KeyInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class LateEvent(NamedTuple):
    """An event that arrived with ``time < watermark - allowed_lateness``: counted, never
    aggregated, returned so that the engine can route it to a side output."""

    key: Any
    time: int
    value: Any


@dataclass
class Output:
    """What one driver call produced.

    Attributes:
        rows: emitted rows (dicts, see ``docs/adapters.md``), in time order per key.
        late: late events of this call.
        timers: for every key the call touched, the watermark value at which the engine must
            call :meth:`WindowDriver.advance_watermark` for it next, or ``None`` when no
            timer is needed. Keep one timer per key: replace (or delete) the previous one.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    late: list[LateEvent] = field(default_factory=list)
    timers: dict[Any, int | None] = field(default_factory=dict)

    @property
    def next_timer(self) -> int | None:
        """The timer of the single key of a one-key call."""
        if len(self.timers) != 1:
            raise ValueError(f"next_timer is for one-key calls; this output has "
                             f"{len(self.timers)} keys: use .timers")
        return next(iter(self.timers.values()))

    def extend(self, other: Output) -> None:
        """Append another output (rows, late events; its timers replace ours)."""
        self.rows.extend(other.rows)
        self.late.extend(other.late)
        self.timers.update(other.timers)


class KeyInfo(NamedTuple):
    """Metrics of one key (:meth:`WindowDriver.info`)."""

    watermark: int | float   #: largest watermark seen (``-inf`` before the first)
    late: int                #: late events counted so far
    released: int            #: events released into the structures so far
    pending: int             #: events waiting for the watermark
    retained: int            #: released events still kept in state


__all__ = ["KeyInfo", "LateEvent", "Output"]
