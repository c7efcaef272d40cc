"""Plateau pilot of protocol v3: the depth pilot without its plateau stop. Pre-registration: this docstring and
the constants below were committed before any of this pilot's runs was made (its manifests record the commits
that made its runs).

Why. The depth pilot (``pilots/depth_pilot.py``) read at 44966f3 (depths 2-4 complete, in-distribution fit only):
no depth meets its rule, and 77 of the 82 capable runs (sinusoidal, learned, RoPE) that did not fit were ended
by the plateau stop (no 10% drop in held-out error for 1000 steps), not by the 5000-step cap; 5 reached the
cap. The misses are mostly ``parity_check`` and ``missing_duplicate``, with held-out accuracy near 0.5 when
stopped after about 1100-2500 steps, at every depth; some runs of both tasks fitted after 1900-3300 steps.
Parity-like tasks are known to be learnt after long flat stretches of the loss (Barak et al. 2022, "Hidden
progress in deep learning: SGD learns parities near the computational limit"). The plateau stop's patience was
chosen by replaying protocol v2's recorded curves (``results/pilots/stop_rules.*``), which were capped at 2500
steps and so could not show a fit after a long plateau. The depth rule may therefore be measuring the plateau
stop, not depth. This pilot measures the depth pilot without it.

What runs (:func:`specs`): at each depth of the depth pilot, every rule run that the rule reads and that stopped
on the plateau: sinusoidal, learned and RoPE on each core task in both architectures, and the NoPE decoder on
``copy`` (the rule's copy condition). Each is re-run with its configuration unchanged except
``fit_patience = 0`` (no plateau stop): it trains until the fit criterion is met or to the 5000-step cap. The
seeds, data streams and learning-rate schedule (which depends on the cap, not on the patience) are the same, so
a re-run follows its original step for step until the point where the original stopped, and then goes on
(``read`` checks this: each re-run's fit curve must begin with its original's). The depth pilot's other runs
(fitted, or at the cap) are what they would have been without a plateau stop. The union of the two is
therefore exactly the depth pilot with no plateau stop. Only in-distribution fit is read; no
out-of-distribution number of these models exists (the evaluation lengths are the depth pilot's ID lengths).

The rule (:func:`choose`), applied to that union with the depth pilot's constants and functions unchanged
(``depth_pilot.meets_rule``, ``depth_pilot.step_caps``):

1. **Depth**: the smallest depth that meets the depth pilot's rule (sinusoidal, learned and RoPE each fit at
   least 22 of 24 core runs per architecture, and the NoPE decoder fits copy on both seeds). A depth is
   decided once its re-runs and the depth pilot's rule runs at that depth are complete; depths are read in
   increasing order. If none meets it: the depth pilot's fallback (the most fitted capable runs, the smaller
   on a tie), and the note says what it would take.
2. **Step caps**: the depth pilot's rule on the union at the chosen depth.
3. **Plateau stop of the v3 reference**: none (runs train to fit or to their cap) if any re-run fitted, since
   each such run is a fit the current stop would have missed; otherwise the v2 stop (patience 1000) stays.

Usage (from a clean checkout that holds the depth pilot's results; runs go to ``results/pilots/plateau``)::

    python pilots/plateau_pilot.py run --depths 2 3 4 5 --workers 2    # resumable, depth by depth
    python pilots/plateau_pilot.py read    # results/pilots/plateau_pilot.csv and .json, and the rule's outcome
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import depth_pilot  # noqa: E402  (the pilot this one completes: its specs, rule and constants)

ROOT = depth_pilot.ROOT
OUT = ROOT / "results" / "pilots" / "plateau"
TABLE = ROOT / "results" / "pilots" / "plateau_pilot.csv"
#: the rule's outcome as ``read`` last computed it
OUTCOME = ROOT / "results" / "pilots" / "plateau_pilot.json"
EXPERIMENT = "plateau_pilot"
#: the rule runs the depth rule reads: (encoding, arch, task); None matches any
READ_BY_RULE = tuple((encoding, None, None) for encoding in depth_pilot.CAPABLE) + (("none", "decoder", "copy"),)


def read_by_rule(encoding: str, arch: str, task: str) -> bool:
    """Whether the depth rule reads the run of ``encoding`` in ``arch`` on ``task``."""
    return any(encoding == e and a in (None, arch) and t in (None, task) for e, a, t in READ_BY_RULE)


def plateau_stopped(depth: int, runs=None):
    """The depth pilot's rule runs at ``depth`` that the rule reads and that the plateau stop ended (a frame with
    the depth pilot's run columns), or None while that depth's rule runs are not complete; ``runs``: the depth
    pilot's runs (``depth_pilot.fit_table()[0]``) when already loaded."""
    runs = depth_pilot.fit_table()[0] if runs is None else runs
    at = runs[(runs["n_layers"] == depth) & runs["encoding"].isin(depth_pilot.RULE_ENCODINGS)]
    if len(at) < len(depth_pilot.specs([depth], "rule")):
        return None
    read = at.apply(lambda r: read_by_rule(r["encoding"], r["arch"], r["task"]), axis=1)
    return at[read & ~at["fitted"] & at["stop_reason"].eq("plateau")]


