"""A rerun of a suite beside its reference: what ``pebench compare`` finds, cell by cell and beyond the cells.

A rerun is a folder ``<results>/local/<suite>`` (``tox -e bench``) or ``<results>/reruns/<name>`` (a committed
rerun on other hardware) whose manifest names its suite; its reference is ``<results>/<suite>``
(:func:`reference_of`). Its report records :func:`rerun_section` in ``report.json``: texts are MyST Markdown in
which :data:`~pebench.store.report_file.FOLDER` and :data:`~pebench.store.report_file.REFERENCE` stand for the two
folders' paths.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pebench.analysis import compare as compare_module
from pebench.render.tables import markdown_text
from pebench.report.findings import timed_invocations
from pebench.report_spec import ReportSpec
from pebench.store import read_manifest
from pebench.store.report_file import FOLDER, REFERENCE, RERUN_PARENTS, raw_digest, rerun_reference


def reference_of(folder: Path) -> Path | None:
    """The reference of a rerun folder (``<results>/local/<suite>`` or ``<results>/reruns/<name>``,
    :data:`~pebench.store.report_file.RERUN_PARENTS`) when that folder exists
    (:func:`pebench.store.report_file.rerun_reference`,
    the one reader of a rerun's reference); ``None`` for another folder, a rerun without one or one behind a link."""
    folder = Path(folder).resolve()
    if folder.parent.name not in RERUN_PARENTS:
        return None
    try:
        reference = rerun_reference(folder)
    except ValueError:  # no manifest naming a suite, or a link or an odd name (ResultsError)
        return None
    return reference if reference.is_dir() and reference != folder else None


def _number(value: float, signed: bool = False) -> str:
    return "—" if not np.isfinite(value) else f"{value:+.3f}" if signed else f"{value:.3f}"


def comparison_section(comparison: compare_module.Comparison) -> dict[str, Any]:
    """``pebench compare RERUN REFERENCE`` for a page: the verdict line, how seeds are compared, the protocol
    notes, one row per cell and metric (those that do not reproduce first) and the cells on one side only."""
    table = comparison.table()
    rows = []
    if len(table):
        table = table.sort_values("reproduces", kind="stable")  # what does not reproduce first
        rows = [[row["cell"], row["metric"], _number(row["local_mean"]), _number(row["reference_mean"]),
                 _number(row["difference"], signed=True),
                 "—" if not np.isfinite(row["worst_seed_difference"]) else
                 "0 (every seed)" if row["worst_seed_difference"] == 0 else
                 f"{_number(row['worst_seed_difference'], signed=True)} (seed {int(row['worst_seed'])})",
                 row["missing_seeds"] or "—", "yes" if row["reproduces"] else "**no**"]
                for _, row in table.iterrows()]
    one_side = []
    for title, frame in (("Only in the reference", comparison.only_reference),
                         ("Only in the rerun", comparison.only_local)):
        if len(frame):
            one_side.append(f"{title}: " + ", ".join(f"`{compare_module.cell_name(row)}`"
                                                      for _, row in frame.iterrows()) + ".")
    return {
        "verdict": f"`pebench compare {FOLDER} {REFERENCE}`: **{comparison.verdict}**.",
        "method": "Seeds are compared paired (the same seed has the same data and initialisation on both sides): "
                  "a metric reproduces when the mean of the per-seed differences is within its margin, no single "
                  "seed differs by more than the per-seed margin, and every reference seed was rerun "
                  "({mod}`pebench.analysis.compare`).",
        "notes": list(comparison.notes),
        "header": ["cell", "metric", "rerun", "reference", "mean paired diff", "largest seed diff",
                   "seeds on one side", "reproduces"],
        "rows": rows,
        "one_side": one_side,
    }


def not_compared(why: str) -> dict[str, Any]:
    """:func:`comparison_section` of a rerun that is not compared with its reference, saying ``why``."""
    return {"verdict": f"`pebench compare {FOLDER} {REFERENCE}`: **not compared**: {why}.", "method": "",
            "notes": [], "header": [], "rows": [], "one_side": []}


#: what a rerun's manifest is compared with its reference's on (:func:`manifest_differences`): the name a sentence
#: gives a field, and its value in one invocation (``None``: not recorded); workers and the executor give the
#: same rows, so they are no difference
DIFFERENCES: tuple[tuple[str, Callable[[Mapping[str, Any]], object]], ...] = (
    ("device", lambda run: run.get("cuda_device") or run.get("cpu_model")
     or (f"{run['processor']} CPU" if run.get("processor") else None)),
    ("CPU kernels", lambda run: run.get("torch_cpu_capability")),
    ("torch", lambda run: run.get("torch_version")),
    ("Python", lambda run: run.get("python_version")),
    ("threads", lambda run: run.get("torch_threads")),
    ("commit", lambda run: f"{run['git_sha'][:12]}{' with uncommitted changes' if run.get('git_dirty') else ''}"
     if isinstance(run.get("git_sha"), str) else None),
)


def _values(manifest: Mapping[str, Any], value: Callable[[Mapping[str, Any]], object]) -> str:
    """The values of one field over a manifest's invocations, each once in their order ("" when none recorded)."""
    found = (value(run) for run in manifest.get("invocations") or [] if isinstance(run, Mapping))
    return ", ".join(dict.fromkeys(str(v) for v in found if v is not None))


def _joined(items: Sequence[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def manifest_differences(rerun: Mapping[str, Any] | None, reference: Mapping[str, Any] | None) -> str | None:
    """One sentence: how the invocations of a rerun's manifest differ from its reference's in each field of
    :data:`DIFFERENCES` that both record (both values named), or that they agree; ``None`` when none is."""
    compared = [(name, _values(rerun or {}, value), _values(reference or {}, value)) for name, value in DIFFERENCES]
    compared = [(name, ours, theirs) for name, ours, theirs in compared if ours and theirs]
    if not compared:
        return None
    differ = [f"{name} ({markdown_text(ours)} vs {markdown_text(theirs)})" for name, ours, theirs in compared
              if ours != theirs]  # a manifest's values, escaped: it may come from anyone
    if differ:
        return f"It differs from the reference in {_joined(differ)}; same suite, seeds and data."
    return f"It was made with the reference's {_joined([name for name, _, _ in compared])}; same suite, seeds and data."


def _counts(invocations: Sequence[Mapping[str, Any]], key: str) -> list[int]:
    """The ``key`` of each of ``invocations`` that recorded it as a count, an integer >= 0 (the manifest may come from
    anyone: any other value is no record)."""
    return [run[key] for run in invocations if type(run.get(key)) is int and run[key] >= 0]


def rerun_summary(rerun: Path, reference: Path, comparison: compare_module.Comparison, report: Path | None = None
                  ) -> list[str]:
    """What a rerun says about reproducing its reference, one sentence per point: where and how long it ran and
    what differs from the reference (the two manifests, :func:`manifest_differences`), how many cells reproduce
    (``comparison``), and the agreement beyond the cells (:func:`pebench.analysis.compare.rerun_agreement`: fit
    decisions, leaderboards; the rerun's report is in ``report``, default ``rerun``)."""
    manifest = read_manifest(rerun) or {}
    differences = manifest_differences(manifest, read_manifest(reference))
    invocations = manifest.get("invocations") or []
    latest = manifest.get("latest") or (invocations[-1] if invocations else {})
    device = latest.get("cuda_device") or latest.get("processor") or latest.get("device") or "another machine"
    timed = timed_invocations(invocations)
    seconds = sum(float(i["wall_seconds"]) for i in timed)
    # a lower bound where an invocation recorded no wall time, or stopped without recording its end
    bound = "at least " if len(timed) < len(invocations) or any("outcome" not in i for i in timed) else ""
    workers = "/".join(str(w) for w in sorted(set(_counts(invocations, "workers")) - {0})) or "?"
    recorded = _counts(invocations, "seed_batched_runs")  # since the manifest has it
    batched = f", {sum(recorded)} runs seed-batched" if len(recorded) == len(invocations) and invocations else ""
    of_sample = f"of the {comparison.sample} sample " if comparison.sample else ""
    what = f"the {comparison.sample} sample of the" if comparison.sample else "the"
    return [f"`{FOLDER}` reruns {what} `{manifest.get('suite')}` suite on {device} (torch "
            f"{latest.get('torch_version', '?')}, {len(invocations)} invocation(s) of `pebench run` with {workers} "
            f"workers{batched}, {bound}{seconds / 60:.0f} min of wall time in all).",
            *([differences] if differences else []),
            f"{comparison.n_reproduced} of {comparison.n_cells} cells {of_sample}reproduce the reference within the "
            "margins of `pebench compare`.",
            *compare_module.rerun_agreement(rerun, reference, report)]


def rerun_section(rerun: Path, reference: Path, report: Path, declared: Mapping[str, ReportSpec],
                  sample: tuple[str, Collection[str]] | None = None) -> dict[str, Any]:
    """The ``rerun`` section of a rerun's ``report.json`` (its report written into ``report``, its experiments
    ``declared`` so; compared on the reference's runs of ``sample`` when it holds a declared sample, as
    :func:`pebench.analysis.compare.compare` does): the digest of its reference's run files
    (:func:`pebench.store.report_file.raw_digest`; a page refuses a section older than its reference),
    :func:`rerun_summary` and :func:`comparison_section`."""
    try:
        comparison = compare_module.compare(rerun, reference, declared=declared, sample=sample)
    except compare_module.ProtocolMismatch as mismatch:  # e.g. a v3 rerun while the reference is still v2's
        why = mismatch.sentence(f"`{FOLDER}`", f"`{REFERENCE}`")
        return {"reference": reference.name, "reference_raw_sha256": raw_digest(reference),
                "summary": [f"Not compared with its reference: {why}."], "comparison": not_compared(why)}
    return {"reference": reference.name, "reference_raw_sha256": raw_digest(reference),
            "summary": rerun_summary(rerun, reference, comparison, report),
            "comparison": comparison_section(comparison)}
