"""``python -m otelbench.collector --store STORE [--host H] [--port P]``: the collector,
standalone, for a parent process (``otelbench run`` starts it so). The command line is
``otelbench collector``'s (:mod:`otelbench.cli.collector`); this entry point differs only so:

Without ``--store`` it is read from ``$OTELBENCH_COLLECTOR_STORE`` (a URL with a password stays
out of ``ps``). When it listens it prints one JSON line to stdout and flushes it, so a parent
process can learn the port::

    {"event": "ready", "host": "127.0.0.1", "port": 43117, "pid": 12345}

On SIGTERM or SIGINT it stops gracefully (in-flight batches are committed and answered) and prints::

    {"event": "stopped", "spans": 5120, "metric_points": 40, "spans_rejected": 0, "rejected": {}}

(A ClickHouse store keeps no metric points: the receiver answers them as rejected, in
``partial_success``, and counts them in ``GET /otelbench/stats`` as ``metric_points_rejected``.)

An error that prevents it from running (the file is not an otelbench store, the port is taken)
is one line on stderr and exit status 2.

This module is an entry point only: nothing imports it (the collector package does not import
the command line).
"""

import sys

from otelbench.cli.collector import module_main

sys.exit(module_main())