def specs(depths=depth_pilot.DEPTHS) -> list:
    """The re-runs at ``depths`` (see the module doc): the depth pilot's spec of each plateau-stopped run the
    rule reads, with ``fit_patience = 0`` and this pilot's experiment name."""
    out = []
    runs = depth_pilot.fit_table()[0]
    for depth in depths:
        stopped = plateau_stopped(depth, runs)
        if stopped is None:
            raise RuntimeError(f"the depth pilot's rule runs at depth {depth} are not complete: run "
                               f"'python pilots/depth_pilot.py run --depth {depth} --encodings rule' first")
        ids = set(stopped["run_id"])
        for spec in depth_pilot.specs([depth], "rule"):
            if spec.run_id in ids:
                out.append(dataclasses.replace(spec, experiment=EXPERIMENT,
                                               train=dataclasses.replace(spec.train, fit_patience=0)))
    return out


def depth_folder(depth: int) -> Path:
    """The results folder of this pilot's re-runs at ``depth``."""
    return OUT / f"layers{depth}"


KEY = ["n_layers", "arch", "task", "encoding", "seed"]


def union():
    """The depth pilot's runs with each plateau-stopped run the rule reads replaced by its re-run where that is
    done; ``rerun`` marks the replaced rows, and ``pending`` counts, per depth, re-runs not yet done. Also
    checks that every re-run's fit curve begins with its original's (ValueError naming the runs if not)."""
    import pandas as pd

    from pebench.store import load

    runs = depth_pilot.fit_table()[0]
    folders = [depth_folder(d) for d in depth_pilot.DEPTHS if (depth_folder(d) / "raw").is_dir()]
    reruns = pd.concat([load(f) for f in folders], ignore_index=True).drop_duplicates("run_id") if folders else None
    if reruns is not None:
        reruns = reruns[reruns["experiment"] == EXPERIMENT]
        reruns = reruns.assign(fitted=reruns["fitted"].astype(str).str.lower().eq("true"))
    pending, diverged = {}, []
    for depth in depth_pilot.DEPTHS:
        stopped = plateau_stopped(depth, runs)
        if stopped is None:
            continue
        done = reruns.merge(stopped[KEY + ["fit_curve"]], on=KEY, suffixes=("", "_original")) if reruns is not None \
            else stopped.iloc[0:0]
        pending[depth] = len(stopped) - len(done)
        for row in done.itertuples():
            original, rerun = json.loads(row.fit_curve_original), json.loads(row.fit_curve)
            if rerun[:len(original)] != original:
                diverged.append(f"{row.arch} {row.task} {row.encoding} seed {row.seed} at depth {depth}")
    if diverged:
        raise ValueError("re-runs that do not follow their original runs (so the union is not the depth pilot "
                         f"without a plateau stop): {'; '.join(diverged)}")
    if reruns is None or reruns.empty:
        return runs.assign(rerun=False), pending
    kept = runs.merge(reruns[KEY], on=KEY, how="left", indicator=True)
    kept = runs[(kept["_merge"] == "left_only").to_numpy()]
    # a re-run has no fit_patience or fit_min_drop column (no plateau stop): they are empty in the union
    return pd.concat([kept.assign(rerun=False), reruns.reindex(columns=runs.columns).assign(rerun=True)],
                     ignore_index=True), pending


def choose(merged=None) -> dict:
    """The rule's outcome on :func:`union` (``merged``: its result when already computed): each depth's status,
    the chosen depth, its step caps and the plateau stop of the v3 reference (``None`` values while the depths
    the decision needs are not complete)."""
    runs, pending = union() if merged is None else merged
    status = {}
    for depth in depth_pilot.DEPTHS:
        if depth not in pending:
            status[depth] = (None, "the depth pilot's rule runs are not complete")
        elif pending[depth]:
            status[depth] = (None, f"{pending[depth]} re-runs not done")
        else:
            status[depth] = depth_pilot.meets_rule(runs, depth)
    chosen = None
    for depth in depth_pilot.DEPTHS:
        ok, _why = status[depth]
        if ok is None:
            break
        if ok:
            chosen = depth
            break
    else:  # every depth decided and none meets the rule: the depth pilot's fallback
        capable = runs[runs["encoding"].isin(depth_pilot.CAPABLE)]
        chosen = int(capable.groupby("n_layers")["fitted"].sum().sort_index(ascending=True).idxmax())
    reruns = runs[runs["rerun"]]
    decided = all(ok is not None for ok, _ in status.values())
    return {"status": status, "depth": chosen, "caps": depth_pilot.step_caps(runs, chosen) if chosen else None,
            "plateau_stop": None if not decided and not reruns["fitted"].any()
            else ("none" if reruns["fitted"].any() else "patience 1000"),
            "reruns": int(len(reruns)), "reruns_fitted": int(reruns["fitted"].sum())}


