"""``python -m pebench.cli``: the ``pebench`` command (:func:`pebench.cli.main`)."""

import sys

from pebench.cli import main

if __name__ == "__main__":
    sys.exit(main())
