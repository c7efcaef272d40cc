"""``python -m pebench.bench.times``: the README's table of times on 2 CPU cores, as Markdown.

Smoke's is its measured wall time (``results/performance/suites.csv``, written by ``python -m
pebench.bench.throughput --only suites --suites smoke``), and so is one encoding's verdict where a
``evaluate:NAME`` row was measured (``--suites evaluate:NAME --suite-plugin FILE``); the others are the wall times
the committed standard reference's recorded training seconds give for the same runs on 2 workers
(:func:`pebench.plan.sweep_time.recorded_time`). That reference was made beside other work, so they are upper
bounds for an idle machine.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from pebench.plan.experiment import suite_runs
from pebench.plan.sweep_time import recorded_seconds, wall_time

#: how a timed suite names one encoding's verdict in ``suites.csv``: ``evaluate:NAME`` times ``pebench evaluate
#: NAME`` (the standard suite's runs of that encoding, then its verdict; :func:`pebench.bench.throughput.
#: suite_command`)
EVALUATE_PREFIX = "evaluate:"
#: workers of every figure (one per core of a 2-core machine)
WORKERS = 2
#: the experiments whose grids compare every encoding: what ``pebench evaluate NAME`` runs of a new one
EVALUATED = ("length_extrapolation", "lm_extrapolation")


def duration(seconds: float) -> str:
    """``13 s``, ``27 min`` or ``2.4 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def measured(suites_csv: Path, prefix: str) -> tuple[str, int, float] | None:
    """The suite, runs and wall seconds of the latest measurement in ``suites_csv`` of a suite named ``prefix``
    or starting with it (``evaluate:``: any encoding's verdict); None where there is none."""
    with open(suites_csv, newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["suite"].startswith(prefix)]
    return (rows[-1]["suite"], int(rows[-1]["runs"]), float(rows[-1]["wall_seconds"])) if rows else None


def times_table(reference: str | Path = "results/standard",
                suites_csv: str | Path = "results/performance/suites.csv") -> str:
    """The table of times (Markdown): smoke, quick, one encoding's verdict and the full standard suite."""
    seconds = recorded_seconds(reference)
    measured_smoke = measured(Path(suites_csv), "smoke")
    if measured_smoke is None:
        raise ValueError(f"{suites_csv}: no measured smoke sweep (python -m pebench.bench.throughput --only suites)")
    _, smoke_runs, smoke_seconds = measured_smoke
    verdict = measured(Path(suites_csv), EVALUATE_PREFIX)
    quick = [spec.run_id for spec in suite_runs("quick")]
    by_encoding: dict[str, list[float]] = {}
    for spec in suite_runs("standard", EVALUATED):
        if spec.run_id in seconds:
            by_encoding.setdefault(spec.encoding, []).append(seconds[spec.run_id])
    verdicts = [wall_time(runs, WORKERS) for runs in by_encoding.values()]
    counts = sorted({len(runs) for runs in by_encoding.values()})
    rows = [
        ("smoke", "`pebench run --suite smoke --workers 2`", str(smoke_runs), duration(smoke_seconds),
         "measured (`results/performance/suites.csv`)"),
        ("quick", "`tox -e bench -- --suite quick`", str(len(quick)), duration(wall_time(
            [seconds[run_id] for run_id in quick], WORKERS)), "the reference's seconds of its runs"),
        ("one encoding's verdict", "`pebench evaluate NAME --workers 2`", f"{counts[0]}-{counts[-1]}",
         (f"{duration(verdict[2])} measured ({verdict[1]} runs); " if verdict else "")
         + f"{duration(statistics.mean(verdicts))} mean by the reference ({duration(min(verdicts))} to "
           f"{duration(max(verdicts))})",
         (f"measured: `{verdict[0].removeprefix(EVALUATE_PREFIX)}` (`results/performance/suites.csv`); " if verdict
          else "") + f"the reference's seconds of each of its {len(verdicts)} encodings' runs"),
        ("standard (the reference)", "`tox -e bench`", str(len(seconds)),
         duration(wall_time(list(seconds.values()), WORKERS)), "the reference's seconds of all its runs"),
    ]
    header = ("what", "command", "runs", "2 CPU cores", "from")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


if __name__ == "__main__":
    print(times_table())
