"""What a query is: window specs, aggregation specs and the :class:`Query` that bundles them
(:mod:`~adapters.query.specs`), the window builders users call (:mod:`~adapters.query.windows`:
``sliding``, ``tumbling``, ``over``, ``count_window``, durations), policy windows' measures and
rules (:mod:`~adapters.query.policy`) and strict parsing of event times and watermarks
(:mod:`~adapters.query.times`). Pure values: nothing here holds state or calls an engine."""
