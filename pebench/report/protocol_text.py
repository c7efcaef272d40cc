"""How the results were made, in words: each experiment's protocol sentence, the software line of the
folder's manifest, and the BibTeX entry of the results."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import pebench
from pebench import store
from pebench.render.tables import markdown_text
from pebench.store import schema


def joined_values(series: pd.Series) -> str:
    """The distinct values of ``series``, sorted and joined by ``/`` (``?`` when there is none)."""
    values = sorted(series.dropna().unique().tolist())
    return "/".join(format(v, "g") if isinstance(v, float) else str(v) for v in values) or "?"


def experiment_protocol(data: pd.DataFrame) -> str:
    """One sentence: model size, training budget and lengths, evaluation lengths, seeds."""
    completed = data[schema.completed(data)]
    source = completed if not completed.empty else data
    train_min = joined_values(data["train_min_len"]) if "train_min_len" in data else "1"
    n_examples = f"{joined_values(data['eval_n_examples'])} examples per length, " if "eval_n_examples" in data else ""
    decoding = f"{joined_values(data['eval_decoding'])} decoding, " if "eval_decoding" in data else ""
    eval_lengths = ", ".join(str(v) for v in sorted(source["eval_len"].dropna().astype(int).unique())) \
        if "eval_len" in source else "?"
    conditions = joined_values(source["condition"]) if "condition" in source else "original"
    train_max = joined_values(data["train_max_len"])
    train_lengths = train_max if train_min == train_max else f"{train_min}-{train_max}"
    steps = joined_values(data["steps"])
    if data["steps"].nunique() > 1:  # per-task budgets: name them
        per_task = data.groupby(["task", "arch"])["steps"].agg(joined_values)
        one_arch = data["arch"].nunique() == 1
        steps = ", ".join(f"{schema.task_label(task)} {n}" if one_arch else f"{schema.task_label(task)} ({arch}) {n}"
                          for (task, arch), n in per_task.items())
    return (f"{joined_values(data['arch'])}, d_model {joined_values(data['d_model'])}, "
            f"layers {joined_values(data['n_layers'])}, heads {joined_values(data['n_heads'])}; "
            f"{steps} steps of batch {joined_values(data['batch_size'])} at lr {joined_values(data['lr'])} "
            f"on input lengths {train_lengths}; evaluated at lengths {eval_lengths} "
            f"({n_examples}{decoding}conditions {conditions}); seeds {joined_values(data['seed'])}; "
            f"{data['encoding'].nunique()} encodings, tasks {schema.task_labels(sorted(data['task'].unique()))}.")


def manifest_line(results_dir: Path) -> str:
    """The provenance line of a folder's manifest (:func:`pebench.store.read_manifest`, which refuses one of
    the wrong shape in one line): the software of its latest invocation, or of each source of a combined one."""
    manifest = store.read_manifest(results_dir)
    if manifest is None:
        return "no manifest.json"
    if manifest.get("combined") and not manifest.get("latest"):  # pebench combine: say where each part came from
        return "combined from " + "; ".join(
            f"{markdown_text(source.get('folder', '?'))} ({markdown_text(source.get('runs', '?'))} runs: "
            f"{_software(source.get('manifest'))})"
            for source in manifest["combined"]["sources"])
    return _software(manifest.get("latest"))


def _software(latest: dict | None) -> str:
    """One line of software, machine and date from a manifest's ``latest`` invocation, as MyST (each value escaped:
    :func:`pebench.render.tables.markdown_text`; a manifest may come from anyone)."""
    latest = latest or {}

    def field(key: str) -> str:
        return markdown_text(latest.get(key, "?"))

    sha = markdown_text(str(latest.get("git_sha") or "?")[:10]) + (" (dirty)" if latest.get("git_dirty") else "")
    return (f"pebench {field('pebench_version')}, git {sha}, torch {field('torch_version')}, "
            f"python {field('python_version')}, device {field('device')}, {field('platform')}, {field('date')}")


def row_commits(data: pd.DataFrame) -> list[str]:
    """The code commits that made the rows (their ``commit`` column), in order of first appearance."""
    return distinct_values(data, "commit")


def distinct_values(data: pd.DataFrame, column: str) -> list[str]:
    """The values of ``column`` in the rows (e.g. the pebench versions that made them), in order of first
    appearance; empty without the column."""
    if column not in data:
        return []
    return [str(c) for c in dict.fromkeys(data[column].dropna())]


def latest_year(results_dir: Path) -> str:
    """The year of the folder's latest sweep (its manifest), or ``""`` without one."""
    try:
        manifest = store.read_manifest(results_dir) or {}
    except store.ResultsError:
        return ""
    date = str((manifest.get("latest") or {}).get("date") or "")
    return date[:4] if date[:4].isdigit() else ""


def bibtex_word(value: object) -> str:
    """``value`` (a commit or a version read from run files) as BibTeX and LaTeX that can only show it: letters,
    digits, ``.``, ``+`` and ``-`` kept, anything else (a brace, a backslash: a command in someone's paper) dropped."""
    return re.sub(r"[^A-Za-z0-9.+-]", "", str(value))


def citation_bibtex(suite: str, version: str, commits: Sequence[str], year: str = "",
                    made_with: Sequence[str] = ()) -> str:
    """A BibTeX entry for a set of results: the suite, its results version and protocol, the pebench versions
    that made its rows (``made_with``, their ``pebench_version``; default this one) and the code commits that
    made them (where the rows record them), and ``year`` (its latest sweep's)."""
    made_by = (f"; made by pebench commit {', '.join(bibtex_word(c[:12]) for c in commits)}" if commits
               else "; rows made before pebench recorded commits")
    protocol = version.split("-")[0].removeprefix("v")
    return "\n".join([
        f"@misc{{pebench_{suite}_{version.replace('-', '_')},",
        f"  title = {{pebench reference results: the {suite} suite}},",
        "  author = {{pebench developers}},",
        f"  note = {{results version {suite} {version}, protocol {protocol}{made_by}; "
        f"pebench {', '.join(bibtex_word(v) for v in made_with) or pebench.__version__}}}"
        + (f",\n  year = {{{year}}}" if year else ""),
        "}"])
