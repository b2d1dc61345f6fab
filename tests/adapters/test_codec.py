"""The state codec: exact round trips of every supported type, JSON on the wire, no pickle."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import CodecError, decode_value, encode_value
from adapters.codec import decode_meta, encode_meta
from adapters.errors import StateError

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2**80, 2**80),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.binary(max_size=8))
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5),
                      st.binary(max_size=4))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=5), inner, max_size=4),
    st.dictionaries(hashables, inner, max_size=4),
), max_leaves=20)


def identical(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (list(a) == list(b) and all(type(k) is type(j) for k, j in zip(a, b))
                and all(identical(a[k], b[k]) for k in a))
    return bool(a == b)


def _no_constants(name: str) -> Any:
    raise AssertionError(f"non-standard JSON constant {name}")


@settings(max_examples=300)
@given(values)
def test_round_trip(value: Any) -> None:
    data = encode_value(value)
    json.loads(data, parse_constant=_no_constants)  # strict JSON: no NaN/Infinity literals
    assert identical(decode_value(data), value)


def test_documented_tags() -> None:
    assert encode_value({"v": 1.5, "n": None}) == b'{"v":1.5,"n":null}'
    assert encode_value((1, math.inf)) == b'{"$t":[1,{"$f":"inf"}]}'
    assert encode_value(b"\x00\x01") == b'{"$b":"AAE="}'
    assert encode_value({1: "a"}) == b'{"$d":[[1,"a"]]}'
    assert encode_value({"$t": 1}) == b'{"$d":[["$t",1]]}'
    assert encode_value("é") == '"é"'.encode()


def test_numpy_scalars_become_python_scalars() -> None:
    np = pytest.importorskip("numpy")
    assert decode_value(encode_value({"a": np.int64(3), "b": np.float64(0.5),
                                      "c": np.bool_(True)})) == {"a": 3, "b": 0.5, "c": True}


def test_unsupported_types_and_corrupt_bytes() -> None:
    with pytest.raises(CodecError, match="set"):
        encode_value({1, 2})
    with pytest.raises(CodecError):
        decode_value(b"{not json")
    with pytest.raises(CodecError, match="tagged"):
        decode_value(b'{"$f":"huge"}')


def test_meta() -> None:
    meta = {"codec": 1, "wm": None, "seq": 3}
    assert decode_meta(encode_meta(meta)) == meta
    with pytest.raises(StateError, match="codec version 2"):
        decode_meta(encode_meta({"codec": 2}))
    with pytest.raises(StateError, match="corrupt"):
        decode_meta(b"\xff")
