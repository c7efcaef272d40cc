"""The ``pebench`` command.

::

    pebench [--version] [--plugin PATH_OR_MODULE ...] <command> ...   (also: python -m pebench)
    pebench list [encodings|tasks|suites|experiments|metrics]
    pebench run --suite standard [--experiment NAME ...] [--filter key=value ...]
                [--encoding NAME ...] [--task NAME ...]
                [--workers N | --dask ADDRESS] [--threads N] [--device cpu|cuda[:N]|mps] [--out DIR] [--dry-run]
    pebench report RESULTS [--out DIR]
    pebench compare LOCAL [REFERENCE | --reference SUITE]
    pebench reference --out DIR [--suite SUITE]
    pebench combine RESULTS RESULTS [...] --out DIR
    pebench snapshot RESULTS [--history DIR]
    pebench changes BEFORE AFTER [--blocks FILE]
    pebench show RESULTS [--experiment NAME ...] [--task NAME ...] [--encoding NAME ...] [--metric NAME ...]
                 [--width COLUMNS]
    pebench verify FOLDER [--sample N] [--seed S] [--device DEVICE]
    pebench evaluate ENCODING [--plugin FILE] [--suite SUITE] [--filter KEY=VALUE ...] [--out DIR] [--no-run]

``--plugin`` (repeatable, before the command) imports a ``.py`` file or a
module that registers encodings, tasks, metrics or experiments; plugins that
installed packages declare in the ``pebench.plugins`` entry-point group are
loaded automatically (:mod:`pebench.registry`).

Bad arguments (unknown names, impossible configurations, an unwritable
output folder, a malformed results folder) print one line to stderr and exit
with status 2 before anything is written. ``compare`` exits 0 when every
reference cell reproduces, 1 when some do not (also when its reader leaves
early, ``| head -1``); without a REFERENCE folder it compares with the reference
results packaged with pebench (:mod:`pebench.store.reference`), which ``reference``
writes into a new folder. A sweep stopped by Ctrl-C or SIGTERM says in one line
how many runs it saved and exits 130 or 143; one stopped by an error of its
own (a full disk) exits 2 (docs: distributed).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

try:  # Ctrl-C while the command starts (these imports take a few tenths of a second) ends it as main's handler does
    import pebench
    from pebench.protocol import SAMPLES, SUITES
    from pebench.registry import UnknownNameError, load_plugins
    from pebench.render.seed_text import describe_experiment_seeds, describe_run_seeds, describe_seeds  # noqa: F401  (used and re-exported)
    from pebench.render.tables import terminal_text
except KeyboardInterrupt:
    print("pebench: interrupted", file=sys.stderr)
    sys.exit(128 + signal.SIGINT)

if TYPE_CHECKING:
    from pebench.plan.experiment import RunSpec

# The modules a command needs (torch, pandas, the experiments) are imported by the command that needs them:
# `pebench --version`, `pebench` alone and `pebench list suites` start without torch.

EXIT_OK, EXIT_FAILED_RUNS, EXIT_USAGE = 0, 1, 2
LISTS = ("encodings", "tasks", "suites", "experiments", "metrics", "protocol")
#: the torch device types a run can train on (``meta`` and the like hold no numbers)
TRAINING_DEVICES = ("cpu", "cuda", "mps")
#: fewest columns a description gets beside the other columns of ``pebench list`` (else: below them)
MIN_DESCRIPTION = 48


class UsageError(Exception):
    """A bad command line; reported as one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's default prints usage too)
        raise UsageError(message)


def _parse_filters(filters: Sequence[str]) -> dict[str, list[str]]:
    """``key=a,b`` items as key -> values; commas inside ``[...]`` or ``{...}`` (list- and dict-valued
    keys such as ``eval_lengths=[8,16]``) do not split values."""
    parsed: dict[str, list[str]] = {}
    for item in filters:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--filter expects key=value, got {item!r}")
        values, depth, current = parsed.setdefault(key, []), 0, ""
        for char in value:
            depth += (char in "[{") - (char in "]}")
            if char == "," and depth == 0:
                values.append(current)
                current = ""
            else:
                current += char
        values.append(current)
    return parsed


def _filter_matches(text: str, value: object) -> bool:
    """Whether a --filter value (text) equals a config value, compared as that value's type: numbers as
    numbers (``lr=1e-3`` matches 0.001), booleans in any case (``true``), lists and dicts as JSON."""
    if isinstance(value, bool):
        return text.strip().lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(text) == json.loads(value)
        except ValueError:
            return False
    return text == str(value)


def select_runs(
    suite: str, experiments: Sequence[str], filters: Sequence[str], extra_encodings: Sequence[str] = (),
    extra_tasks: Sequence[str] = (),
) -> list[RunSpec]:
    """The runs of ``suite`` restricted to ``experiments`` and ``key=value`` filters, with
    ``extra_encodings`` and ``extra_tasks`` compared beside the standard ones."""
    from pebench import encodings, tasks
    from pebench.plan.experiment import load_experiments, suite_runs

    registry = load_experiments()
    for name in experiments:
        registry.get(name)
    for name in extra_encodings:
        encodings.meta(name)  # unknown names fail here, with suggestions
    for name in extra_tasks:
        tasks.TASKS.get(name)
    specs = suite_runs(suite, experiments or None, extra_encodings, extra_tasks)
    wanted = _parse_filters(filters)
    if wanted:
        resolved = [spec.resolved() for spec in specs]
        valid = sorted(resolved[0]) if resolved else []
        for key in wanted:
            if resolved and key not in resolved[0]:
                raise UsageError(f"unknown filter key {key!r}; valid: {', '.join(valid)}")
        for key, values in wanted.items():
            present = {str(flat[key]): flat[key] for flat in resolved}
            for value in values:
                if not any(_filter_matches(value, config) for config in present.values()):
                    names = sorted(present)
                    close = difflib.get_close_matches(value, names, n=3, cutoff=0.5)
                    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                    raise UsageError(f"no run of this selection has {key}={value!r}.{hint} "
                                     f"Values here: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}")
        specs = [
            spec for spec, flat in zip(specs, resolved, strict=True)
            if all(any(_filter_matches(v, flat[key]) for v in values) for key, values in wanted.items())
        ]
    return specs


