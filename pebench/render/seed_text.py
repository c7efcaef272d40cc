"""How the CLI and the protocol page say a suite's seeds: ``3 (seeds 0-2)``, ``3-10 per experiment (seeds 0-9)``.

Standard library only, below the CLI and the protocol tables (which both say seeds this way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def describe_seeds(seeds: Sequence[int]) -> str:
    """How many seeds and which, e.g. ``1 (seed 0)``, ``3 (seeds 0-2)``, ``2 (seeds 0, 5)``."""
    return f"{len(set(seeds))} ({_which_seeds(seeds)})"


def _which_seeds(seeds: Sequence[int]) -> str:
    """``seed 0``, ``seeds 0-2`` or ``seeds 0, 5``."""
    seeds = sorted(set(seeds))
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
    return "seeds " + (f"{seeds[0]}-{seeds[-1]}" if contiguous else ", ".join(map(str, seeds)))


def describe_run_seeds(specs: Sequence[Any]) -> str:
    """The seeds of a suite's runs (:class:`~pebench.plan.experiment.RunSpec`, or anything with ``experiment`` and
    ``seed``), as :func:`describe_seeds`, or, when its experiments differ (the replication suite), e.g.
    ``3-10 per experiment (seeds 0-9)``."""
    per_experiment: dict[str, set[int]] = {}
    for spec in specs:
        per_experiment.setdefault(spec.experiment, set()).add(spec.seed)
    return describe_experiment_seeds(per_experiment)


def describe_experiment_seeds(per_experiment: Mapping[str, Iterable[int]]) -> str:
    """The seeds of each experiment of a suite, as :func:`describe_run_seeds` says them (experiments without a
    run are left out)."""
    per_experiment = {name: set(seeds) for name, seeds in per_experiment.items() if seeds}
    if not per_experiment:
        return "0"
    every = sorted(set().union(*per_experiment.values()))
    counts = sorted({len(seeds) for seeds in per_experiment.values()})
    if len(counts) == 1:
        return describe_seeds(every)
    return f"{counts[0]}-{counts[-1]} per experiment ({_which_seeds(every)})"
