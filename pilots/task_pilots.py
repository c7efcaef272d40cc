"""In-distribution fit pilots of tasks at standard scale: does RoPE fit a task, does NoPE?

A pilot (never loaded as an experiment): ``python pilots/task_pilots.py``
trains, for each task, a RoPE and a NoPE model in every architecture the task is defined for,
seed 0, under exactly the protocol of the suite's run (its grid, step cap, fit criterion and
plateau stop), and records whether and when each fitted its training distribution, beside the
position-free floor at the longest training length. No evaluation beyond the fit check is done.

These pilots are how the step caps are set from evidence (docs: protocol): a task that RoPE does
not fit within the cap is one the suite cannot judge. The default task list is the tasks that the
task-battery issue added (DeepMind's Chomsky-hierarchy tasks pebench lacked, CoPE's counting,
selective copy, flip-flop and passkey retrieval). Writes ``results/pilots/task_fit.csv``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

#: the tasks added by the task-battery issue (their pilots are its note)
NEW_TASKS = (
    "cycle_navigation", "stack_manipulation", "modular_arithmetic", "modular_arithmetic_brackets",
    "solve_equation", "binary_addition", "binary_multiplication", "compute_sqrt", "duplicate_string",
    "counting", "selective_copy", "flip_flop", "passkey",
)
ENCODINGS = ("rope", "none")
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "task_fit.csv"
#: the reference the fit pilots were read against, frozen when the reference was regenerated under another
#: protocol (:func:`freeze_reference`): the pilots' pages compare with these runs, not with today's reference
REFERENCE_RUNS = ROOT / "results" / "pilots" / "reference_runs.csv"
#: the columns of :data:`REFERENCE_RUNS`: a run's cell, its cap and how its training stopped
REFERENCE_COLUMNS = ("run_id", "experiment", "arch", "task", "encoding", "seed", "steps", "fitted", "steps_to_fit",
                     "fit_token_acc", "stop_reason", "steps_done", "train_seconds")


def pilot(spec) -> dict:
    """Train ``spec`` to its fit criterion (no evaluation); the fit columns of its row."""
    import torch

    from pebench import tasks
    from pebench.learn.train import train
    from pebench.plan import runner

    torch.set_num_threads(1)
    task = tasks.get(spec.task)
    model = runner.model_for(spec)
    result = train(model, task, spec.train, device=torch.device("cpu"))
    floor = tasks.position_free_floor(task, spec.train.train_max_len, spec.arch)
    row = {"suite": spec.suite, "task": spec.task, "arch": spec.arch, "encoding": spec.encoding, "seed": spec.seed,
           "run_id": spec.run_id, "train_max_len": spec.train.train_max_len, "step_cap": spec.train.steps,
           "fitted": result.fitted, "steps_to_fit": result.steps_to_fit, "fit_token_acc": result.fit_token_acc,
           "stop_reason": result.stop_reason, "steps_done": result.steps_done,
           "train_seconds": round(result.seconds, 1), "floor_token_acc": floor.token_acc,
           "fit_curve": json.dumps(result.fit_curve)}
    print(f"{spec.task:28s} {spec.arch:8s} {spec.encoding:5s} fitted={result.fitted!s:5s} "
          f"acc={result.fit_token_acc:.3f} floor={floor.token_acc:.3f} steps={result.steps_done}", flush=True)
    return row


def main(argv=None) -> None:
    """Run the pilots of ``--tasks`` (default :data:`NEW_TASKS`) and write ``--out``."""

    from pebench.plan.experiment import suite_runs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", nargs="*", default=["extended", "standard"],
                        help="suites whose runs are piloted, the first that holds a task wins (default: extended, "
                             "then standard for the tasks of its core battery)")
    parser.add_argument("--tasks", nargs="*", default=list(NEW_TASKS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--freeze-reference", type=Path, nargs="?", const=ROOT / "results" / "standard",
                        metavar="RESULTS", help="instead of piloting, write the runs of RESULTS (default: the "
                        f"standard reference) to {REFERENCE_RUNS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.freeze_reference is not None:
        return freeze_reference(args.freeze_reference)
    specs = []
    for suite in args.suites:
        done = {spec.task for spec in specs}
        specs += [spec for spec in suite_runs(suite, ["length_extrapolation"])
                  if spec.task in args.tasks and spec.task not in done and spec.encoding in ENCODINGS
                  and spec.seed == 0]
    missing = set(args.tasks) - {spec.task for spec in specs}
    if missing:
        raise SystemExit(f"not in the length experiment of {', '.join(args.suites)}: {', '.join(sorted(missing))}")
    run_pilots(pilot, specs, args.workers, args.out)


def freeze_reference(reference: Path, out: Path = REFERENCE_RUNS) -> None:
    """Write the first raw row's :data:`REFERENCE_COLUMNS` of every run of ``reference``'s length experiment to
    ``out``, with the commit the reference's latest invocation was made by (``reference_git_sha``), so that
    the pilots read against it keep their comparison once the reference is regenerated."""
    import json

    from pebench.store import load

    raw = load(Path(reference) / "raw")
    runs = raw[raw["experiment"] == "length_extrapolation"].drop_duplicates("run_id")
    latest = json.loads((Path(reference) / "manifest.json").read_text())["latest"]
    frame = runs[list(REFERENCE_COLUMNS)].sort_values(["arch", "task", "encoding", "seed"], kind="stable")
    frame = frame.assign(fitted=frame["fitted"].astype(bool), reference_git_sha=latest["git_sha"],
                         reference_git_dirty=latest["git_dirty"])
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    print(f"{len(frame)} runs of {reference} -> {out}")


def reference_runs(path: Path = REFERENCE_RUNS):
    """The frozen reference runs (:func:`freeze_reference`), one row per run."""
    import pandas as pd

    if not Path(path).exists():
        raise SystemExit(f"{path} is missing: run `python pilots/task_pilots.py --freeze-reference`")
    runs = pd.read_csv(path)
    runs["fitted"] = runs["fitted"].astype(bool)
    return runs.astype({"seed": int, "steps_done": int, "steps": int})


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (as a reader would type it), else absolute."""
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def made_by(row) -> str:
    """How a pilot's rows name the code that made them: ``commit `abc1234` (clean)`` (``git_sha``, ``git_dirty``)."""
    state = "clean" if not bool(row["git_dirty"]) else "uncommitted changes"
    return f"commit `{str(row['git_sha'])[:7]}` ({state})"


