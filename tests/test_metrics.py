"""The metric registry is the only source of metric metadata; reports follow the experiments' declarations."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_results import write_synthetic_results

from pebench import encodings, metrics, report, store, tasks
from pebench.analysis import results
from pebench.plan.experiment import EXPERIMENTS, load_experiments, report_spec, suite_runs
from pebench.report_spec import ReportSpec
from pebench.store.schema import BASE_VARIANT

ROOT = Path(__file__).resolve().parent.parent
ANALYSIS = ("store/__init__.py", "analysis/results.py", "analysis/compare.py", "metrics.py")  # schema.py declares
#: the report package: every module of it (its figures, plots.py, among them)
ANALYSIS_PACKAGES = ("report",)


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory) -> pd.DataFrame:
    return store.load(write_synthetic_results(tmp_path_factory.mktemp("synthetic")))


def test_every_metric_has_complete_metadata():
    for metric in metrics.run_metrics() + metrics.length_metrics():
        assert metric.label and metric.axis_label and metric.description, metric.name
        assert metric.format in metrics.FORMATS and metric.applies_to in metrics.APPLIES_TO
        assert metric.higher_is_better in (True, False, None)
        if metric.reference is not None:
            assert metric.reference in metrics.RUN_METRICS or metric.reference == "chance_token_acc"


def test_summaries_take_directions_from_the_registry(tiny_results):
    runs = results.run_metrics(tiny_results)
    cells = results.aggregate(runs)
    for name, higher in metrics.directions().items():
        assert name in runs.columns and f"{name}_mean" in cells.columns
        if higher is None:  # no direction: no best-of-seeds
            assert cells[f"{name}_best"].isna().all(), name
    # extrapolation_ratio has one direction everywhere: best of seeds is the largest ratio
    finite = cells.dropna(subset=["extrapolation_ratio_best"])
    assert (finite["extrapolation_ratio_best"] >= finite["extrapolation_ratio_mean"] - 1e-12).all()


def test_a_plugin_metric_is_computed_and_aggregated(tiny_results):
    name = "test_ood_minus_id"
    try:
        @metrics.register_metric(name, label="OOD − ID", higher_is_better=True)
        def ood_minus_id(runs: pd.DataFrame) -> pd.Series:
            """OOD minus ID token accuracy."""
            return runs["ood_token_acc"] - runs["id_token_acc"]

        runs = results.run_metrics(tiny_results)
        np.testing.assert_allclose(runs[name], runs["ood_token_acc"] - runs["id_token_acc"])
        assert f"{name}_ci95" in results.aggregate(runs).columns
        with pytest.raises(ValueError, match="registered twice"):
            metrics.register_metric(name, label="again", higher_is_better=True)(None)
    finally:
        metrics.RUN_METRICS._entries.pop(name, None)
        metrics.RUN_METRICS._meta.pop(name, None)


def test_bad_metric_declarations_are_refused():
    with pytest.raises(ValueError, match="unknown format"):
        metrics.register_metric("x", label="x", higher_is_better=True, format="percent")
    with pytest.raises(ValueError, match="only run metrics"):
        metrics.register_metric("x", label="x", higher_is_better=True, level="length")(lambda runs: runs)


def test_every_experiment_declares_a_registered_layout_and_metrics():
    load_experiments()
    positions = []
    for name in EXPERIMENTS.names():
        layout, spec = report.layout_of(name, report_spec(name))
        assert spec is EXPERIMENTS.get(name).report and layout is report.LAYOUTS.get(spec.layout)
        assert all(metric in metrics.RUN_METRICS for metric in report.key_metrics(name, spec))
        positions.append(spec.position)
    assert len(set(positions)) == len(positions)  # a deterministic order of sections


def test_an_unregistered_experiment_gets_the_default_layout():
    layout, spec = report.layout_of("an_experiment_made_elsewhere", report_spec("an_experiment_made_elsewhere"))
    assert spec == ReportSpec() and layout is report.LAYOUTS.get("extrapolation")


def _string_constants(path: Path) -> set[str]:
    """String constants used as names (comparisons, keys, arguments), not prose or settings: constants inside
    f-strings and fallbacks of ``or`` / conditional expressions are text shown to readers, dict values settings."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parent = parents.get(node)
            if isinstance(parent, (ast.JoinedStr, ast.BoolOp, ast.IfExp, ast.FormattedValue)):
                continue
            if isinstance(parent, ast.Dict) and node in parent.values:  # settings such as {"svg.fonttype": "none"}
                continue
            found.add(node.value)
    return found


def test_the_analysis_code_names_no_encoding_task_experiment_or_variant():
    load_experiments()
    variants = {label for spec in suite_runs("standard") + suite_runs("smoke") for label, _ in spec.eval.variants}
    names = set(encodings.names()) | set(tasks.names()) | set(EXPERIMENTS.names()) | variants | {BASE_VARIANT}
    names -= {"count", "sum", "max", "min", "mean"}  # also pandas aggregation names (the task "count" is not meant)
    modules = list(ANALYSIS) + [
        str(path.relative_to(ROOT / "pebench")) for package in ANALYSIS_PACKAGES
        for path in sorted((ROOT / "pebench" / package).glob("*.py"))
    ]
    for module in modules:
        literals = _string_constants(ROOT / "pebench" / module) & names
        assert not literals, f"pebench/{module} names {sorted(literals)}: take them from a registry or declaration"