def _output_folder(out: str | None, default: Path) -> Path:
    """The folder given by ``--out`` (an empty one is an error, not the default)."""
    if out is None:
        return default
    if not out.strip():
        raise UsageError(f"--out is empty; give a folder (without --out: {default})")
    return Path(out)


def _check_writable(out: Path, keep: bool = True) -> None:
    """Create ``out`` (with its parents) and a file in it, or fail with one line; permissions are not enough
    to know (``/sys``, read-only mounts, a file on the way). Unless ``keep``, the folders made for the check are
    removed again: a sweep makes them once its scheduler is reached, and one that stops first leaves none."""
    probe = out
    while not probe.exists():
        probe = probe.parent
    if probe == out and not out.is_dir():
        raise UsageError(f"output folder {out} is a file, not a folder; choose another --out")
    if not probe.is_dir():
        raise UsageError(f"output folder {out} cannot be made ({probe} is a file on its path); choose another --out")
    if not os.access(probe, os.W_OK):
        raise UsageError(f"output folder {out} is not writable (checked {probe}); choose another --out")
    if out.exists() and not os.access(out, os.W_OK):
        raise UsageError(f"output folder {out} is not writable; choose another --out")
    made = [] if keep else [folder for folder in (out, *out.parents) if folder not in (probe, *probe.parents)]
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise UsageError(f"output folder {out} is not writable ({exc.strerror or exc}); choose another --out") from None
    finally:
        for folder in made:  # innermost first; empty as made (another process may have written meanwhile: kept)
            with contextlib.suppress(OSError):
                folder.rmdir()


def _check_device(device: str | None, local: bool) -> None:
    """A --device torch knows, and (for runs on this machine) one that exists here."""
    if device is None:
        return
    import torch

    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise UsageError(f"unknown --device {device!r}; e.g. cpu, cuda, cuda:1, mps") from None
    if parsed.type not in TRAINING_DEVICES:
        raise UsageError(f"--device {device} cannot train a model; use one of cpu, cuda, cuda:N, mps")
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"--device {device} requested but CUDA is not available")
    if local:
        try:
            torch.empty(1, device=parsed)
        except (RuntimeError, AssertionError) as exc:
            raise UsageError(f"--device {device} is not available on this machine "
                             f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None


def plain(text: str) -> str:
    """``text`` as plain words on one line: reST/Markdown markup removed (````x```` -> x,
    :class:`~a.B` -> B, ``**bold**`` -> bold)."""
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    text = re.sub(r"`+([^`]+)`+", r"\1", text).replace("**", "")
    return " ".join(text.split())


def list_width() -> int:
    """Width of ``pebench list`` output: the terminal's, at least 80 columns (100 when not a terminal)."""
    return max(80, shutil.get_terminal_size((SHOW_WIDTH, 24)).columns)


def columns(header: Sequence[str], rows: Sequence[Sequence[object]], width: int | None = None) -> str:
    """``rows`` as aligned columns under ``header``; the last column (a description, in plain words) is
    wrapped at word boundaries, never cut: beside the other columns, or on indented lines below each row
    when fewer than :data:`MIN_DESCRIPTION` columns are left beside them. No line is wider than ``width``
    (the terminal's) unless a single word is."""
    width = width or list_width()
    cells = [[str(c) for c in row[:-1]] + [plain(str(row[-1]))] for row in rows]
    fixed = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(header[:-1])]
    indent = sum(fixed) + 2 * len(fixed)
    below = width - indent < MIN_DESCRIPTION

    def wrapped(text: str, room: int) -> list[str]:
        return textwrap.wrap(text, room, break_long_words=False, break_on_hyphens=False) or [""]

    def prefix(row: Sequence[str]) -> str:
        return "".join(f"{c:<{w}}  " for c, w in zip(row[:-1], fixed, strict=True))

    if below:
        lines = [prefix(header).rstrip(), f"    {header[-1]}"]
        for row in cells:
            lines += [prefix(row).rstrip(), *("    " + part for part in wrapped(row[-1], width - 4))]
        return "\n".join(lines)
    lines = []
    for row in [list(header), *cells]:
        first, *rest = wrapped(row[-1], width - indent)
        lines += [(prefix(row) + first).rstrip(), *(" " * indent + part for part in rest)]
    return "\n".join(lines)


def run_configs(suite: str) -> dict[str, list[dict[str, object]]]:
    """Per registered experiment, the configs of its runs in ``suite``
    (:meth:`~pebench.plan.experiment.Experiment.run_configs`): counts and seeds without building every run spec,
    which takes a minute for the paper suite."""
    from pebench.plan.experiment import load_experiments

    registry = load_experiments()
    if suite in SAMPLES:  # a sample of another suite's runs (pebench.plan.experiment.sample_configs)
        from pebench.plan.experiment import sample_configs

        return sample_configs({name: registry.get(name).run_configs(SAMPLES[suite]["suite"])
                               for name in registry.names()}, suite)
    return {name: registry.get(name).run_configs(suite) for name in registry.names()}


