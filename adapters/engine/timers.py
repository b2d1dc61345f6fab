"""One live engine timer per key, kept at the driver's next timer.

After each call for a key the driver says when it must be called again
(:attr:`adapters.Output.next_timer`: the watermark ``N`` at which something becomes due, or
``None``). Each engine maps ``N`` to its own timer time first, because the engines compare
timers and watermarks differently:

* Flink fires an event-time timer at ``T`` once its watermark ``wm >= T``; the driver's
  watermark is ``wm + 1``, so the timer goes at ``N - 1`` (``flink_adapter._time``);
* Beam fires a watermark timer at ``T`` (us) once ``wm > T``; the timer goes at
  ``(N - 1) * 1000`` (``beam_adapter._time``);
* Spark fires an event-time timer at ``T`` once its watermark ``>= T``, and Spark's
  watermark already means what the driver's does: the timer goes at ``N``.

:func:`rearm` then decides, the same way for every engine, which registrations to delete
and which to make so that exactly one timer (or none) is armed for the key; the engine
code only calls its timer API with the answer. One timer per key, rather than one per due
window, because the driver releases everything due at once: a single wake-up at the
earliest due time is enough, and timers cost state in every engine.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class TimerChange:
    """The timer calls that leave exactly the target armed for one key."""

    #: armed timer times to delete (every armed one except the target)
    delete: tuple[int, ...] = ()
    #: the time to register (``None``: the target is already armed, or there is none)
    register: int | None = None
    #: whether to delete the key's armed timers whose times the engine does not know
    clear_unknown: bool = False

    def carry_out(self, delete: Callable[[int], object],
                  register: Callable[[int], object]) -> None:
        """Make the change with an engine's timer calls (``clear_unknown`` is the caller's:
        only an engine that cannot read its timers back sets it)."""
        for t in self.delete:
            delete(t)
        if self.register is not None:
            register(self.register)


def rearm(target: int | None, armed: Collection[int] | None) -> TimerChange | None:
    """The timer calls that leave exactly ``target`` armed (``None``: no timer), or ``None``
    when nothing changes.

    ``armed``: the engine timer times currently registered for the key (empty when none is,
    e.g. the timer that just fired, which engines drop once it fires), or ``None`` when the
    engine cannot tell (Beam cannot read its timers back): then the change always writes,
    and ``clear_unknown`` is set when there is no new timer to replace the old one.
    """
    if armed is None:
        return TimerChange(register=target, clear_unknown=target is None)
    delete = tuple(t for t in armed if t != target)
    register = None if target is None or target in armed else target
    if not delete and register is None:
        return None
    return TimerChange(delete=delete, register=register)


__all__ = ["TimerChange", "rearm"]
