"""What a query is: window specs (:mod:`~adapters.query.window_specs`), aggregation specs and
the :class:`Query` that bundles them (:mod:`~adapters.query.specs`), the declaration of the
built-in aggregations (:mod:`~adapters.query.builtins`, their engine-neutral output types in
:mod:`~adapters.query.output_types`), missing values (:mod:`~adapters.query.missing`),
aggregations from Beam and Flink objects (:mod:`~adapters.query.adapted`), the window builders
users call (:mod:`~adapters.query.windows`: ``sliding``, ``tumbling``, ``over``,
``count_window``, durations), policy windows' measures and rules
(:mod:`~adapters.query.policy`) and strict parsing of event times and watermarks
(:mod:`~adapters.query.times`). Pure values: nothing here holds state or calls an engine."""