def cmd_list(args: argparse.Namespace) -> int:
    """Print registered encodings, tasks, suites, experiments or metrics, or the protocol's constants (without an
    argument: what can be listed). Each listing is printed from the cache of an earlier call with the same code,
    plugins and width where there is one (:mod:`pebench.cli.list_cache`); a call that has to compute one (without
    torch) computes and keeps them all, but the protocol's constants, which import torch and expand every suite's
    run specs, and are computed only when asked for."""
    from pebench.cli.list_cache import cached_listing
    from pebench.registry import plugin_records

    def every_listing() -> dict[str, str]:  # but the protocol's constants (2 s more): only when asked for
        wanted = dict.fromkeys([args.what, None, *(what for what in LISTS if what != "protocol")])
        return {key(what): _listing(what) for what in wanted}

    def key(what: str | None) -> str:
        return f"{what or 'overview'}-{list_width()}"  # kept per width

    print(cached_listing(key(args.what), plugin_records(), every_listing))
    return EXIT_OK


def _listing(what: str | None) -> str:
    """The text ``pebench list WHAT`` prints (``None``: what can be listed, with how many of each)."""
    from pebench import encodings, metrics, tasks
    from pebench.plan.experiment import load_experiments

    if what is None:
        counts = {"encodings": len(encodings.names()), "tasks": len(tasks.names()),
                  "suites": len(SUITES) + len(SAMPLES), "experiments": len(load_experiments().names()),
                  "metrics": len(metrics.RUN_METRICS),
                  "protocol": "constants (fit criterion, step caps, seeds, lengths)"}
        return "\n".join(["pebench list WHAT, with WHAT one of:", *(f"  {name:12s} {counts[name]}" for name in LISTS)])
    if what == "suites":
        return _suites_listing()
    if what == "experiments":
        return _experiments_listing()
    if what == "encodings":
        rows = [[name, encodings.meta(name)["kind"], encodings.meta(name)["summary"]] for name in encodings.names()]
        return columns(["encoding", "slot", "summary"], rows)
    if what == "tasks":
        rows = []
        for name in tasks.names():
            task = tasks.get(name)
            chomsky = (tasks.TASKS.meta(name).get("chomsky") or "-").replace("_", "-")
            rows.append([name, f"v{task.version}", "dependent" if task.order_dependent else "invariant", chomsky,
                         f"{task.min_length}..{task.max_length or 'any'}", task.describe()])
        return columns(["task", "ver", "order", "Chomsky class", "lengths", "definition"], rows)
    if what == "protocol":
        from pebench.render.protocol_tables import protocol_values

        return columns(["constant", "value"], [[name, plain(value)] for name, value in protocol_values().items()])
    better = {True: "higher", False: "lower", None: "-"}
    return columns(["metric", "better", "what it is"],
                   [[m.name, better[m.higher_is_better], m.description] for m in metrics.run_metrics()])


def _suites_listing() -> str:
    """``pebench list suites``: per suite, its runs and seeds."""
    rows = []
    for suite in (*SUITES, *SAMPLES):
        configs = run_configs(suite)
        seeds = {name: [config["seed"] for config in runs] for name, runs in configs.items()}
        rows.append([suite, sum(map(len, configs.values())), describe_experiment_seeds(seeds)])
    return columns(["suite", "runs", "seeds"], rows)


def _experiments_listing() -> str:
    """``pebench list experiments``: per experiment, its runs in each suite and its description."""
    from pebench.plan.experiment import load_experiments

    registry = load_experiments()
    rows = [[name, ", ".join(f"{s}={len(registry.get(name).run_configs(s))}" for s in SUITES),
             registry.get(name).description] for name in registry.names()]
    return columns(["experiment", "runs per suite", "description"], rows)


