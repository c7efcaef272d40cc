"""Issue 39: figure and table titles name an experiment in people's words ('Length extrapolation: ...'), never
by its identifier ('length_extrapolation: ...'); a figure's suptitle opens with its title."""

from __future__ import annotations

import pytest
from test_results import write_synthetic_results

from pebench import store
from pebench.plan.experiment import report_spec
from pebench.report import write_report
from pebench.report.layouts import LAYOUTS, views


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_synthetic_results(tmp_path_factory.mktemp("results"))


def test_every_title_names_its_experiment_in_peoples_words(folder, tmp_path):
    report = write_report(folder, out_dir=tmp_path)
    titles = [artifact.title for artifact in report.figures + report.tables]
    for expected in ("Length extrapolation: token accuracy vs length (decoder)",
                     "Length extrapolation: OOD token accuracy",
                     "Length extrapolation: leaderboard (OOD token accuracy)",
                     "Length extrapolation: order sensitivity (decoder)",
                     "Order sensitivity: order sensitivity (encoder)",
                     "Language-model perplexity vs context length"):
        assert expected in titles, (expected, titles)
    assert [title for title in titles if "_" in title or title.startswith("Lm ")] == []


@pytest.mark.parametrize("experiment", ["length_extrapolation", "order_sensitivity", "rope_scaling",
                                        "lm_extrapolation"])
def test_a_figures_suptitle_opens_with_its_title(folder, experiment):
    data = store.load(folder)
    data = data[data["experiment"] == experiment]
    spec = report_spec(experiment)
    for layout, view_spec, _ in views(LAYOUTS.get(spec.layout), spec):
        for _name, title, _caption, make in layout.figures(data, experiment, view_spec):
            try:
                figure = make()
            except ValueError:  # a view without the evaluations it draws (skipped by the report too)
                continue
            assert figure.get_suptitle().startswith(title)
            assert "_" not in title

