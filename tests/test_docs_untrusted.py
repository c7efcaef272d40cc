"""A results folder is data from a stranger: the site copies a report's figures, tables and summaries only from
paths inside the folder, plain files never reached through a link, and lists ``results/`` through
:mod:`pebench.store` (a linked suite folder is refused on one line, never followed)."""

from __future__ import annotations

import json
import shutil

import pytest
from test_docs import ROOT, led_results, load_generators

from pebench.store import ResultsError


@pytest.fixture(scope="module")
def gen():
    return load_generators()


def with_figure_path(folder, path: str) -> None:
    """Point the report's lead figure at ``path`` (as a stranger's report.json could)."""
    index = json.loads((folder / "report.json").read_text())
    index["figures"][1]["paths"]["svg"] = path
    (folder / "report.json").write_text(json.dumps(index))


@pytest.mark.parametrize("path", ["../outside.svg", "figures/../../outside.svg", "/tmp/outside.svg",
                                  "figures/.hidden.svg", "figures//heatmap.svg"])
def test_a_report_path_that_leaves_the_folder_is_refused_on_one_line(gen, tmp_path, path):
    folder = led_results(tmp_path / "results")
    (tmp_path / "results" / "outside.svg").write_text("<svg>secret</svg>")
    with_figure_path(folder, path)
    srcdir = tmp_path / "docs"
    with pytest.raises(ResultsError, match="is not a plain file name") as error:
        gen.shown_report(folder, srcdir / "_generated" / "results" / "standard", srcdir)
    assert "\n" not in str(error.value)


def test_a_report_file_or_folder_that_is_a_link_is_refused_not_followed(gen, tmp_path):
    folder = led_results(tmp_path / "results")
    outside = tmp_path / "outside.svg"
    outside.write_text("<svg>secret</svg>")
    srcdir = tmp_path / "docs"
    out = srcdir / "_generated" / "results" / "standard"
    (folder / "figures" / "heatmap.svg").unlink()
    (folder / "figures" / "heatmap.svg").symlink_to(outside)
    with pytest.raises(ResultsError, match=r"figures/heatmap.svg is a symbolic link"):
        gen.shown_report(folder, out, srcdir)
    elsewhere = shutil.copytree(folder / "figures", tmp_path / "elsewhere")
    shutil.rmtree(folder / "figures")
    (folder / "figures").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ResultsError, match=r"standard/figures is a symbolic link"):
        gen.shown_report(folder, out, srcdir)
    assert not (out / "figures" / "heatmap.svg").exists()


def test_a_report_path_that_is_a_folder_is_refused(gen, tmp_path):
    folder = led_results(tmp_path / "results")
    with_figure_path(folder, "figures")
    srcdir = tmp_path / "docs"
    with pytest.raises(ResultsError, match=r"figures: a folder"):
        gen.shown_report(folder, srcdir / "_generated" / "results" / "standard", srcdir)


def test_a_linked_suite_folder_in_results_is_refused_on_one_line(gen, tmp_path):
    folder = led_results(tmp_path / "results")
    elsewhere = shutil.copytree(folder, tmp_path / "elsewhere" / "extended")
    (tmp_path / "results" / "extended").symlink_to(elsewhere, target_is_directory=True)
    srcdir = tmp_path / "docs"
    for show in (gen.suite_folders,
                 lambda results: gen.generate_results(results, srcdir / "_generated" / "results", srcdir)):
        with pytest.raises(ResultsError, match=r"results/extended is a symbolic link; pebench never follows") as error:
            show(tmp_path / "results")
        assert "\n" not in str(error.value)
    (tmp_path / "results" / "extended").unlink()
    assert gen.suite_folders(tmp_path / "results") == [folder]


@pytest.mark.parametrize(("svg", "held"), [
    ("<svg><script>alert(1)</script></svg>", "the element <script>"),
    ('<svg onload="alert(1)"/>', "the event attribute 'onload='"),
    ('<svg><a href="https://example.org"><text>x</text></a></svg>', "the element <a>"),
    ('<svg><set attributeName="href" to="javascript:alert(1)"/></svg>', "the element <set>"),
    ("<svg><foreignObject><div/></foreignObject></svg>", "the element <foreignObject>"),
    ('<svg><image href="http://tracker.example/x.png"/></svg>', "a link to 'http://tracker.example/x.png'"),
    ("<svg><style>@import url(http://x/y.css);</style></svg>", "a style that loads something"),
    ('<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg>&x;</svg>', "an entity declaration"),
])
def test_a_figure_that_could_run_script_in_a_readers_browser_is_refused(gen, tmp_path, svg, held):
    folder = led_results(tmp_path / "results")
    (folder / "figures" / "heatmap.svg").write_text(svg)
    out = tmp_path / "docs" / "_generated" / "results" / "standard"
    with pytest.raises(ResultsError, match="no figure of pebench report") as error:
        gen.shown_report(folder, out, tmp_path / "docs")
    assert held in str(error.value) and "\n" not in str(error.value)
    assert not (out / "figures" / "heatmap.svg").exists()


def test_every_figure_pebench_draws_passes_the_figure_check():
    from pebench.report_file import svg_problem

    figures = sorted(ROOT.glob("results/**/*.svg"))
    assert len(figures) > 20
    assert {str(path.relative_to(ROOT)): svg_problem(path.read_bytes()) for path in figures
            if svg_problem(path.read_bytes())} == {}


@pytest.mark.parametrize(("field", "value", "said"), [
    ("protocol", ["x"], "its 'protocol' is not a text"),
    ("findings", "x", "its 'findings' is not a list of texts"),
    ("figures", [{"name": "x"}], "its 'figures' is not a list of artifacts"),
    ("provenance", [], "its 'provenance' is not an object"),
    ("summaries", {"runs": 5}, "its 'summaries' is not an object of paths"),
])
def test_a_report_of_the_wrong_shape_stops_the_build_on_one_line(gen, tmp_path, field, value, said):
    folder = led_results(tmp_path / "results")
    index = json.loads((folder / "report.json").read_text())
    index[field] = value
    (folder / "report.json").write_text(json.dumps(index))
    srcdir = tmp_path / "docs"
    with pytest.raises(RuntimeError, match="is not a report pebench writes") as error:
        with gen.one_build():
            gen.generate_results(tmp_path / "results", srcdir / "_generated" / "results", srcdir)
    assert said in str(error.value) and "\n" not in str(error.value)
