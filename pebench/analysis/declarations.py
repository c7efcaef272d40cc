"""Which report declaration (:class:`~pebench.report_spec.ReportSpec`) each experiment of a results folder has.

An experiment the caller declares (``pebench report`` and ``pebench compare`` pass the declarations of the
experiments registered in this installation, :func:`pebench.plan.experiment.registered_report_specs`) reports as
declared. One that is not (a folder downloaded on its own, an installed package without the experiment
scripts, a plugin not loaded) reports as the folder recorded it: in its manifest (``report_declarations``,
written by the runner from :func:`pebench.plan.experiment.report_declarations`), else in the ``declarations`` of its
previous ``report.json``. So ``pebench report`` and ``pebench compare`` give the same output with or without
the scripts on disk; only an experiment declared nowhere gets the default layout, and the report says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pebench import store
from pebench.metrics import LAYOUT_KEY_METRICS, RUN_METRICS
from pebench.registry import NAME_RULE, is_name
from pebench.report_spec import ReportSpec, report_spec_from_record

#: the manifest key the runner records the declarations under (:func:`pebench.plan.experiment.report_declarations`)
MANIFEST_KEY = "report_declarations"
#: the ``report.json`` key :func:`pebench.report.write.write_report` records them under
REPORT_KEY = "declarations"


def _records(source: Path, records: object) -> dict[str, ReportSpec]:
    """The declarations of one source (a manifest or a report.json), checked; ``{}`` when it has none."""
    if records is None:
        return {}
    if not isinstance(records, dict):
        raise store.ResultsError(f"{source}: its report declarations are not a JSON object; write the folder's "
                                   "report again with the experiment scripts installed (pip install -e .)")
    specs = {}
    for name, record in records.items():
        if not is_name(name):
            raise store.ResultsError(f"{source}: its report declarations name an experiment {ascii(name)[:80]}, not a "
                                     f"name ({NAME_RULE}); write the folder's report again with the experiment "
                                     "scripts installed")
        try:
            specs[str(name)] = report_spec_from_record(record)
        except (TypeError, ValueError) as exc:
            raise store.ResultsError(f"{source}: the report declaration of {name!r} is not valid ({exc}); write "
                                       "the folder's report again with the experiment scripts installed") from None
    return specs


def recorded_report_specs(folder: str | Path) -> dict[str, ReportSpec]:
    """The report declarations a results folder records: its manifest's, then (for experiments the manifest
    does not name) those of its ``report.json``, in the order they were recorded.

    Raises:
        ResultsError: a declaration there is malformed (naming the file).
    """
    folder = Path(folder)
    manifest = store.read_manifest(folder) or {}
    specs = _records(folder / "manifest.json", manifest.get(MANIFEST_KEY))
    path = folder / "report.json"
    if path.is_file() and not path.is_symlink():
        try:
            index = store.read_json(path, "report")
        except (OSError, ValueError):  # ValueError: a ResultsError too
            index = {}
        recorded = _records(path, index.get(REPORT_KEY) if isinstance(index, dict) else None)
        specs.update({name: spec for name, spec in recorded.items() if name not in specs})
    return specs


def resolve_report_specs(experiments: Iterable[str], *folders: str | Path,
                         declared: Mapping[str, ReportSpec] | None = None) -> tuple[dict[str, ReportSpec], list[str]]:
    """The report declaration of each of ``experiments``: ``declared``'s, else the first that ``folders`` record
    (:func:`recorded_report_specs`), else the default; those ``declared`` first, in its order, then the others
    as given. Also returns one note per experiment declared nowhere."""
    names = list(dict.fromkeys(experiments))
    specs = {name: spec for name, spec in (declared or {}).items() if name in names}
    recorded: dict[str, ReportSpec] = {}
    for folder in folders:
        for name, spec in recorded_report_specs(folder).items():
            recorded.setdefault(name, spec)
    notes = []
    for name in names:
        if name in specs:
            continue
        if name not in recorded:
            notes.append(f"{name}: no report declaration (the experiment is not registered here, and the folder "
                         "records none), so it is shown with the default layout")
        specs[name] = recorded.get(name, ReportSpec())
    return specs, notes


def key_metrics(spec: ReportSpec) -> tuple[str, ...]:
    """The run metrics ``pebench compare`` checks for an experiment reported as ``spec`` declares: its own
    ``key_metrics``, else its layout's (:data:`pebench.metrics.LAYOUT_KEY_METRICS`).

    Raises:
        ResultsError: the layout has no key metrics registered (a plugin's layout must add its entry).
    """
    if spec.key_metrics:
        unknown = [name for name in spec.key_metrics if name not in RUN_METRICS]
        if unknown:
            raise store.ResultsError(f"the experiment's report declaration names a key metric that is not here: "
                                     f"{RUN_METRICS.unknown_message(unknown[0])}")
        return tuple(spec.key_metrics)
    if spec.layout not in LAYOUT_KEY_METRICS:
        raise store.ResultsError(f"report layout {spec.layout!r} has no key metrics: add them to "
                                 "pebench.metrics.LAYOUT_KEY_METRICS or declare the experiment's key_metrics")
    return LAYOUT_KEY_METRICS[spec.layout]