def fit_table(merged=None):
    """One row per (depth, arch, encoding) of the rule's encodings on :func:`union` (``merged``: its result when
    already computed): runs, fitted runs, re-runs and re-runs fitted, and the median and largest
    ``steps_to_fit``."""
    runs, _ = union() if merged is None else merged
    runs = runs[runs["encoding"].isin(depth_pilot.RULE_ENCODINGS)]
    return (runs.assign(refit=runs["rerun"] & runs["fitted"])
            .groupby(["n_layers", "arch", "encoding"], sort=True)
            .agg(runs=("run_id", "size"), fitted=("fitted", "sum"), reruns=("rerun", "sum"),
                 reruns_fitted=("refit", "sum"), median_steps_to_fit=("steps_to_fit", "median"),
                 max_steps_to_fit=("steps_to_fit", "max"))
            .reset_index())


def reading(table, fields: dict) -> list:
    """The pilot's reading as page blocks (:mod:`pebench.render.blocks`): per depth, architecture and rule
    encoding, runs fitted with the plateau stop (the depth pilot) and without it (this pilot's union), each
    depth's verdict, the chosen depth, the v3 plateau stop and the step caps."""
    from pebench.render.blocks import bullet_list, text
    from pebench.render.blocks import table as table_block
    from pebench.render.pilot_readings import chosen_depth_text
    from pebench.store.schema import encoding_label

    rows = []
    for (depth, arch), cells in table.groupby(["n_layers", "arch"], sort=True):
        by = {row.encoding: row for row in cells.itertuples()}
        rows.append([str(depth), arch, *(
            f"{int(by[e].fitted) - int(by[e].reruns_fitted)} → {int(by[e].fitted)} of {int(by[e].runs)}"
            if e in by else "—" for e in depth_pilot.RULE_ENCODINGS)])
    verdicts = [f"depth {depth}: {'meets' if s['meets'] else 'fails' if s['decided'] else 'not yet decided by'} the "
                f"rule ({s['why']})" for depth, s in fields["depths"].items()]
    stop = {"none": "**none**: runs train until they fit or reach their step cap, since re-runs fitted that the "
                    "stop had ended", "patience 1000": "the v2 stop (patience 1000): no re-run fitted",
            None: "not decided yet"}[fields["plateau_stop"]]
    blocks = [text(f"From `results/pilots/plateau_pilot.csv`, read by `python pilots/plateau_pilot.py read`: runs "
                   "fitted of the rule runs per depth, architecture and encoding, with the plateau stop (the depth "
                   "pilot) → without it (the depth pilot with each plateau-stopped run the rule reads replaced by "
                   f"its re-run to the 5000-step cap); {fields['reruns_fitted']} of {fields['reruns']} re-runs "
                   "made so far fitted. NoPE counts every task; the rule reads its decoder runs on `copy` only, and "
                   "only those were re-run. In-distribution only."),
              table_block(["depth", "arch", *(encoding_label(e) for e in depth_pilot.RULE_ENCODINGS)], rows),
              bullet_list(verdicts),
              text(f"{chosen_depth_text(fields['chosen_depth'], fields['depths'], ' without the plateau stop either')}"
                   f" Plateau stop of the v3 reference: {stop}.")]
    if fields["caps"]:
        blocks.append(table_block(["arch", "task", "step cap"],
                                  [[c["arch"], f"`{c['task']}`", str(c["cap"])] for c in fields["caps"]]))
    return blocks


def main(argv: list[str] | None = None) -> int:
    """``run`` the re-runs depth by depth (resumable), or ``read`` them and apply the rule."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="re-run the plateau-stopped rule runs at the given depths (resumable)")
    run.add_argument("--depths", type=int, nargs="+", choices=depth_pilot.DEPTHS, required=True)
    run.add_argument("--workers", type=int, default=2)
    sub.add_parser("read", help="write the fit table and print the rule's outcome")
    args = parser.parse_args(argv)
    from pebench.render.blocks import write_blocks

    if args.command == "run":
        from pebench.plan.runner import run_sweep

        for depth in sorted(args.depths):
            print(run_sweep(specs([depth]), depth_folder(depth), executor="processes", workers=args.workers))
        return 0
    merged = union()  # the depth pilot's run files are read once
    table = fit_table(merged)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(TABLE, index=False)
    print(table.to_string(index=False))
    outcome = choose(merged)
    status, caps = depth_pilot.outcome_record(outcome)
    fields = {"depths": status, "chosen_depth": outcome["depth"], "caps": caps,
              "plateau_stop": outcome["plateau_stop"], "reruns": outcome["reruns"],
              "reruns_fitted": outcome["reruns_fitted"]}
    write_blocks(OUTCOME, reading(table, fields), **fields)
    depth_pilot.print_outcome(status, f"chosen depth: {outcome['depth']}; plateau stop of the v3 reference: "
                              f"{outcome['plateau_stop']}; re-runs fitted: {outcome['reruns_fitted']} of "
                              f"{outcome['reruns']}", caps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