def reference_sha(runs) -> str:
    """The short commit of the frozen reference ``runs`` (:func:`freeze_reference`), or "unknown"."""
    if "reference_git_sha" not in runs.columns or runs.empty:
        return "unknown"
    return str(runs["reference_git_sha"].iloc[0])[:7]


def reading_path(out: Path) -> Path:
    """Where a pilot's reading of its rows ``out`` is written: beside them, as JSON (the site renders it)."""
    return Path(out).with_suffix(".json")


def write_reading(blocks: list, out: Path) -> None:
    """Write a pilot's reading (blocks of :mod:`pebench.render.blocks`) to ``out`` and say where."""
    from pebench.render.blocks import write_blocks

    print(f"reading -> {write_blocks(out, blocks)}")


def pilot_main(description: str, function, make_specs, out: Path, argv=None, reading=None) -> None:
    """The command line of a fit pilot script: ``--workers`` and ``--out`` (default ``out``), then
    :func:`run_pilots` of ``function`` over ``make_specs()``; or ``read``: write ``reading(out)`` (the pilot's
    reading of its rows ``out``) beside them (:func:`reading_path`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if reading is not None and argv[:1] == ["read"]:
        return write_reading(reading(out), reading_path(out))
    parser = argparse.ArgumentParser(description=description, epilog=f"read: write the pilot's reading of {shown(out)} "
                                     f"to {shown(reading_path(out))} instead" if reading is not None else None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args(argv)
    run_pilots(function, make_specs(), args.workers, args.out)


def run_pilots(function, specs, workers: int, out: Path) -> None:
    """``function`` of every spec on a pool of ``workers`` spawned processes; the rows, each with the git state
    the pilots were started at (which made them), written to ``out`` after every finished run (in the specs'
    order), so that a pilot stopped part way keeps what it made. Rows already in ``out`` from the same clean
    commit are kept and their runs not made again (a resumed pilot); rows of any other code are replaced."""
    import pandas as pd

    from pebench.store import git_state

    code = git_state()
    flat = {key: value for key, value in code.items() if not isinstance(value, list)}
    done = resumable_rows(out, flat)
    made = set(done["run_id"]) if "run_id" in done else set()
    todo = [spec for spec in specs if getattr(spec, "run_id", None) not in made]
    print(f"{len(specs) - len(todo)} of {len(specs)} pilots already in {shown(out)}; {len(todo)} to run", flush=True)
    start = time.perf_counter()
    rows = done.to_dict("records")
    order = {getattr(spec, "run_id", index): index for index, spec in enumerate(specs)}
    out.parent.mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for row in pool.imap_unordered(function, todo, chunksize=1):
            rows.append({**row, **flat})
            frame = pd.DataFrame(rows)
            if "run_id" in frame:  # in the specs' order (a pilot's rows name their run)
                frame = frame.sort_values("run_id", key=lambda ids: ids.map(order))
            temporary = out.with_name(out.name + ".part")
            frame.to_csv(temporary, index=False)
            temporary.replace(out)
    print(f"{len(todo)} pilots in {time.perf_counter() - start:.0f} s -> {shown(out)}")


def resumable_rows(out: Path, code: dict):
    """The rows of ``out`` a resumed pilot keeps: those made by the same clean commit as ``code`` (none if
    ``out`` is missing, or was made by other or uncommitted code)."""
    import pandas as pd

    if not out.exists() or code.get("git_dirty"):
        return pd.DataFrame()
    frame = pd.read_csv(out)
    if "git_sha" not in frame or "git_dirty" not in frame:
        return pd.DataFrame()
    return frame[(frame["git_sha"] == code.get("git_sha")) & ~frame["git_dirty"].astype(bool)]

if __name__ == "__main__":
    main()
