"""``python -m pebench``: the ``pebench`` command."""

import sys

from pebench.cli import main

sys.exit(main())
