"""Aggregations from other engines' aggregation objects: a Beam ``CombineFn``-like or a Flink
``AggregateFunction``-like object as a :class:`~swag_core.Aggregation`
(:func:`aggregation_from`)."""

from __future__ import annotations

import copy
from typing import Any

from swag_core import Aggregation

_BEAM_METHODS = ("add_input", "merge_accumulators", "extract_output")
_FLINK_METHODS = ("add", "merge", "get_result")


def aggregation_from(obj: Any, *, name: str | None = None, commutative: bool = False,
                     mutates: bool = True) -> Aggregation:
    """A :class:`~swag_core.Aggregation` from an aggregation-like object.

    Accepted:

    * a :class:`~swag_core.Aggregation` (returned as is);
    * a Beam ``CombineFn``-like object: ``create_accumulator()``, ``add_input(acc, x)``,
      ``merge_accumulators(accs)``, ``extract_output(acc)``;
    * a Flink ``AggregateFunction``-like object: ``create_accumulator()``,
      ``add(x, acc)``, ``merge(a, b)``, ``get_result(acc)``.

    The wrapped ``merge`` **must be associative** (merging ``a`` with ``b`` then ``c`` equals
    ``a`` with ``b``-and-``c``) and ``create_accumulator()`` must be its identity; it need not
    be commutative: ``a`` is always the older part of the window. Declare
    ``commutative=True`` if it is. Structures share accumulators, so the wrapper never lets the
    user code mutate one it did not create: Beam's contract allows mutating only the *first*
    accumulator of ``merge_accumulators``, so a fresh one is put first; Flink's ``merge`` may
    reuse either argument, so both are deep-copied unless ``mutates=False`` promises that
    ``merge`` and ``add`` return new objects.
    """
    if isinstance(obj, Aggregation):
        return obj
    create = getattr(obj, "create_accumulator", None)
    if create is None or not callable(create):
        raise TypeError(f"expected a swag_core.Aggregation, a Beam CombineFn-like object "
                        f"(create_accumulator/add_input/merge_accumulators/extract_output) or "
                        f"a Flink AggregateFunction-like object "
                        f"(create_accumulator/add/merge/get_result), got {obj!r}")
    label = name or getattr(obj, "__name__", None) or type(obj).__name__
    if all(callable(getattr(obj, m, None)) for m in _BEAM_METHODS):
        return _from_combine_fn(obj, label, commutative, mutates)
    if all(callable(getattr(obj, m, None)) for m in _FLINK_METHODS):
        return _from_aggregate_function(obj, label, commutative, mutates)
    raise TypeError(f"{obj!r} has create_accumulator but neither the Beam CombineFn methods "
                    f"(add_input, merge_accumulators, extract_output) nor the Flink "
                    f"AggregateFunction methods (add, merge, get_result)")


def _from_combine_fn(obj: Any, label: str, commutative: bool, mutates: bool) -> Aggregation:
    """A Beam ``CombineFn``-like object (see :func:`aggregation_from`)."""
    create, add_input, merge_accs = obj.create_accumulator, obj.add_input, \
        obj.merge_accumulators
    extract_output = obj.extract_output

    def beam_lift(x: Any) -> Any:
        return add_input(create(), x)

    def beam_combine(a: Any, b: Any) -> Any:
        # Only the first accumulator may be mutated (Beam CombineFn contract): a fresh one.
        return merge_accs([create(), a, b])

    def beam_lower(a: Any) -> Any:
        return extract_output(copy.deepcopy(a) if mutates else a)

    return Aggregation(combine=beam_combine, identity=create(), lift=beam_lift,
                       lower=beam_lower, commutative=commutative, name=label)


def _from_aggregate_function(obj: Any, label: str, commutative: bool, mutates: bool
                             ) -> Aggregation:
    """A Flink ``AggregateFunction``-like object (see :func:`aggregation_from`)."""
    create, add, merge, get_result = obj.create_accumulator, obj.add, obj.merge, \
        obj.get_result
    dup = copy.deepcopy if mutates else (lambda a: a)

    def flink_lift(x: Any) -> Any:
        return add(x, create())

    def flink_combine(a: Any, b: Any) -> Any:
        return merge(dup(a), dup(b))

    def flink_lower(a: Any) -> Any:
        return get_result(dup(a))

    return Aggregation(combine=flink_combine, identity=create(), lift=flink_lift,
                       lower=flink_lower, commutative=commutative, name=label)
