"""Are the capable encodings' missed fits a matter of steps? A fit pilot with the step cap doubled.

A pilot (never loaded as an experiment): ``python pilots/cap_pilot.py`` takes every
run of the standard reference it was made against (the length experiment of ``results/standard`` at
277b29c, frozen in ``results/pilots/reference_runs.csv``) in which a capable encoding
(:data:`CAPABLE`: it can represent the task) did not fit one of :data:`TASKS`, and trains it again under
exactly the suite's protocol (grid, fit criterion, plateau stop, seed) with one change: the step cap is
:data:`FACTOR` times the suite's, and the cosine learning-rate schedule decays over the longer cap. Writes
``results/pilots/cap_pilot.csv``; ``read`` writes its reading beside it (``cap_pilot.json``), which the pilots
page shows beside the reference's runs.

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
  time of every run of these tasks that the reference stopped at its cap, again (the reading computes the
  bound, :func:`reading`).

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
#: the reference's runs, frozen (``python pilots/task_pilots.py --freeze-reference``)
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
    :data:`FACTOR` (the suite's spec with the reference's cap is checked to be the reference's run). The suite
    expands as protocol v2 declared it, under which the reference was made (:func:`pebench.protocol.as_declared`)."""
    from pebench.plan.experiment import suite_runs
    from pebench.protocol import as_declared

    with as_declared(suite, 2):
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


def reading(path: Path = OUT, reference: Path = REFERENCE_RUNS) -> list:
    """The pilot's reading of its rows ``path`` (blocks of :mod:`pebench.render.blocks`): per missed fit of a
    capable encoding in ``reference`` (the frozen reference runs the pilot was made against), how the reference
    run stopped and how the same run stopped with the longer cap; its declared reading (which misses are misses
    of steps), the bound on what the longer cap would cost the suite, and whether the standard suite has adopted
    it."""
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import made_by, reference_sha, shown

    from pebench.render.blocks import table, text
    from pebench.store.schema import encoding_label

    for needed, how in ((path, f"python {shown(Path(__file__))}"),
                        (reference, "python pilots/task_pilots.py --freeze-reference")):
        if not Path(needed).exists():
            raise SystemExit(f"{needed} is missing: run `{how}` first")
    pilots = pd.read_csv(path)
    runs = pd.read_csv(reference)
    theirs = runs.rename(columns=lambda c: c if c == "run_id" else f"{c}_ref")
    both = pilots.merge(theirs, left_on="reference_run_id", right_on="run_id", how="left", suffixes=("", "_x"))
    both = both.sort_values(["arch", "task", "encoding", "seed"], kind="stable")

    def stop(acc, fitted, reason, steps) -> str:
        return "—" if pd.isna(acc) else f"{acc:.3f} ({'fit' if bool(fitted) else reason} @{int(steps)})"

    rows = [[r.arch, r.task, encoding_label(r.encoding), str(int(r.seed)),
             stop(r.fit_token_acc_ref, r.fitted_ref, r.stop_reason_ref, r.steps_done_ref),
             stop(r.fit_token_acc, r.fitted, r.stop_reason, r.steps_done)] for r in both.itertuples()]
    cap = " / ".join(map(str, sorted({int(c) for c in both["step_cap"]})))
    return [table(["arch", "task", "encoding", "seed", "reference: held-out token acc. (stop @ steps)",
                   f"cap {cap}: held-out token acc. (stop @ steps)"], rows),
            text(f"Made by `{shown(Path(__file__))}` at {made_by(pilots.iloc[0])}, {len(pilots)} pilots, against the "
                 f"reference made at `{reference_sha(runs)}`. {_reading(both)}{_cost(both, runs)}")]


def _named(part) -> str:
    """The runs of ``part`` in words (``decoder copy learned seed 1, ...``), or ``none``."""
    from pebench.store.schema import encoding_label

    return ", ".join(f"{r.arch} {r.task} {encoding_label(r.encoding)} seed {int(r.seed)}"
                     for r in part.itertuples()) or "none"


def _reading(both) -> str:
    """The declared reading of the pilots beside their reference runs (``both``): which misses are of steps."""
    fitted = both[both["fitted"].astype(bool)]
    missed = both[~both["fitted"].astype(bool)]
    said = (f"By the declared reading, {len(fitted)} of the {len(both)} misses are misses of steps (fitted "
            f"with the longer cap: {_named(fitted)}) and {len(missed)} are not explained by steps "
            f"({_named(missed)}).")
    plateaued = missed[(missed["stop_reason"] == "plateau") & (missed["steps_done"] < missed["steps_ref"])]
    if len(plateaued):
        said += (f" {len(plateaued)} of those stopped at the plateau stop before even the suite's own cap, in the "
                 "pilot as in the reference: their held-out error had stopped falling.")
    early = fitted[fitted["steps_to_fit"] <= fitted["steps_ref"]]
    if len(early):
        said += (f" Of the {len(fitted)} that fitted, {len(early)} did so within the suite's own cap "
                 f"({_named(early)}): there the slower decay of the learning rate over the longer cap, not the "
                 "extra steps, made the fit.")
    return said


def _cost(both, runs) -> str:
    """The bound on what the pilots' longer cap would add to the suite (every run of these tasks the reference
    ``runs`` stopped at its cap, again), and whether the standard suite of protocol v2 adopted that cap."""
    from pebench.protocol import as_declared, task_steps

    factors = {round(float(f), 3) for f in both["step_cap"] / both["steps_ref"]}
    tasks = set(both["task"])
    capped = runs[(runs["experiment"] == "length_extrapolation") & runs["task"].isin(tasks)
                  & (runs["stop_reason"] == "cap")]
    factor = max(factors)
    extra = float(capped["train_seconds"].sum()) * (factor - 1)
    times = "doubled" if factors == {2.0} else f"{factor:g}x"
    cost = (f" The {times} cap on {', '.join(sorted(tasks))} would add at most {extra:.0f} worker-seconds of "
            f"training to the suite ({len(capped)} runs of these tasks, of any encoding, stopped at the cap in the "
            f"reference; about {extra / 2 / 60:.0f} min of wall time on 2 workers) to the time measured for that "
            "reference.")
    with as_declared("standard", 2):
        adopted = all(task_steps("standard", r.arch, r.task) == int(r.step_cap) for r in both.itertuples())
    if adopted:
        cost += (f" The standard suite has since adopted the {times} cap on {', '.join(sorted(tasks))} in both "
                 "architectures (`pebench.protocol.TASK_STEPS`); what it cost is measured on the performance page.")
    return cost


def main(argv=None) -> None:
    """Run the pilots and write ``--out``; or ``read``: write the pilot's reading of its rows."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import reading_path, run_pilots, write_reading

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["read"]:
        return write_reading(reading(OUT), reading_path(OUT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="read: write the pilot's reading of its rows instead")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reference", type=Path, default=REFERENCE_RUNS,
                        help="the reference's runs, frozen by task_pilots.py --freeze-reference")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    run_pilots(pilot, specs(args.reference), args.workers, args.out)


if __name__ == "__main__":
    main()
