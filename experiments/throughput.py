"""The throughput benchmark (:mod:`pebench.bench.throughput`); ``python experiments/throughput.py [--quick]`` is
``python -m pebench.bench.throughput [--quick]``. Not an experiment: importing this file registers nothing (and, since
every listing of the experiments imports it, imports nothing: the benchmark needs torch)."""

if __name__ == "__main__":
    from pebench.bench.throughput import main

    main()
