"""Column and state names between Spark and the Python workers (see :mod:`spark_adapter.
_runtime` for the rows they name)."""

#: Output of the Python side in streaming (window index -1 marks a late event).
WIDE_SCHEMA = ("_swag_k string, _swag_w int, _swag_start long, _swag_end long, "
               "_swag_time long, _swag_event string, _swag_aggs string")
LATE = -1

# Column names between Spark and Python. Typed columns are "<prefix><index>".
KEY_IN, VALUE_IN, TIME_IN, ORDER_IN = "swag_k", "swag_v", "swag_t", "swag_o"
KEY_OUT, EVENT_OUT, AGGS_OUT = "_swag_k", "_swag_event", "_swag_aggs"
TYPED_EVENT_OUT, TYPED_AGG_OUT = "_swag_e", "_swag_a"
