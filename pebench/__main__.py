"""``python -m pebench``: the ``pebench`` command."""

import sys

from pebench.cli import main

if __name__ == "__main__":
    sys.exit(main())
