"""Are the capable encodings' missed fits a matter of steps? A fit pilot with the step cap doubled.

Not an experiment (importing this file registers nothing): ``python experiments/cap_pilot.py`` takes every
run of the standard reference it was made against (the length experiment of ``results/standard`` at
277b29c, frozen in ``results/pilots/reference_runs.csv``) in which a capable encoding
(:data:`CAPABLE`: it can represent the task) did not fit one of :data:`TASKS`, and trains it again under
exactly the suite's protocol (grid, fit criterion, plateau stop, seed) with one change: the step cap is
:data:`FACTOR` times the suite's, and the cosine learning-rate schedule decays over the longer cap. Writes
``results/pilots/cap_pilot.csv``; the protocol page shows it beside the reference's runs.

Why: the standard suite's acceptance asks every capable encoding to fit copy, reverse and duplicate in both
architectures, and its budget asks the suite to run in 60 minutes on 2 CPU cores. In the reference most of
these misses ended at the step cap with their held-out accuracy still rising (0.95-0.99), one (encoder
RoPE, duplicate) at the cap far below, and encoder T5 on duplicate at a plateau on the position-free floor
(``t5_bucket_pilot.py`` traces that one to T5's bucketing). If the doubled cap fits a miss, that miss is a
matter of steps, and meeting the acceptance costs budget; if it does not, more steps are not the remedy.

Declared before any of its runs was made (this file's first commit), with its reading:

- **a miss fitted by the doubled cap** is a budget miss; one that is not is unexplained by steps;
- the pilot retrains only the misses: a seed that fitted within the suite's cap might train differently
  under the longer schedule, so the pilot does not show that a doubled cap keeps every fit;
- what a doubled cap on these tasks would cost the suite is bounded, not measured: at most the training
  time of every run of these tasks that the reference stopped at its cap, again (the protocol page computes
  the bound, ``pebench_docs.cap_pilot``).

The standard suite keeps its caps either way: this is evidence for the budget decision, not a change of
protocol.

Afterwards (a decision taken after this pilot, for every encoding alike, recorded in
``pebench.protocol.TASK_STEPS``): the standard suite adopted the doubled cap on these three tasks in both
architectures, because the acceptance asks the capable encodings to fit them, and its cost was measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

#: the encodings the acceptance names as able to represent copy, reverse and duplicate
CAPABLE = ("sinusoidal", "learned", "rope", "xpos", "t5")
#: the tasks the acceptance names
TASKS = ("copy", "reverse", "duplicate")
#: how many times the suite's step cap the pilot trains for
FACTOR = 2
ROOT = Path(__file__).resolve().parent.parent
#: the reference's runs, frozen (``python experiments/task_pilots.py --freeze-reference``)
REFERENCE_RUNS = ROOT / "results" / "pilots" / "reference_runs.csv"
OUT = ROOT / "results" / "pilots" / "cap_pilot.csv"


def reference_runs(path: Path = REFERENCE_RUNS):
    """One row per run of the reference's length experiment on :data:`TASKS` (run id, cell, seed, step cap,
    fitted, stop reason, held-out accuracy at the stop, steps done, training seconds): the reference the pilot
    was made against (``task_pilots.freeze_reference``, frozen before the suite adopted the doubled cap)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import reference_runs as frozen

    runs = frozen(path)
    return runs[runs["task"].isin(TASKS)].reset_index(drop=True)


def misses(path: Path = REFERENCE_RUNS):
    """The reference's runs of a capable encoding on :data:`TASKS` that did not fit."""
    runs = reference_runs(path)
    return runs[runs["encoding"].isin(CAPABLE) & ~runs["fitted"]].reset_index(drop=True)


def specs(path: Path = REFERENCE_RUNS, suite: str = "standard") -> list:
    """The suite's specs of the reference's :func:`misses`, each with the reference's step cap times
    :data:`FACTOR` (the suite's spec with the reference's cap is checked to be the reference's run)."""
    from pebench.experiment import suite_runs

    by_cell = {(spec.arch, spec.task, spec.encoding, spec.seed): spec
               for spec in suite_runs(suite, ["length_extrapolation"])}
    out = []
    for miss in misses(path).sort_values("run_id").itertuples():
        spec = by_cell.get((miss.arch, miss.task, miss.encoding, miss.seed))
        original = spec and dataclasses.replace(spec, train=dataclasses.replace(spec.train, steps=int(miss.steps)))
        if original is None or original.run_id != miss.run_id:
            raise SystemExit(f"the {suite} suite no longer makes run {miss.run_id} of {path} (with its cap)")
        out.append(dataclasses.replace(original, train=dataclasses.replace(original.train,
                                                                           steps=original.train.steps * FACTOR)))
    return out


def pilot(spec) -> dict:
    """The fit columns of ``spec``'s training (:func:`task_pilots.pilot`) and the reference run it repeats."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot as fit_pilot

    reference_id = dataclasses.replace(spec, train=dataclasses.replace(spec.train,
                                                                       steps=spec.train.steps // FACTOR)).run_id
    return {**fit_pilot(spec), "reference_run_id": reference_id}


def main(argv=None) -> None:
    """Run the pilots and write ``--out``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import run_pilots

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reference", type=Path, default=REFERENCE_RUNS,
                        help="the reference's runs, frozen by task_pilots.py --freeze-reference")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    run_pilots(pilot, specs(args.reference), args.workers, args.out)


if __name__ == "__main__":
    main()
