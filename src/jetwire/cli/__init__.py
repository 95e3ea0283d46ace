"""The ``jetwire`` command line (``pip install 'jetwire[cli]'``).

* :mod:`jetwire.cli.main` - the click application (``jetwire`` console script and
  ``python -m jetwire``).
* :mod:`jetwire.cli.bench` - ``jetwire bench <mode>`` (multi-process load generator)
  and ``jetwire bench compare``: the click views of the benchmark engine
  (:mod:`~jetwire.cli._workloads` the catalogue, :mod:`~jetwire.cli._engine` the
  orchestrator, :mod:`~jetwire.cli._results` the result model,
  :mod:`~jetwire.cli._render` the rich and plain renderers).
* :mod:`jetwire.cli.compare` / :mod:`jetwire.cli.rows` - ``benchmarks/compare.py``'s
  view of the engine and the row harness. Neither needs click or rich, so the benchmark
  scripts run without the ``cli`` extra.
* :mod:`jetwire.cli.stream`, :mod:`~jetwire.cli.consumer`, :mod:`~jetwire.cli.kv`,
  :mod:`~jetwire.cli.objects`, :mod:`~jetwire.cli.core` (pub / sub / req / reply),
  :mod:`~jetwire.cli.events`, :mod:`~jetwire.cli.cluster` - the management commands, one
  module per noun, over :mod:`~jetwire.cli._shared` (what they share).
* :mod:`jetwire.cli.server` - ``jetwire server`` (embedded nats-server).

Importing this package is cheap: it imports neither click nor rich.
"""
