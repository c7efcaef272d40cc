"""Does T5's bucketing explain why its encoder does not fit duplicate? A fit pilot with exact buckets.

A pilot (never loaded as an experiment): ``python pilots/t5_bucket_pilot.py``
trains the standard suite's encoder T5 runs of copy and duplicate (every seed of the suite) twice, under
exactly the suite's protocol (grid, step cap, fit criterion, plateau stop): once with T5's published
bucketing (32 bidirectional buckets: distances 0-7 exact, wider buckets beyond, so 8-11 share one) and
once with :data:`EXACT_BUCKETS` buckets, which give every distance of a training sequence its own bias
(exact to 31; the longest rendered training sequence, duplicate at length 8, is 25 tokens). Only the
bucket count differs. Writes ``results/pilots/t5_buckets.csv``; ``read`` writes its reading beside it
(``t5_buckets.json``), which the pilots page shows.

Why: in the standard reference T5's encoder fitted duplicate on 0 of 3 seeds and plateaued near the
position-free floor, while every other capable encoding fitted it. An output position of encoder copy
and duplicate reads its source 9 (duplicate: also 17) positions back, a distance whose bucket it shares
with its neighbours. If the exact-bucket runs fit where the published ones do not, the bucketing is the
cause; if they fail too, it is not, and the failure lies elsewhere. The standard suite keeps T5 as
published either way: this is evidence about a failure, not a change of protocol.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

#: the encoder tasks whose source lies 9 or more positions back
TASKS = ("copy", "duplicate")
#: bidirectional buckets that make every distance up to 31 exact (64 per side, 32 of them exact)
EXACT_BUCKETS = 128
OUT = Path(__file__).resolve().parent.parent / "results" / "pilots" / "t5_buckets.csv"


def specs(suite: str = "standard") -> list:
    """The suite's encoder T5 runs of :data:`TASKS`, each as published and with exact buckets."""
    from pebench.plan.experiment import canonical_options, suite_runs
    from pebench.protocol import as_declared

    with as_declared(suite, 2):  # the reference runs it repeats were made under protocol v2
        published = [spec for spec in suite_runs(suite, ["length_extrapolation"])
                     if spec.arch == "encoder" and spec.encoding == "t5" and spec.task in TASKS]
    exact = [dataclasses.replace(spec, encoding_options=canonical_options({"num_buckets": EXACT_BUCKETS}))
             for spec in published]
    return published + exact


def pilot(spec) -> dict:
    """The fit columns of ``spec``'s training (:func:`task_pilots.pilot`) with its bucket count."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot as fit_pilot

    return {**fit_pilot(spec), "num_buckets": spec.options().get("num_buckets", 32)}


def reading(path: Path = OUT, reference: Path | None = None) -> list:
    """The pilot's reading of its rows ``path`` (blocks of :mod:`pebench.render.blocks`): per task, bucket count
    and seed, whether the encoder fitted, its held-out token accuracy at the longest training length and how it
    stopped, beside the position-free floor; with the commit that made it, and (given the frozen reference runs,
    ``reference``, default ``task_pilots.REFERENCE_RUNS``) whether its runs with the published buckets repeat
    the reference's runs of the same id."""
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import REFERENCE_RUNS, made_by, shown

    from pebench.render.blocks import table, text

    if not Path(path).exists():
        raise SystemExit(f"{path} is missing: run `python {shown(Path(__file__))}` first")
    pilots = pd.read_csv(path).sort_values(["task", "num_buckets", "seed"], kind="stable")
    rows = []
    for (task, buckets), part in pilots.groupby(["task", "num_buckets"], sort=False):
        cells = [f"{r.fit_token_acc:.3f} ({'fit' if r.fitted else r.stop_reason} @{int(r.steps_done)})"
                 for r in part.itertuples()]
        rows.append([task, str(buckets) + (" (published)" if buckets == 32 else " (exact)"),
                     f"{int(part['fitted'].sum())}/{len(part)}", "; ".join(cells),
                     f"{part['floor_token_acc'].iloc[0]:.2f}"])
    made = pilots.iloc[0]
    summary = []
    for task, part in pilots.groupby("task", sort=False):
        by = part.groupby("num_buckets").agg(fitted=("fitted", "sum"), n=("fitted", "size"),
                                             acc=("fit_token_acc", "mean"))
        if {32, by.index.max()} <= set(by.index) and by.index.max() > 32:
            published, exact = by.loc[32], by.loc[by.index.max()]
            summary.append(f"{task}: {int(exact.fitted)}/{int(exact.n)} seeds fitted with exact buckets, "
                           f"{int(published.fitted)}/{int(published.n)} with T5's (mean held-out token accuracy "
                           f"{exact.acc:.2f} against {published.acc:.2f})")
    reference = REFERENCE_RUNS if reference is None else Path(reference)
    return [table(["task", "buckets", "seeds fitted", "held-out token accuracy at length "
                   f"{int(made['train_max_len'])} per seed (how it stopped @ steps)", "position-free floor"], rows),
            text(f"Made by `{shown(Path(__file__))}` at {made_by(made)}, {len(pilots)} pilots; the step cap is "
                 f"{int(made['step_cap'])}." + (f" In short: {'; '.join(summary)}." if summary else "")
                 + _repeats_reference(pilots, reference))]


def _repeats_reference(pilots, reference: Path) -> str:
    """A sentence: how many of the pilots with T5's published buckets found their run id in ``reference`` (the
    frozen reference runs), and whether their fit (fitted, held-out token accuracy, steps) is the reference
    run's exactly; nothing without those pilots or that file."""
    import pandas as pd
    from task_pilots import reference_sha, shown

    published = pilots[pilots["num_buckets"] == 32]
    if published.empty or not reference.exists():
        return ""
    theirs = pd.read_csv(reference)
    both = published.merge(theirs, on="run_id", suffixes=("", "_ref"))
    same = sum(bool(r.fitted) == bool(r.fitted_ref) and r.fit_token_acc == r.fit_token_acc_ref
               and r.steps_done == r.steps_done_ref for r in both.itertuples())
    return (f" Of the {len(published)} pilots with T5's buckets, {len(both)} have a run in the reference made at "
            f"`{reference_sha(theirs)}` (`{shown(reference)}`), and {same} of those repeat its fit exactly "
            "(fitted, held-out accuracy, steps).")


def main(argv=None) -> None:
    """Run the pilots and write ``--out``; or ``read``: write the pilot's reading of its rows."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot_main

    pilot_main(__doc__.splitlines()[0], pilot, specs, OUT, argv, reading=reading)


if __name__ == "__main__":
    main()
