"""Which plateau stop would bring the standard suite within its budget without stopping a run that fits?

A pilot (never loaded as an experiment): ``python pilots/stop_rule_replay.py``
reads the fit curves (the held-out accuracy at every check, the ``fit_curve`` column) of a results
folder's runs, replays on each curve every candidate plateau stop of :data:`PATIENCES` x
:data:`MIN_DROPS` with :func:`pebench.learn.train.replay_stop` (the tracker train() itself uses), and writes
one row per candidate to ``results/pilots/stop_rules.csv``; ``read`` writes its reading beside it
(``stop_rules.json``), which the pilots page shows.

Why: the standard suite's runs that never fit spend most of its training time at the step cap, their
held-out error still falling by more than the current rule's 10 % per 1000 steps. A stricter plateau
stop ends them sooner, but a rule that also ends a run that would have fitted turns a fit into a
failure. Training is deterministic and checking the fit never changes it, so a run trained under a
stricter rule stops exactly where the replay says (a test shows it on trained models): the curves of
one sweep judge every candidate without training again. The step cap is not a candidate: the learning
rate decays over it, so a shorter cap changes the curve itself and cannot be replayed.

Declared before any fit curve was looked at (this file was committed while the sweep that records
them was running), and applied mechanically:

- **False stop**: a run that fitted as recorded, which the candidate stops unfitted before its
  ``steps_to_fit``.
- **Admissible**: no false stop on any run, and none either when the candidate's patience is
  :data:`MARGIN` steps shorter (same minimum drop), so that the chosen rule is not at the edge of
  the observed curves.
- **Chosen**: of the admissible candidates, the one with the least estimated training time (each run's
  recorded seconds per step times the steps it would train); ties go to the longer patience, then to
  the smaller minimum drop. The current rule is always a candidate. (Added after the replay, which found
  no admissible candidate, the current rule included, and the line before this one had wrongly assumed
  there always was one: then the current rule is kept, marked not admissible, as no replayed rule is
  safer than it.)
- The choice is by these numbers alone, never by which encoding gains or loses fitted runs: a stop
  rule decides only how soon an unfitted run is given up on, and an admissible one changes no fitted
  flag of the replayed runs.

Estimated suite wall time: the measured wall time minus the training seconds saved divided by the
number of workers (the suite's runs are scheduled longest first, so the tail is short).
Limits, written beside the table: runs the current rule stopped at a plateau end their curve there;
a candidate that does not fire within such a curve is counted at the recorded steps (``beyond``:
how many runs that is), a lower bound on its cost.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the candidate patiences (steps without a relative drop in held-out error) and minimum relative drops
PATIENCES = (200, 300, 400, 500, 600, 800, 1000)
MIN_DROPS = (0.1, 0.2, 0.3, 0.5)
#: the admissibility margin: a candidate also needs no false stop with its patience this much shorter
MARGIN = 200
OUT = ROOT / "results" / "pilots" / "stop_rules.csv"


def run_curves(folder: Path):
    """One row per run of ``folder`` that has a fit criterion: identity, recorded stop and ``curve`` (a list
    of ``(steps, accuracy)``)."""
    from pebench import store
    from pebench.store.schema import completed

    rows = store.load(folder)
    if "fit_curve" not in rows.columns:
        raise SystemExit(f"{folder} has no fit_curve column: its runs predate the fit curve; regenerate them")
    runs = rows[completed(rows)].drop_duplicates("run_id")
    runs = runs[runs["fit_curve"].notna() & (runs["fit_curve"] != "[]")].copy()
    runs["curve"] = [[(int(s), float(a)) for s, a in json.loads(c)] for c in runs["fit_curve"]]
    return runs


def replay(runs, patience: int, min_drop: float) -> dict:
    """The outcome of the plateau stop (``patience``, ``min_drop``) replayed on every run of ``runs``."""
    from pebench.learn.train import TrainConfig, replay_stop

    false_stops, changed, beyond, seconds = [], 0, 0, 0.0
    for run in runs.itertuples():
        config = TrainConfig(steps=int(run.steps), fit_every=int(run.fit_every), fit_threshold=float(run.fit_threshold),
                             stop_at_fit=True, fit_patience=patience, fit_min_drop=min_drop)
        stop = replay_stop(run.curve, config)
        steps = stop.steps_done
        if stop.stop_reason == "curve":
            steps = int(run.steps_done)
            beyond += run.stop_reason == "plateau"
        recorded_fit = bool(run.fitted)
        if recorded_fit and not stop.fitted:
            false_stops.append(f"{run.arch}/{run.task}/{run.encoding}/{run.seed}")
        changed += steps != int(run.steps_done)
        seconds += float(run.train_seconds) * steps / max(int(run.steps_done), 1)
    return {"fit_patience": patience, "fit_min_drop": min_drop, "false_stops": len(false_stops),
            "false_stop_runs": ";".join(false_stops), "runs_stopped_sooner": changed, "beyond": beyond,
            "train_seconds": seconds}


def choose(table):
    """Mark the admissible candidates and the chosen one (the module's declared rule; the ``current`` one when
    none is admissible); returns the table."""
    table = table.copy()
    margins = table.set_index(["fit_patience", "fit_min_drop"])["margin_false_stops"]
    table["admissible"] = (table["false_stops"] == 0) & (margins.to_numpy() == 0)
    ranked = table[table["admissible"]].sort_values(["train_seconds", "fit_patience", "fit_min_drop"],
                                                    ascending=[True, False, True])
    # no admissible candidate: keep the rule the runs were trained under (no replayed rule is safer)
    table["chosen"] = table.index == (ranked.index[0] if len(ranked) else table.index[table["current"]][0])
    return table


#: the standard suite's wall-time budget on 2 CPU cores (#12), which the replay's choice is judged against
SUITE_BUDGET_MINUTES = 60


def reading(path: Path = OUT) -> list:
    """The replay's reading of its rows ``path`` (blocks of :mod:`pebench.render.blocks`): per candidate rule, the
    fitted runs it would stop before their fit, the same with its patience shortened by the margin, the runs it
    stops sooner and the estimated training time and suite wall time; the declared choice last, judged against
    :data:`SUITE_BUDGET_MINUTES`."""
    import pandas as pd

    from pebench.render.blocks import table, text

    if not Path(path).exists():
        raise SystemExit(f"{path} is missing: run `python {Path(__file__).parent.name}/{Path(__file__).name}` first")
    replayed = pd.read_csv(path).sort_values(["fit_patience", "fit_min_drop"])
    rows = []
    for r in replayed.itertuples():
        mark = " **(chosen)**" if r.chosen else (" (current)" if r.current else "")
        rows.append([f"{int(r.fit_patience)}{mark}", f"{r.fit_min_drop:g}", int(r.false_stops),
                     int(r.margin_false_stops), "yes" if r.admissible else "no", int(r.runs_stopped_sooner),
                     int(r.beyond), f"{r.train_seconds:.0f}", f"{r.estimated_wall_minutes:.0f}"])
    made, chosen = replayed.iloc[0], replayed[replayed["chosen"]].iloc[0]
    current = replayed[replayed["current"]].iloc[0]
    said = (f"Replayed on the fit curves of {int(made['runs'])} runs of `{made['results']}` (made by "
            f"`{str(made['results_git_sha'])[:7]}`), whose suite took {made['measured_wall_minutes']:.0f} min "
            f"with {made['recorded_train_seconds']:.0f} worker-seconds of training in these runs. "
            + ("" if chosen.admissible else
               f"No candidate is admissible, not even the current rule: with its patience shortened by the margin it "
               f"would stop {int(chosen.margin_false_stops)} fitted runs before their fit, so the runs' own rule is "
               f"already at the edge of their curves, and it is kept. ")
            + "The declared "
              f"choice is patience {int(chosen.fit_patience)} with minimum drop {chosen.fit_min_drop:g}: "
              f"{int(chosen.runs_stopped_sooner)} runs stop sooner, none that fitted, and the suite's estimated "
              f"wall time is {chosen.estimated_wall_minutes:.0f} min (the current rule, patience "
              f"{int(current.fit_patience)} with drop {current.fit_min_drop:g}: {current.estimated_wall_minutes:.0f}"
              f" min). "
            + (f"That is within the standard suite's budget of {SUITE_BUDGET_MINUTES} minutes."
               if chosen.estimated_wall_minutes <= SUITE_BUDGET_MINUTES else
               f"That is over the standard suite's budget of {SUITE_BUDGET_MINUTES} minutes: no admissible plateau "
               f"stop brings the suite within it, so stopping sooner is not the lever that can."
               + _cheapest_within_budget(replayed)))
    return [table(["patience (steps)", "min. relative drop", "false stops", "false stops, patience shortened by the "
                   "margin", "admissible", "runs stopped sooner", "beyond the curve", "training (worker-s)",
                   "est. suite wall (min)"], rows),
            text(said)]


def _cheapest_within_budget(replayed) -> str:
    """A sentence: of the replayed rules within the budget, the one that loses the fewest fits, and how many."""
    within = replayed[replayed["estimated_wall_minutes"] <= SUITE_BUDGET_MINUTES]
    if within.empty:
        return " No replayed rule reaches it."
    best = within.sort_values(["false_stops", "estimated_wall_minutes"]).iloc[0]
    return (f" Of the replayed rules that would reach it, the one that loses the fewest fits (patience "
            f"{int(best.fit_patience)}, minimum drop {best.fit_min_drop:g}: {best.estimated_wall_minutes:.0f} min) "
            f"stops {int(best.false_stops)} of the runs that fitted before their fit.")


def main(argv=None) -> None:
    """Replay every candidate on ``--results`` and write ``--out``; or ``read``: write the replay's reading of
    its rows beside them."""
    import pandas as pd

    from pebench.render.blocks import write_blocks
    from pebench.store import read_manifest

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["read"]:
        print(f"reading -> {write_blocks(OUT.with_suffix('.json'), reading(OUT))}")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="read: write the replay's reading of its rows instead")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "archive" / "v2" / "standard")
    parser.add_argument("--experiment", default="length_extrapolation")
    parser.add_argument("--wall-minutes", type=float, required=True,
                        help="the measured wall time of the suite that made --results (results/performance/suites.csv)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    runs = run_curves(args.results)
    runs = runs[runs["experiment"] == args.experiment]
    # the replay must give back, for the rule the runs were trained under, exactly what they recorded
    current = {(int(p), float(d)) for p, d in zip(runs["fit_patience"], runs["fit_min_drop"], strict=True)}
    if len(current) != 1:
        raise SystemExit(f"the runs were trained under several plateau rules {sorted(current)}")
    patience, min_drop = current.pop()
    check = replay(runs, patience, min_drop)
    if check["runs_stopped_sooner"] or check["false_stops"]:
        raise SystemExit(f"replaying the runs' own rule does not give back their stops: {check}")
    candidates = [(p, d) for p in sorted({*PATIENCES, patience}) for d in sorted({*MIN_DROPS, min_drop})]
    # every rule once: a candidate's margin rule (patience MARGIN shorter) is often another candidate
    replayed = {rule: replay(runs, *rule) for rule in
                {*candidates, *((p - MARGIN, d) for p, d in candidates if p > MARGIN)}}
    rows = []
    for candidate_patience, candidate_drop in candidates:
        row = dict(replayed[candidate_patience, candidate_drop])
        shorter = candidate_patience - MARGIN
        row["margin_false_stops"] = replayed[shorter, candidate_drop]["false_stops"] if shorter > 0 else len(runs)
        row["current"] = (candidate_patience, candidate_drop) == (patience, min_drop)
        rows.append(row)
    table = choose(pd.DataFrame(rows))
    recorded = float(runs["train_seconds"].sum())
    table["saved_seconds"] = recorded - table["train_seconds"]
    table["estimated_wall_minutes"] = args.wall_minutes - table["saved_seconds"] / args.workers / 60
    manifest = read_manifest(args.results) or {}
    made = manifest.get("latest", {})
    table = table.assign(runs=len(runs), recorded_train_seconds=recorded, measured_wall_minutes=args.wall_minutes,
                         results=str(args.results.relative_to(ROOT)) if args.results.is_relative_to(ROOT)
                         else str(args.results), results_git_sha=made.get("git_sha", ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    chosen = table[table["chosen"]].iloc[0]
    print(table.drop(columns=["false_stop_runs"]).to_string(index=False))
    print(f"chosen: patience {chosen.fit_patience}, min drop {chosen.fit_min_drop}: estimated "
          f"{chosen.estimated_wall_minutes:.0f} min (measured {args.wall_minutes:.0f}) -> {args.out}")


if __name__ == "__main__":
    main()
