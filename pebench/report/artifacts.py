"""The files of a report: each table written as CSV, Markdown and LaTeX, each figure as SVG and PDF
(:class:`Artifact`), and the move of a finished report into its folder (:func:`publish_report`), which writes
and removes files in the report's own folders only (:func:`check_report_folders`)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pebench import store
from pebench.render.tables import Table, to_latex, to_markdown

#: the formats each figure is written in: SVG (the site shows it; any browser opens it) and PDF (for papers).
#: No PNG: a third drawing of every figure cost a third of a report's figure time, and the committed
#: results must fit the 64 MiB a GPU machine is sent. Convert the SVG where a bitmap is needed.
FIGURE_FORMATS = ("svg", "pdf")
#: the formats of a figure only a page shows (each encoding against the others, on its encoding's page): a paper
#: cites the figures of every encoding, and a PDF of each would add half the time of drawing them
PAGE_FIGURE_FORMATS = ("svg",)
TABLE_FORMATS = ("csv", "md", "tex")


@dataclass
class Artifact:
    """A written figure or table: its ``paths`` map a format (``svg``, ``tex``, ...) to a file; a table's
    ``table`` is the model it was written from (``report.json`` records the files, not the model)."""

    name: str
    title: str
    caption: str
    paths: dict[str, Path]
    table: Table | None = field(default=None, repr=False, compare=False)


def save_figure(figure, directory: Path, name: str, formats: tuple[str, ...] = FIGURE_FORMATS) -> dict[str, Path]:
    """Write the matplotlib ``figure`` as ``<name>.svg`` and ``<name>.pdf`` (``formats``) in ``directory`` (names
    checked by :func:`pebench.store.path_in`), the same bytes every time for the same figure; returns the paths by
    format."""
    import matplotlib

    paths = {}
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}  # the same bytes every time
    # PDF text as TrueType, not Type 3 (which some paper submission systems reject)
    with matplotlib.rc_context({"svg.hashsalt": "pebench", "svg.fonttype": "none", "pdf.fonttype": 42}):
        for ext in formats:
            path = store.path_in(directory, f"{name}.{ext}")
            figure.savefig(path, metadata=metadata[ext])
            paths[ext] = path
    return paths


def save_table(table: Table, directory: Path, version: str = "") -> Artifact:
    """Write ``table`` as ``<name>.csv`` (its data), ``.md`` and ``.tex``, naming the results ``version``
    (:func:`pebench.render.tables.version_line`) under it; returns the artifact, with the table as written."""
    table = dataclasses.replace(table, version=version or table.version)
    paths = {ext: store.path_in(directory, f"{table.name}.{ext}") for ext in TABLE_FORMATS}
    table.data.to_csv(paths["csv"], index=False)
    paths["md"].write_text(to_markdown(table))
    paths["tex"].write_text(to_latex(table))
    return Artifact(table.name, table.title, table.caption, paths, table)


#: the folders a report writes into under its output folder; report.json is written beside them
REPORT_FOLDERS = ("summary", "figures", "tables")


#: the field of ``report.json`` that records each file the report wrote: its path relative to the output folder ->
#: the SHA-256 of its bytes (:func:`output_digests`), so that the next report removes a file only as it was written
OUTPUTS_KEY = "outputs_sha256"

_SHA256 = re.compile(r"[0-9a-f]{64}")


def output_digests(out_dir: Path, paths: list[Path]) -> dict[str, str]:
    """The SHA-256 of each of the files ``paths`` (under ``out_dir``), by its path relative to ``out_dir``, in
    order: what ``report.json`` records in :data:`OUTPUTS_KEY`."""
    return {str(Path(path).relative_to(out_dir)): hashlib.sha256(Path(path).read_bytes()).hexdigest()
            for path in sorted(paths)}


def recorded_outputs(out_dir: Path) -> dict[Path, str]:
    """The files the report in ``out_dir`` recorded writing in its ``report.json`` (:data:`OUTPUTS_KEY`), each with
    the SHA-256 of the bytes it wrote, by path relative to ``out_dir``. The folder may come from anyone: only
    relative paths inside :data:`REPORT_FOLDERS` without ``..`` with a SHA-256 count; empty when there is no
    readable ``report.json`` (or it predates the record: its files are then never removed)."""
    try:
        index = store.read_json(Path(out_dir) / "report.json", "report")  # never through a link
    except (OSError, ValueError):  # ValueError: a ResultsError too
        return {}
    listed = index.get(OUTPUTS_KEY) if isinstance(index, dict) else None
    recorded = {}
    for text, digest in (listed.items() if isinstance(listed, dict) else []):
        path = Path(text)
        if (isinstance(digest, str) and _SHA256.fullmatch(digest) and not path.is_absolute() and len(path.parts) > 1
                and path.parts[0] in REPORT_FOLDERS and not {"..", "."} & set(path.parts)):
            recorded[path] = digest
    return recorded


def check_report_folders(out_dir: Path) -> None:
    """Refuse an output folder whose report folders or ``report.json`` are symbolic links or of the wrong kind:
    a report writes and removes files in folders of its own only, never through a link out of the folder.

    Raises:
        ResultsError: naming the link and what to do, on one line.
    """
    for name in (*REPORT_FOLDERS, "report.json"):
        path = Path(out_dir) / name
        if path.is_symlink():
            raise store.ResultsError(f"{path} is a symbolic link; a report writes only into folders of its own: "
                                       "remove the link or choose another --out")
        if path.exists() and path.is_dir() != (name in REPORT_FOLDERS):
            kind = "a file" if name in REPORT_FOLDERS else "a folder"
            raise store.ResultsError(f"{path} is {kind}, where the report writes its {name}: move it away or "
                                       "choose another --out")


@dataclass
class Publication:
    """What :func:`publish_report` did to the previous report's files that the new one no longer writes."""

    removed: list[Path]  # as the previous report wrote them: removed
    kept: list[Path]  # changed since it wrote them (or replaced): left where they are


def publish_report(staging: Path, out_dir: Path) -> Publication:
    """Move the report written into ``staging`` (by :func:`~pebench.report.write.write_report`) into ``out_dir``
    file by file (``os.replace``), then remove the files the previous report there recorded writing (its
    ``report.json``, :func:`recorded_outputs`) that this one did not write (a table of a layout since changed
    would be read as current), each only if its bytes are still those the previous report recorded. Nothing else
    is ever removed: a user's own files in the report's folders stay, a recorded file changed since is kept (and
    listed), and a symbolic link is neither followed nor removed.

    Raises:
        ResultsError: a report folder of ``out_dir`` is a symbolic link (:func:`check_report_folders`).
    """
    staging, out_dir = Path(staging), Path(out_dir)
    check_report_folders(out_dir)
    previous = recorded_outputs(out_dir)
    written = {path.relative_to(staging) for path in staging.rglob("*") if path.is_file()}
    for relative in sorted(written):
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / relative, target)
    done = Publication(removed=[], kept=[])
    for relative in sorted(set(previous) - written):
        path = out_dir / relative
        folders = [out_dir / Path(*relative.parts[:k]) for k in range(1, len(relative.parts))]
        if any(folder.is_symlink() or not folder.is_dir() for folder in folders):
            continue  # a link or a file on the way: not where the previous report wrote
        if path.is_symlink() or not path.is_file():
            continue  # a report writes plain files only
        if hashlib.sha256(path.read_bytes()).hexdigest() != previous[relative]:
            done.kept.append(path)
            continue
        path.unlink()
        done.removed.append(path)
    return done
