"""``python -m otelbench.cli ARGS``: the ``otelbench`` command line."""

from otelbench.cli import main

main()
