"""Is T5's encoder miss on duplicate a matter of learning rate, warmup or stopping? A fit pilot.

A pilot (never loaded as an experiment): ``python pilots/t5_duplicate_pilot.py``
trains the standard suite's encoder T5 runs of duplicate (every seed of the suite) under exactly the suite's
protocol (grid, fit criterion, published buckets, seed) with one change per variant (:data:`VARIANTS`):

- ``lr_1e-3``: a third of the suite's peak learning rate (3e-3);
- ``warmup_500``: warmup over 500 steps instead of 100;
- ``no_plateau``: the plateau stop off and the step cap doubled to 5000, so a run that sits on the floor and
  then fits late (the suite's fit curves show such sudden fits) is not stopped.

Writes ``results/pilots/t5_duplicate.csv``; ``read`` writes its reading beside it (``t5_duplicate.json``), which
the pilots page shows.

Why: the issue asks that where a capable encoding does not fit, learning rate, warmup and init be investigated
before publishing. In the standard reference encoder T5 stops on duplicate at the plateau on the position-free
floor (0.24-0.30 at step 1100, all 3 seeds); the bucket pilot (``t5_bucket_pilot.py``) fitted 1 of 3 seeds with
exact buckets, and the step-cap pilot (``cap_pilot.py``) shows the same plateau at step 1100 under a doubled cap.
T5's initialisation is not varied here: its bias table starts at HF's N(0, 1/D) (pebench.encodings.t5), a
bias of about 0.1 against logits of order 1, so the model starts from content attention like every other
additive-bias encoding, and no published variant initialises it otherwise.

Declared before any of its runs was made (this file's first commit), with its reading:

- a variant that fits **2 or 3 of 3 seeds** locates the miss in that part of the optimisation; the suite's
  protocol still stays the same for every encoding (a per-encoding learning rate is not a fair comparison),
  and the page says that T5's miss there is one of optimisation under the shared protocol;
- if **no variant fits more than 1 seed**, learning rate, warmup and stopping do not explain the miss, and with
  the bucket pilot's evidence the page attributes it to T5's published bucketing at these lengths.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

#: variant name -> changes to the run's training configuration
VARIANTS = {
    "lr_1e-3": {"lr": 1e-3},
    "warmup_500": {"warmup_steps": 500},
    "no_plateau": {"fit_patience": 0, "steps": 5000},
}
OUT = Path(__file__).resolve().parent.parent / "results" / "pilots" / "t5_duplicate.csv"


def specs(suite: str = "standard") -> list[tuple[str, object]]:
    """``(variant, spec)``: the suite's encoder T5 runs of duplicate, once per variant of :data:`VARIANTS`."""
    from pebench.plan.experiment import suite_runs
    from pebench.protocol import as_declared

    with as_declared(suite, 2):  # the reference runs it repeats were made under protocol v2
        published = [spec for spec in suite_runs(suite, ["length_extrapolation"])
                     if spec.arch == "encoder" and spec.encoding == "t5" and spec.task == "duplicate"]
    if not published:
        raise SystemExit(f"the {suite} suite has no encoder T5 run of duplicate")
    return [(name, dataclasses.replace(spec, train=dataclasses.replace(spec.train, **changes)))
            for name, changes in VARIANTS.items() for spec in published]


def pilot(item) -> dict:
    """The fit columns of one variant's training (:func:`task_pilots.pilot`), with the variant's settings."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot as fit_pilot

    variant, spec = item
    return {**fit_pilot(spec), "variant": variant, "lr": spec.train.lr, "warmup_steps": spec.train.warmup_steps,
            "fit_patience": spec.train.fit_patience}


def reading(path: Path = OUT) -> list:
    """The pilot's reading of its rows ``path`` (blocks of :mod:`pebench.render.blocks`): per variant (learning
    rate, warmup, no plateau stop), the seeds fitted and each seed's held-out token accuracy and stop; its declared
    reading (a variant that fits 2 of 3 seeds locates the miss; none fitting more than 1 leaves it unexplained by
    them), then how many seeds of each variant ended above the position-free floor."""
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import made_by, shown

    from pebench.render.blocks import table, text

    if not Path(path).exists():
        raise SystemExit(f"{path} is missing: run `python {shown(Path(__file__))}` first")
    pilots = pd.read_csv(path)
    rows, located, above = [], [], []
    for variant, part in pilots.groupby("variant", sort=False):
        part = part.sort_values("seed")
        fitted = int(part["fitted"].astype(bool).sum())
        cells = [f"{r.fit_token_acc:.3f} ({'fit' if bool(r.fitted) else r.stop_reason} @{int(r.steps_done)})"
                 for r in part.itertuples()]
        first = part.iloc[0]
        rows.append([f"`{variant}`", f"{first['lr']:g}", str(int(first["warmup_steps"])),
                     str(int(first["fit_patience"])) if int(first["fit_patience"]) else "off",
                     str(int(first["step_cap"])), f"{fitted}/{len(part)}", "; ".join(cells)])
        if fitted >= 2:
            located.append(f"`{variant}`")
        lifted = part[part["fit_token_acc"] > part["floor_token_acc"]]
        if len(lifted):
            above.append(f"`{variant}` {len(lifted)} of {len(part)} (held-out token accuracy "
                         f"{lifted['fit_token_acc'].min():.2f}-{lifted['fit_token_acc'].max():.2f} at step "
                         f"{int(lifted['steps_done'].max())})")
    made = pilots.iloc[0]
    if located:
        said = (f"By the declared reading, the miss lies in the optimisation that {', '.join(located)} changes: "
                "it fits 2 or more of the seeds there.")
    else:
        said = ("By the declared reading, learning rate, warmup and stopping do not explain the miss: no variant "
                "fits more than 1 seed.")
    if above:
        said += (" Beyond the reading, the seeds that ended above the position-free floor "
                 f"({made['floor_token_acc']:.2f}): {'; '.join(above)}; every other run stopped on or below it.")
    unstopped = pilots[pilots["fit_patience"] == 0]
    if len(unstopped) and not unstopped["fitted"].astype(bool).any() \
            and (unstopped["fit_token_acc"] > unstopped["floor_token_acc"]).any():
        cap = int(unstopped["step_cap"].max())
        said += (" So the plateau stop ends runs that would still rise from the floor, the limit the replay "
                 f"below finds for fitted runs too; yet without it none fitted within {cap} steps.")
    return [table(["variant", "peak lr", "warmup", "plateau patience", "step cap", "seeds fitted",
                   "held-out token accuracy per seed (how it stopped @ steps)"], rows),
            text(f"Made by `{shown(Path(__file__))}` at {made_by(made)}, {len(pilots)} pilots of encoder T5 on "
                 f"duplicate at training length {int(made['train_max_len'])}. {said}")]


def main(argv=None) -> None:
    """Run the pilots and write ``--out``; or ``read``: write the pilot's reading of its rows."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot_main

    pilot_main(__doc__.splitlines()[0], pilot, specs, OUT, argv, reading=reading)


if __name__ == "__main__":
    main()
