"""Column names between Spark and the Python workers (:mod:`adapters.engine.columns`'), and
Spark's schema of the Python side's JSON output."""

from adapters.engine.columns import (
    AGGS_OUT,
    END_OUT,
    EVENT_OUT,
    KEY_IN,
    KEY_OUT,
    LATE,
    ORDER_IN,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
    WINDOW_OUT,
)

#: Output of the Python side in streaming with JSON rows (window index -1 marks a late event).
WIDE_SCHEMA = (f"{KEY_OUT} string, {WINDOW_OUT} int, {START_OUT} long, {END_OUT} long, "
               f"{TIME_OUT} long, {EVENT_OUT} string, {AGGS_OUT} string")

__all__ = ["AGGS_OUT", "END_OUT", "EVENT_OUT", "KEY_IN", "KEY_OUT", "LATE", "ORDER_IN",
           "START_OUT", "TIME_IN", "TIME_OUT", "TYPED_AGG_OUT", "TYPED_EVENT_OUT", "VALUE_IN",
           "WIDE_SCHEMA", "WINDOW_OUT"]