def cmd_run(args: argparse.Namespace) -> int:
    """Run (or resume) a suite, as protocol ``--protocol`` declared it where given."""
    from pebench.protocol import STANDARD_DECLARED, as_declared

    version = getattr(args, "protocol", None)
    if version is not None and (args.suite != "standard" or version not in STANDARD_DECLARED):
        raise UsageError(f"--protocol {version}: only the standard suite is declared under another protocol, as "
                         f"{', '.join(map(str, STANDARD_DECLARED))}")
    with as_declared(args.suite, version):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """:func:`cmd_run` under the protocol it expands the suite as."""
    from pebench.plan.runner import RunnerError, SweepError, SweepInterrupted, run_sweep
    from pebench.store import FolderLockError

    # the arguments first (cheap, one line each), then the runs they select
    out = _output_folder(args.out, Path("results") / "local" / args.suite)
    dask_address = None if args.dask in (None, "local") else args.dask
    _check_device(args.device, local=dask_address is None)
    if args.compile and args.seed_batch:
        raise UsageError("--compile cannot be combined with --seed-batch (seed-batched training runs eagerly)")
    specs = _selected_share(args)
    if args.dry_run:
        for spec in specs:
            print(f"{spec.run_id} {spec.experiment} {spec.task} {spec.encoding} {spec.arch} seed={spec.seed}")
        print(f"{len(specs)} runs -> {out}")
        return EXIT_OK
    _check_writable(out, keep=False)
    executor = "dask" if args.dask else ("processes" if args.workers > 1 else "serial")
    # the command that resumes: this one, unless a driver (python -m pebench.bench, tox -e bench) names itself
    resume = f"run {os.environ.get('PEBENCH_RESUME_COMMAND') or 'the same command'} again to resume"
    try:
        summary = run_sweep(
            specs, out, executor=executor, workers=args.workers, dask_address=dask_address, device=args.device,
            seed_batch=args.seed_batch, compile=args.compile, threads=args.threads,
            predictions=args.predictions,
        )
    except SweepInterrupted as stop:
        done = stop.summary
        print(f"pebench: stopped by {stop.signal_name}: {done.saved} of {done.total} runs saved in {out} "
              f"({done.done} by this sweep); {resume}", file=sys.stderr)
        return 128 + signal.Signals[stop.signal_name].value
    except SweepError as error:
        done = error.summary
        raise UsageError(f"{error} (sweep stopped: {done.saved} of {done.total} runs saved in {out}; fix this, "
                         f"then {resume})") from None
    except (RunnerError, FolderLockError) as error:
        raise UsageError(str(error)) from None
    print(
        f"{summary.total} runs: {summary.skipped} already complete, {summary.done} run now "
        f"({summary.failed} failed, {summary.diverged} diverged), {len(summary.blocked)} blocked by bad files; "
        f"{summary.seconds:.0f}s -> {out}"
    )
    return EXIT_FAILED_RUNS if summary.failed or summary.blocked else EXIT_OK


def _selected_share(args: argparse.Namespace) -> list[RunSpec]:
    """The runs ``pebench run``'s arguments select (:func:`select_runs`), narrowed to its ``--share``; one line
    and exit 2 where they select none."""
    from pebench.plan.runner import parse_share, share_runs

    try:
        share = parse_share(args.share) if args.share else None
    except ValueError as error:
        raise UsageError(f"--share: {error}") from None
    specs = select_runs(args.suite, args.experiment, args.filter, args.encoding, args.task)
    if not specs:
        raise UsageError("no runs match the given --experiment/--filter options")
    if share:
        planned, specs = len(specs), share_runs(specs, *share)
        if not specs:
            raise UsageError(f"share {args.share} holds no runs: no cell of this selection has more than "
                             f"{share[0] - 1} seeds; use at most as many shares as a cell has seeds")
        print(f"share {args.share}: {len(specs)} of the {planned} runs of this selection", file=sys.stderr)
    return specs


def declared_reports() -> dict:
    """The report declarations of the experiments registered in this installation (none where the experiment
    scripts are not installed: a folder's recorded ones then apply, :mod:`pebench.analysis.declarations`)."""
    from pebench.plan.experiment import registered_report_specs

    return registered_report_specs()


def suite_run_ids(folder: Path) -> list[str]:
    """The run ids of the suite a results folder is named after, as this installation defines it under the
    protocol its rows record (:func:`pebench.protocol.as_declared`: the committed v2 reference against v2's
    runs; none when the name is no suite's, or the experiment scripts are not installed)."""
    from pebench.plan.experiment import suite_runs
    from pebench.protocol import as_declared
    from pebench.store import first_rows
    from pebench.store.schema import recorded_protocols

    if folder.name not in (*SUITES, *SAMPLES):
        return []
    versions = recorded_protocols(first_rows(folder, ["experiment", "protocol"]))  # a row per run file
    suite = SAMPLES[folder.name]["suite"] if folder.name in SAMPLES else folder.name
    try:
        with as_declared(suite, versions.pop() if len(versions) == 1 else None):
            return [spec.run_id for spec in suite_runs(folder.name)]
    except FileNotFoundError:
        return []


#: the prefix of a report's staging folder beside its outputs (:func:`pebench.store.own_files.staging_folder`):
#: ``.report-<machine>-<pid>-<random>``
REPORT_STAGING = ".report-"


