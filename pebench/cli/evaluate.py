"""``pebench evaluate NAME [--plugin FILE] [--suite S] [--filter K=V] [--out DIR]``: run exactly the runs the suite's
protocol gives one encoding (resumable, with the bench's calibrated estimate, on every executor), then judge them
against the suite's committed reference without rerunning it (:mod:`pebench.analysis.verdict`), into
``DIR/verdict/`` (:mod:`pebench.report.verdict`). On partial data it never ranks: it gives the per-task numbers it
has, the cells still missing and how long they will take here."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from pebench.render.tables import terminal_text

#: where a verdict's folder goes without ``--out``: ``results/local/evaluate/<suite>/<encoding>``
DEFAULT_ROOT = Path("results") / "local" / "evaluate"


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    """``pebench evaluate``'s arguments (nothing heavy imported: every command builds the parser)."""
    p = sub.add_parser(
        "evaluate", help="run one encoding under a suite's protocol and judge it against the committed reference",
        description="Run the runs the suite's protocol gives ENCODING (resumable: the same command resumes), then "
                    "write its verdict against the suite's committed reference, which is not rerun: per task, its "
                    "place on the boards with the reference's runs, its declared comparisons, harm and parameters "
                    "(docs: extending). On partial data (--no-run, a stopped sweep, --filter) it writes the "
                    "per-task numbers it has and the runs still missing, and ranks nothing. Your own encoding: "
                    "pebench evaluate NAME --plugin FILE.")
    p.add_argument("encoding", metavar="ENCODING", help="the encoding to judge (a registered name, or a plugin's)")
    p.add_argument("--plugin", action="append", default=[], dest="evaluate_plugins", metavar="PATH_OR_MODULE",
                   help="import the file or module that registers ENCODING (repeatable; as pebench --plugin)")
    p.add_argument("--suite", default="standard", help="whose protocol and reference (default: standard)")
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="only runs whose config has KEY=VALUE (repeatable); a filtered verdict is partial")
    p.add_argument("--out", help=f"results folder of its runs and verdict (default {DEFAULT_ROOT}/<suite>/<encoding>)")
    p.add_argument("--reference", metavar="RESULTS",
                   help="the reference results folder (default: the reference packaged with pebench)")
    p.add_argument("--no-run", action="store_true", help="judge the runs already in --out; make none")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    group.add_argument("--dask", metavar="ADDRESS", help="Dask scheduler address, or 'local' for a LocalCluster")
    p.add_argument("--dask-workers", type=int, default=2, help="workers of a local Dask cluster")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    p.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    p.set_defaults(func=cmd_evaluate)


