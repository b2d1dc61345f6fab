"""What the stream's declared type already tells about a query, checked when
:func:`flink_adapter.sliding_aggregate` is called, before any job runs: the key, time and
value fields exist, the time field has a type the adapter reads as a time, and the fields
the aggregations read are fields of the event. The messages name the field and what to
change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyflink.common.typeinfo import PickledBytesTypeInfo, TypeInformation

from adapters import QuerySpecError
from adapters.engine.fields import fields_read
from adapters.query.specs import PolicyWindow, Query

from ._types import StreamNames, is_integral, plain_type, row_fields, time_kind

#: How to give a stream named fields, for the messages.
DECLARE_ROW = ("declare the stream's type as a row with field names, e.g. "
               "`.map(f, output_type=Types.ROW_NAMED([...], [...]))` or "
               "`env.from_collection(data, type_info=Types.ROW_NAMED([...], [...]))`")


def check_stream(query: Query, names: StreamNames, input_type: TypeInformation | None
                 ) -> None:
    """Raise ``TypeError`` or :class:`adapters.QuerySpecError` when the stream's declared
    type shows that ``names`` or ``query`` cannot be read from its elements."""
    fields = row_fields(input_type)
    named = {what: name for what, name in (("key", names.key), ("time", names.time),
                                            ("value", names.value)) if isinstance(name, str)}
    if fields is None:
        if named:
            what, name = next(iter(named.items()))
            raise TypeError(
                f"{what}={name!r} names a field, but the stream's elements have no declared "
                f"field names (its type is {_type_name(input_type)}): {DECLARE_ROW}; or pass "
                f"{what} as a function of the element")
        return
    for what, name in named.items():
        if name not in fields:
            raise QuerySpecError(what, f"{name!r} is not a field of the stream's rows "
                                       f"(fields: {', '.join(fields)}); {what}= must name one")
    if isinstance(names.time, str):
        _check_time_type(names.time, fields[names.time])
    event = fields if names.value is None else row_fields(fields[names.value])
    if event is not None:
        _check_fields_read(query, event, names.value)


def _check_time_type(name: str, t: TypeInformation) -> None:
    t = plain_type(t)
    if is_integral(t) or time_kind(t) is not None or isinstance(t, PickledBytesTypeInfo):
        return
    raise TypeError(
        f"time field {name!r} has type {_type_name(t)}; declare it as integer epoch "
        f"milliseconds (Types.LONG()) or a timestamp (Types.SQL_TIMESTAMP(), "
        f"Types.LOCAL_DATE_TIME(), Types.INSTANT()), convert it in a map before "
        f"sliding_aggregate, or pass time=<function of the element giving ms>")


def _check_fields_read(query: Query, event: Mapping[str, Any], value: str | None) -> None:
    missing = sorted(fields_read(query).names - set(event))
    if not missing:
        return
    readers = [a.name for a in query.aggregations
               if {a.field, *a.other_fields} & set(missing)]
    readers += [f"windows[{i}]" for i, w in enumerate(query.windows)
                if isinstance(w, PolicyWindow) and w.field in missing]
    where = "the stream's rows" if value is None else f"the rows of the value field {value!r}"
    raise QuerySpecError(
        "aggregations", f"{', '.join(readers)} read(s) field(s) {missing} that {where} do not "
                        f"have (fields: {', '.join(event)}); name one of those fields")


def _type_name(t: TypeInformation | None) -> str:
    if t is None:
        return "not declared"
    if isinstance(t, PickledBytesTypeInfo):
        return "PICKLED_BYTE_ARRAY"
    return str(t)


__all__ = ["DECLARE_ROW", "check_stream"]
