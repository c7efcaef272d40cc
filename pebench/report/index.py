"""What ``report.json`` holds beside the artifacts: every number and sentence a results page shows
(:mod:`pebench.report.findings`, :mod:`pebench.report.fit`, :mod:`pebench.report.reruns`), the report
declarations the folder was reported with (:mod:`pebench.analysis.declarations`) and the digest of the run files
(:mod:`pebench.store.report_file`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pebench.render.tables import Table
from pebench.report import findings as findings_module
from pebench.report import fit, reruns
from pebench.report.entries import entries
from pebench.report_spec import ReportSpec
from pebench.store import read_manifest
from pebench.store.report_file import DIGEST_KEY, count_runs, raw_digest


def sections(results_dir: Path, out_dir: Path, data: pd.DataFrame, findings: Sequence[str], tables: Sequence[Table],
             specs: Mapping[str, ReportSpec], suite_run_ids: Collection[str],
             emphasis: Mapping[str, str] | None = None, sample: tuple[str, Collection[str]] | None = None,
             notes: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """The sections of ``report.json`` after the artifacts, for the report of ``results_dir`` (raw rows ``data``)
    written into ``out_dir`` (its summaries and ``tables``, the models of the tables it wrote, already there; its
    suite defined as ``suite_run_ids``): see the module docstring. A rerun folder with its reference beside it
    (:func:`pebench.report.reruns.reference_of`) also gets ``rerun``. ``emphasis``: the figures that emphasise one
    encoding, by name (:func:`pebench.report.entries.entries`); ``sample``: the declared sample of the reference's
    suite a rerun holds (:func:`pebench.report.reruns.rerun_section`); ``notes``: encoding -> sentences its entry
    carries (those that are one model with another, :func:`pebench.report.overview.identical_notes`)."""
    cells = pd.read_csv(out_dir / "summary" / "cells.csv", usecols=["experiment", "task", "encoding", "arch"])
    index: dict[str, Any] = {
        DIGEST_KEY: raw_digest(results_dir),
        "declarations": {name: dataclasses.asdict(spec) for name, spec in specs.items()},
        "completeness": findings_module.completeness(results_dir, suite_run_ids),
        "complete": findings_module.complete(results_dir, suite_run_ids),
        "provenance": findings_module.provenance(read_manifest(results_dir), count_runs(results_dir),
                                                 findings_module.training_time(data)),
        "headline": findings_module.headline(findings, specs),
        "interval_edges": findings_module.leaderboard_edges(out_dir / "tables"),
        "fit_table": fit.fit_table(out_dir),
        "floors_table": fit.floors_table(out_dir, raw=results_dir),
        "fit_resolution": fit.fit_resolution(data),
        "entries": entries(out_dir, cells, tables, emphasis, notes),
    }
    reference = reruns.reference_of(results_dir)
    if reference is not None:
        index["rerun"] = reruns.rerun_section(results_dir, reference, out_dir, specs, sample)
    return index