def source_record(encoding: str) -> dict[str, Any]:
    """The source of ``encoding``: per registered part of its name (a wrapper's and its base's), the file that
    defines its class and that file's SHA-256; ``sha256`` the hash of those hashes (what a verdict names)."""
    import inspect

    from pebench import encodings

    files = []
    for part in dict.fromkeys(encoding.split(":")):
        if not encodings.known(part):
            continue
        path = Path(inspect.getsourcefile(encodings.ENCODINGS.get(part)) or "")
        if path.is_file():
            files.append({"encoding": part, "path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    joined = hashlib.sha256("\n".join(f["sha256"] for f in files).encode()).hexdigest() if files else None
    return {"files": files, "sha256": joined}


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Run (or resume) the encoding's runs, then write and print its verdict; return the exit status."""
    from pebench import encodings
    from pebench.cli import EXIT_FAILED_RUNS, EXIT_OK, UsageError, _output_folder, cmd_run, select_runs
    from pebench.protocol import SUITES
    from pebench.registry import load_plugins

    load_plugins(args.evaluate_plugins)  # besides pebench --plugin's, loaded before every command

    if args.suite not in SUITES:
        raise UsageError(f"unknown suite {args.suite!r}; valid: {', '.join(SUITES)}")
    encodings.meta(args.encoding)  # an unknown name fails here, with suggestions (a plugin's: pass --plugin)
    from pebench.report.layouts import figure_stem  # an encoding's name as part of a path: randomized-rope

    out = _output_folder(args.out, DEFAULT_ROOT / args.suite / figure_stem(args.encoding))
    filters = [*args.filter, f"encoding={args.encoding}"]
    specs = select_runs(args.suite, [], filters, [args.encoding])
    # the verdict expects every run the suite gives the encoding: a filtered one is partial, and ranks nothing
    expected = select_runs(args.suite, [], [f"encoding={args.encoding}"], [args.encoding]) if args.filter else specs
    if not specs:
        raise UsageError(f"the {args.suite} suite gives {args.encoding!r} no runs with these --filter options")
    status = EXIT_OK
    if not args.no_run:
        run_args = argparse.Namespace(
            suite=args.suite, experiment=[], filter=filters, encoding=[args.encoding], task=[], out=str(out),
            dask=args.dask, workers=args.workers, dask_workers=args.dask_workers, threads=args.threads,
            device=args.device, dry_run=False, share=None, seed_batch=None, compile=False, predictions=True)
        status = cmd_run(run_args)
        if status not in (EXIT_OK, EXIT_FAILED_RUNS):  # stopped by a signal: the sweep said how to resume
            return status
    elif out.exists() and not out.is_dir():
        raise UsageError(f"{out}: not a folder")
    verdict_status = judge(args, out, expected)
    return status or verdict_status


def judge(args: argparse.Namespace, out: Path, specs: list) -> int:
    """Judge the runs in ``out`` against the reference, write ``out/verdict/`` and print the verdict."""
    import contextlib
    import shutil

    import pandas as pd

    from pebench import store
    from pebench.analysis.verdict import summary, verdict
    from pebench.cli import EXIT_OK, UsageError
    from pebench.report.layouts import figure_stem
    from pebench.report.verdict import VERDICT_FOLDER, check_verdict_folder, write_verdict
    from pebench.store.predictions import inventory
    from pebench.store.reference import temporary_reference
    from pebench.store.schema import BASE_VARIANT

    expected = pd.DataFrame([{"run_id": s.run_id, "experiment": s.experiment, "arch": s.arch, "task": s.task}
                             for s in specs])
    own = store.load(out) if store.raw_files(out / "raw") else pd.DataFrame(columns=["run_id", "encoding"])
    with contextlib.ExitStack() as stack:
        folder = Path(args.reference) if args.reference else stack.enter_context(temporary_reference(args.suite))
        if not (folder / "raw").is_dir():
            raise UsageError(f"{folder}: no reference results folder (no raw/ folder in it)")
        reference = store.load(folder)
    found = verdict(own[own["run_id"].isin(set(expected["run_id"]))], reference, args.encoding, expected)
    have = set(own["run_id"]) if len(own) else set()
    eta = _eta([s for s in specs if s.run_id not in have], args) if not found.complete else None
    source = source_record(args.encoding)
    target = out / VERDICT_FOLDER
    check_verdict_folder(target)  # before its source is copied there
    sources = target / "source"
    sources.mkdir(parents=True, exist_ok=True)
    for file in source["files"]:  # the encoding's source beside its verdict: the folder is self-contained
        shutil.copyfile(file["path"], store.path_in(sources, f"{figure_stem(file['encoding'])}.py"))
    data = pd.concat([reference[reference["encoding"] != args.encoding], own], ignore_index=True, sort=False)
    mine = own[own["run_id"].isin(set(expected["run_id"]))] if len(own) else own
    base = mine[mine["variant"] == BASE_VARIANT] if "variant" in mine else mine
    kept = inventory(out, {run_id: rows.to_dict("records") for run_id, rows in base.groupby("run_id")})
    write_verdict(found, data, target, suite=args.suite, source=source, eta_seconds=eta, predictions=kept)
    for line in summary(found):
        print(terminal_text(line))
    if not found.complete:
        for row in found.missing.itertuples():
            print(terminal_text(f"  missing: {row.experiment} / {row.arch} / {row.task}: {row.runs} run(s)"))
        if eta is not None:
            print(f"  about {eta / 60:.0f} min with {args.workers} worker(s) here to make them (calibrated now)")
    print(f"verdict -> {terminal_text(str(target))} (verdict.md, verdict.json, tables, figures)")
    sys.stdout.flush()
    return EXIT_OK


def _eta(todo: list, args: argparse.Namespace) -> float | None:
    """Calibrated seconds to make the runs ``todo`` here with ``--workers`` (:mod:`pebench.plan.sweep_time`, as
    ``pebench run`` estimates); None where it cannot be measured (a device this machine lacks)."""
    from pebench.plan.sweep_time import calibrations, time_estimate

    try:
        return time_estimate(todo, args.workers, calibrations(todo, args.device, args.threads))
    except (RuntimeError, ValueError):
        return None
