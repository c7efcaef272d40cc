"""The throughput benchmark (:mod:`pebench.throughput`); ``python experiments/throughput.py [--quick]`` is
``python -m pebench.throughput [--quick]``. Not an experiment: importing this file registers nothing."""

from pebench.throughput import main

if __name__ == "__main__":
    main()
