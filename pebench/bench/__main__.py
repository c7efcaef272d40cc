"""``python -m pebench.bench``: ``tox -e bench`` (:func:`pebench.bench.main`)."""

import sys

from pebench.bench import main

if __name__ == "__main__":
    sys.exit(main())