def cmd_report(args: argparse.Namespace) -> int:
    """Write summary CSVs, figures and tables of a results folder."""
    from pebench.plan.experiment import declared_sample
    from pebench.report import check_report_folders, publish_report, write_report
    from pebench.store import own_files

    results_dir = _results_dir(args)
    if not results_dir.is_dir():  # checked before the output folder, which defaults to it
        raise UsageError(f"{results_dir}: no such results folder")
    out = _output_folder(args.out, results_dir)
    raw = (results_dir / "raw").resolve()
    if out.resolve() == raw or raw in out.resolve().parents:  # a report's files among the run files it reads
        raise UsageError(f"--out {out} is (inside) the run files' folder {results_dir / 'raw'}; give the results "
                         "folder itself or another folder")
    _check_writable(out)
    check_report_folders(out)  # before the work, and again as the files are moved into place
    # Written into a staging folder beside the outputs, then moved into place file by file (os.replace):
    # a report that fails half-way (a full disk) leaves the previous outputs as they were, never a cut file.
    with own_files.staging_folder(out, REPORT_STAGING) as staging:
        report = write_report(results_dir, staging, declared=declared_reports(),
                              suite_run_ids=suite_run_ids(results_dir), sample=declared_sample(results_dir))
        published = publish_report(staging, out)
    for path in published.removed:
        print(f"removed {terminal_text(str(path))}: written by the previous report, not by this one")
    for path in published.kept:
        print(f"kept {terminal_text(str(path))}: written by the previous report, not by this one, but changed since "
              "(remove it if it is not yours)")
    for kind, artifacts in (("figure", report.figures), ("table", report.tables)):
        for artifact in artifacts:
            paths = (out / path.relative_to(staging) for path in artifact.paths.values())
            print(f"{kind:6s} {artifact.name}: {', '.join(str(p) for p in paths)}")
    for line in report.skipped:
        print(f"skipped {terminal_text(line)}")
    print("findings:")
    for finding in report.findings:
        print(f"  {terminal_text(finding)}")
    print(f"{len(report.figures)} figures, {len(report.tables)} tables -> {out}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Check whether LOCAL reproduces REFERENCE cell by cell: a folder, or else the reference packaged with
    pebench (``--reference SUITE``, default the standard suite's), extracted into a temporary folder."""
    from pebench.store import ResultsError
    from pebench.store.reference import DEFAULT_SUITE, packaged_archive, temporary_reference

    if args.reference and args.packaged:
        raise UsageError(f"two references given ({args.reference} and --reference {args.packaged}); give one")
    if args.reference:
        check_same_suite(Path(args.local), (manifest_suite(Path(args.reference)), args.reference))
        return compare_folders(args.local, args.reference)
    suite = args.packaged or DEFAULT_SUITE
    packaged_archive(suite)  # a suite that is not packaged is named as such, before any other check
    check_same_suite(Path(args.local), (suite, f"the packaged {suite} reference"))
    with temporary_reference(suite) as folder:
        try:
            return compare_folders(args.local, folder)
        except ResultsError as exc:  # name the reference as the user gave it, not by its temporary folder
            raise ResultsError(str(exc).replace(str(folder), f"the packaged {suite} reference")) from None


def manifest_suite(folder: Path) -> str | None:
    """The suite ``folder``'s manifest names (read without following a link); ``None`` without one."""
    from pebench.store import read_manifest

    if not folder.is_dir():
        return None
    return (read_manifest(folder) or {}).get("suite") or None


def check_same_suite(local: Path, reference: tuple[str | None, str]) -> None:
    """Refuse LOCAL and a reference (its suite, and how to name it) of different suites from their manifests alone,
    before a run file is read (a smoke rerun against the standard reference: no cell can agree). The line names
    only references that exist: ``results/<suite>`` where this checkout has one, or the one packaged with pebench
    (:func:`pebench.store.reference.packaged_suites`). Folders without a manifest naming their suite are left to
    :func:`pebench.analysis.compare.compare`, which reads the suites of their rows."""
    from pebench.store.reference import packaged_suites
    from pebench.store.report_file import has_results

    own, (other, name) = manifest_suite(local), reference
    if own is None or other is None or own == other:
        return
    committed = Path("results") / own
    choices = [f"pebench compare {local} {committed}"] if has_results(committed) and committed.resolve() != \
        local.resolve() else []
    choices += [f"pebench compare {local} --reference {own}"] if own in packaged_suites() else []
    hint = (f": {' or '.join(choices)}" if choices else
            f"; none of the {own} suite is committed here or packaged with pebench")
    raise UsageError(f"{local} holds the {own} suite and {name} the {other} suite; compare a rerun with the "
                     f"reference of its own suite{hint}")


def compare_folders(local: str | Path, reference: str | Path) -> int:
    """Print whether the results folder ``local`` reproduces ``reference`` cell by cell; return the exit status
    (:data:`EXIT_OK` when every reference cell reproduces)."""
    from pebench.analysis.compare import compare, rerun_agreement, summary_with_agreement
    from pebench.plan.experiment import declared_sample

    comparison = compare(local, reference, declared=declared_reports(), sample=declared_sample(Path(local)))
    status = EXIT_OK if comparison.all_reproduce else EXIT_FAILED_RUNS
    try:
        print(terminal_text(summary_with_agreement(comparison, rerun_agreement(local, reference))))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head -1` read the verdict and left: the verdict is still the exit status
        _reader_left()
    return status


def cmd_reference(args: argparse.Namespace) -> int:
    """Write the reference results packaged with pebench (manifest and run files) into a new or empty folder."""
    from pebench.store.reference import extract, packaged_archive

    if not args.out.strip():
        raise UsageError("--out is empty; give a new or empty folder")
    out = Path(args.out)
    paths = extract(packaged_archive(args.suite), out)
    print(f"{len(paths) - 1} run files and manifest.json of the packaged {args.suite} reference (pebench "
          f"{pebench.__version__}) -> {out}; next: pebench report {out}")
    return EXIT_OK


def cmd_combine(args: argparse.Namespace) -> int:
    """Combine the runs of several results folders into a new folder (none is written over)."""
    from pebench.store.combine import combine

    summary = combine(args.folders, args.out)
    taken = ", ".join(f"{n} from {folder}" for folder, n in summary.runs.items())
    shared = f"; {len(summary.shared)} run(s) in more than one folder had identical rows" if summary.shared else ""
    print(f"{summary.total} runs ({taken}{shared}) -> {summary.out}; next: pebench report {summary.out}")
    return EXIT_OK


def cmd_snapshot(args: argparse.Namespace) -> int:
    """Keep the verdicts of a results folder (its main table and boards) in a snapshot folder under --history."""
    from pebench.store.history import read_snapshot, snapshot

    path = snapshot(_results_dir(args), _output_folder(args.history, Path("results") / "history"))
    record = read_snapshot(path)
    print(terminal_text(f"{len(record['files'])} tables of {record['suite']} {record['results_version']} (protocol "
                        f"v{record['protocol']}) -> {path}; next: pebench changes {path} RESULTS"))
    return EXIT_OK


def cmd_changes(args: argparse.Namespace) -> int:
    """Print which verdicts moved from BEFORE (a snapshot) to AFTER (a results folder or a snapshot)."""
    from pebench.render.blocks import write_blocks
    from pebench.report.changes import verdict_changes

    found = verdict_changes(args.before, args.after)
    print(terminal_text(found.to_text(width=SHOW_WIDTH)))
    if args.blocks:  # with the versions compared, so that a page can tell a list made before a regeneration
        versions = {side: getattr(found, side)["results_version"] for side in ("before", "after")}
        print(f"blocks -> {write_blocks(Path(args.blocks), found.blocks(), **versions)}")
    return EXIT_OK


#: the widest line ``pebench show`` prints unless ``--width`` says otherwise (a terminal beside an editor)
SHOW_WIDTH = 100


def cmd_show(args: argparse.Namespace) -> int:
    """Print the suite's main table (the one to cite), then the results tables of a folder, narrowed to the
    tasks, encodings and metrics asked for. A folder with a current report is printed from what ``pebench report``
    wrote (:func:`pebench.render.show_tables.report_tables`: a second); one without (no report, or one older than
    its run files) has its tables computed from the run files (a minute for the reference), and says so on the
    first line, with the command that writes its report."""
    from pebench.render.show_tables import narrowed, registered_names, shown_problem, wrapped

    if args.width is not None and 0 < args.width < 40:
        raise UsageError(f"--width must be 0 (no limit) or >= 40 columns, got {args.width}")
    folder = _results_dir(args)
    tables, lead, notes = _shown_tables(folder, args.experiment)
    shown = {column: sorted({v for t in tables for v in t.rows.get(column, [])}) for column in ("task", "encoding")}
    wanted = {"task": args.task, "encoding": registered_names(args.encoding, shown["encoding"])}
    checks = [(column, names, shown[column]) for column, names in wanted.items()]
    checks.append(("metric", args.metric, sorted({m for t in tables for m in t.metrics})))
    for what, asked, names in checks:
        if problem := shown_problem(what, asked, names, folder):
            raise UsageError(problem)
    said = dict.fromkeys(note for name in wanted["encoding"] or notes for note in notes.get(name, ()))
    print(wrapped("\n\n".join([lead, *map(terminal_text, said)]), args.width or None))
    print()
    for item in tables:
        table = narrowed(item, wanted, args.metric)
        if table is not None:
            print(table.to_text(width=args.width or None))
            print()
    return EXIT_OK


def _shown_tables(folder: Path, experiments: Sequence[str]) -> tuple[list, str, dict[str, list[str]]]:
    """The tables ``pebench show`` prints of ``folder`` (:class:`~pebench.render.show_tables.ShownTable`), what it
    leads with and the notes of its encodings (encoding -> sentences: one that is one model with another): from a
    current report, its tables, main table and entries' notes; else the tables computed from the run files, led by
    why (the report is missing, older than the run files, or written by an older pebench) and what to run."""
    from pebench.render.results_text import entry_notes
    from pebench.render.show_tables import main_table_text, report_tables, shown
    from pebench.store import ResultsError
    from pebench.store.report_file import StaleReport, current_report

    try:
        index = current_report(folder)
        tables = report_tables(index, experiments, folder)
        notes = {name: entry_notes(index, "encoding", name) for name in index.get("entries", {}).get("encoding", {})}
        lead = main_table_text(folder, index) or f"(the report of {folder} names no main table; its tables follow)"
        return tables, lead, {name: said for name, said in notes.items() if said}
    except StaleReport as stale:
        why = str(stale) if (folder / "report.json").exists() else (
            f"no report of {folder} yet: pebench report {folder} writes its main table, the one to cite")
    except ResultsError:  # an experiment the folder has no runs of
        raise
    except ValueError as exc:  # a report without show's tables (an older pebench's), or not of their shape
        why = f"{exc}: run pebench report {folder}"
    from pebench.report import tables_for

    computed = [shown(table) for table in tables_for(folder, experiments, declared=declared_reports())]
    return computed, terminal_text(f"({why}; the tables below are computed now from the run files)"), {}


def _results_dir(args: argparse.Namespace) -> Path:
    """The results folder given as RESULTS or as --results (one of them, not both)."""
    if args.results_dir and args.results and Path(args.results_dir) != Path(args.results):
        raise UsageError(f"two results folders given ({args.results_dir} and --results {args.results}); give one")
    folder = args.results_dir or args.results
    if not folder:
        raise UsageError(f"{args.command}: give the results folder, e.g. pebench {args.command} results/standard")
    return Path(folder)


def _add_results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", nargs="?", metavar="RESULTS", help="results folder (containing raw/)")
    parser.add_argument("--results", help="the same, as an option")


def version_text() -> str:
    """``pebench --version``: the package version, the protocol of new runs, and the code commit of a source
    checkout (``+dirty`` when code differs from it; nothing for an installed package)."""
    from pebench.protocol import PROTOCOL
    from pebench.store.provenance import code_commit

    sha, _, dirty = code_commit().partition("+")
    where = f", commit {sha[:12]}{'+' + dirty if dirty else ''}" if sha != "unknown" else ""
    return f"pebench {pebench.__version__} (protocol {PROTOCOL}{where})"


class _Version(argparse.Action):
    """``--version``: :func:`version_text`, computed only when asked for (it runs git)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version, protocol and commit, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_text())
        parser.exit()


# the end of `pebench --help` (and of `pebench` alone); private, so that the API pages do not print its text
_EXAMPLES = """\
examples:
  pebench list encodings                      the encodings, their slots and papers
  pebench run --suite smoke                   check that everything runs (about a minute on 2 CPU cores)
  pebench run --suite standard --workers 2    rerun the reference suite into results/local/standard
                                              (Ctrl-C and the same command again resume it)
  pebench report results/local/standard       tables, figures and findings of a results folder
  pebench show results/standard --task copy   the main table, then one task's detail
  pebench compare results/local/standard results/standard
                                              which cells of a rerun reproduce the reference
                                              (without results/standard: the one packaged with pebench)
  pebench --plugin my_pe.py run --suite standard --encoding my_pe
                                              compare your own encoding with every baseline
  pebench evaluate my_pe --plugin my_pe.py    run its standard battery, then its verdict against the reference
  pebench verify results/local/standard --sample 3
                                              rerun 3 of a folder's runs: do they reproduce? (exit 1 if not)

docs: docs/quickstart.md and docs/extending.md; the site: tox -e docs, then open docs/_build/html/index.html
"""


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pebench`` command."""
    parser = _Parser(prog="pebench", description="Benchmark positional encodings of transformers.",
                     epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                        help="import a .py file or a module that registers encodings, tasks, metrics or experiments "
                             "before the command runs (repeatable); entry points in the 'pebench.plugins' group are "
                             "loaded automatically")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("list", help="list encodings, tasks, suites, experiments, metrics or the protocol's constants")
    p.add_argument("what", nargs="?", choices=LISTS, help="what to list (without it: the choices)")
    p.set_defaults(func=cmd_list)

    _add_run(sub)
    _add_folder_commands(sub)
    _add_history_commands(sub)
    _add_show(sub)
    from pebench.cli.evaluate import add_evaluate  # their own files; a command imports the rest when it runs
    from pebench.cli.verify import add_verify

    add_evaluate(sub)
    add_verify(sub)
    return parser


def _add_run(sub: argparse._SubParsersAction) -> None:
    """``pebench run``."""
    p = sub.add_parser("run", help="run or resume a suite")
    p.add_argument("--suite", required=True, choices=(*SUITES, *SAMPLES),
                   help="scale and grid: smoke (about a minute, CI), standard (the reference results), quick (a "
                        "declared sample of the standard suite's runs: does this machine reproduce the reference?), "
                        "extended (the standard protocol with the newer encodings and every algorithmic task), "
                        "paper (GPU / cluster scale), replication (published experiments replicated at laptop "
                        "scale, docs: replications); pebench list suites gives their runs and seeds")
    p.add_argument("--experiment", action="append", default=[], help="only this experiment (repeatable)")
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                   help="only runs whose config has KEY=VALUE (VALUE may be a,b,c; repeatable)")
    p.add_argument("--encoding", action="append", default=[], metavar="NAME",
                   help="also compare this encoding, under the same protocol, in every grid that compares all "
                        "the standard encodings (repeatable; e.g. one registered by a --plugin file)")
    p.add_argument("--task", action="append", default=[], metavar="NAME",
                   help="also compare this task, under the same protocol, in every grid that compares the standard "
                        "tasks (repeatable; e.g. one registered by a --plugin file)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    group.add_argument("--dask", metavar="ADDRESS", help="Dask scheduler address, or 'local' for a LocalCluster")
    p.add_argument("--dask-workers", type=int, default=2, help="workers of a local Dask cluster")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per run, on every executor (default 1: the same rows serially, with "
                        "--workers and on Dask; rows depend on it in the last digits)")
    p.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--out", help="results folder (default results/local/<suite>)")
    p.add_argument("--dry-run", action="store_true", help="list the runs without running them")
    p.add_argument("--protocol", type=int, metavar="N",
                   help="expand the suite as protocol N declared it (pebench list protocol; default: the one in "
                        "force): to make a reference under a protocol declared before it is in force")
    p.add_argument("--share", metavar="I/N",
                   help="run only share I of N: in every cell, the I-th, (I+N)-th, ... of its seeds, so that N "
                        "machines (one --share each, 1/N to N/N, same other options) split every cell's seeds; "
                        "combine their folders with pebench combine (docs: distributed)")
    p.add_argument("--seed-batch", action=argparse.BooleanOptionalAction, default=None,
                   help="train runs that differ only in seed as one batched model (default: on CUDA only)")
    p.add_argument("--compile", action="store_true",
                   help="train under torch.compile (inductor; needs a C++ compiler on CPU). Off by default: "
                        "measured slower on CPUs, compile time included (docs: performance)")
    p.add_argument("--predictions", action="store_true",
                   help="also write every evaluated example with the model's prediction, per run, to "
                        "OUT/predictions/<run id>.jsonl.gz (runs already in OUT are not made again for it)")
    p.set_defaults(func=cmd_run)


def _add_folder_commands(sub: argparse._SubParsersAction) -> None:
    """``pebench report``, ``compare``, ``reference`` and ``combine``: commands on results folders."""
    p = sub.add_parser("report", help="write summary CSVs, figures and tables of a results folder")
    _add_results_argument(p)
    p.add_argument("--out", help="output folder (default: the results folder)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="does a rerun reproduce the reference results? (exit 1 if not)")
    p.add_argument("local", help="results folder of the rerun")
    p.add_argument("reference", nargs="?",
                   help="reference results folder, e.g. results/standard (default: the reference packaged with "
                        "pebench, --reference)")
    p.add_argument("--reference", dest="packaged", metavar="SUITE",
                   help="compare with this suite's reference results packaged with pebench (default: standard)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("reference", help="write the reference results packaged with pebench into a new folder "
                                         "(then: pebench report DIR)")
    p.add_argument("--out", required=True, help="a new or empty folder")
    p.add_argument("--suite", default="standard", help="whose reference (default: standard)")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("combine", help="combine the runs of results folders (e.g. yours and the reference) into a "
                                       "new folder; a run in two folders must have identical rows")
    p.add_argument("folders", nargs="+", metavar="RESULTS", help="results folders (two or more)")
    p.add_argument("--out", required=True, help="the new folder (new, or empty; renamed into place when complete)")
    p.set_defaults(func=cmd_combine)


def _add_history_commands(sub: argparse._SubParsersAction) -> None:
    """``pebench snapshot`` and ``changes``: verdicts kept past a regeneration, and what moved."""
    p = sub.add_parser("snapshot", help="keep a results folder's verdicts (main table, boards) in a snapshot folder, "
                                        "to compare a later protocol's with (pebench changes)")
    _add_results_argument(p)
    p.add_argument("--history", help="where snapshots are kept (default results/history); the snapshot is its "
                                     "folder <suite>-<results version>")
    p.set_defaults(func=cmd_snapshot)

    p = sub.add_parser("changes", help="which verdicts (tier, ranking, harm) moved from a snapshot to a results "
                                       "folder or another snapshot")
    p.add_argument("before", metavar="BEFORE", help="a snapshot folder (pebench snapshot), e.g. "
                                                    "results/history/standard-v2-aaa7cfcc")
    p.add_argument("after", metavar="AFTER", help="a results folder with a current report, or a snapshot folder")
    p.add_argument("--blocks", metavar="FILE", help="also write the comparison as blocks (JSON) for a page, with the "
                                                    "results versions compared (the site's protocol page shows "
                                                    "results/history/standard-changes.json)")
    p.set_defaults(func=cmd_changes)


def _add_show(sub: argparse._SubParsersAction) -> None:
    """``pebench show``."""
    p = sub.add_parser("show", help="print a results folder's main table, then its tables (--task, --encoding, "
                                    "--metric narrow them)",
                       description="Print a results folder's main table, then its tables, as its report wrote them "
                                   "(pebench report): a second. Without a current report (none, or one older than "
                                   "the run files) the first line says so and what to run, and the tables are "
                                   "computed from the run files, which takes a minute for the reference.")
    _add_results_argument(p)
    p.add_argument("--experiment", action="append", default=[], help="only this experiment (repeatable)")
    p.add_argument("--task", action="append", default=[], metavar="NAME",
                   help="only the rows of this task, in the tables with one row per task (repeatable)")
    p.add_argument("--encoding", action="append", default=[], metavar="NAME",
                   help="only the rows of this encoding, as registered (none for NoPE; repeatable)")
    p.add_argument("--metric", action="append", default=[], metavar="NAME",
                   help="only this metric's column, beside the task, encoding and seeds (repeatable; pebench list "
                        "metrics names them)")
    p.add_argument("--width", type=int, default=SHOW_WIDTH, metavar="COLUMNS",
                   help=f"widest line (default {SHOW_WIDTH}); wider tables are printed in blocks of columns that "
                        "repeat the task and encoding; 0: no limit")
    p.set_defaults(func=cmd_show)


def _reader_left() -> None:
    """The reader of stdout left (``| head``): send what is left of the output to /dev/null, quietly (the
    Python docs' recipe: no traceback, no second error when the interpreter flushes stdout at exit)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _prepared(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` checked and completed before a command runs: logging, plugins loaded, worker counts >= 1."""
    if args.verbose:
        logging.getLogger("pebench").setLevel(logging.DEBUG)
    load_plugins(args.plugin)
    for option in ("workers", "dask_workers", "threads"):
        if getattr(args, option, 1) < 1:
            raise UsageError(f"--{option.replace('_', '-')} must be >= 1, got {getattr(args, option)}")
    if getattr(args, "dask", None) == "local":
        args.workers = args.dask_workers
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    logging.basicConfig(format="pebench: %(levelname)s: %(message)s", level=logging.WARNING)
    try:
        parser = make_parser()
        if not (sys.argv[1:] if argv is None else argv):  # `pebench` alone: what it can do, as a missing command
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        args = _prepared(parser.parse_args(argv))
        status = args.func(args)
        sys.stdout.flush()  # here, so that a reader who left (`| head`) is a BrokenPipeError caught below
        return status
    except UsageError as exc:
        print(f"pebench: error: {terminal_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `pebench list tasks | head`: the reader left with what it wanted
        _reader_left()
        return EXIT_OK
    except KeyboardInterrupt:  # before a sweep started (a sweep reports its own interrupt)
        again = os.environ.get("PEBENCH_RESUME_COMMAND")  # a driver's (tox -e bench): its last line says what to do
        print(f"pebench: interrupted{f'; run {again} again to resume' if again else ''}", file=sys.stderr)
        return 128 + signal.SIGINT
    except (UnknownNameError, ValueError, OSError) as exc:  # ValueError: a ResultsError too
        print(f"pebench: error: {terminal_text(str(exc).splitlines()[0])}", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:  # a value of a run file nested deeper than Python parses: no file pebench writes is
        print("pebench: error: a file of the results folder nests its data deeper than any pebench writes (it may "
              "have been crafted); move the folder's files away one by one to find it", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
