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
    with pytest.raises(ResultsError, match="is not a plain file name|not where pebench report writes one") as error:
        gen.shown_report(folder, srcdir / "_generated" / "results" / "standard", srcdir)
    assert "\n" not in str(error.value) and not (srcdir / "_generated" / "results" / "outside.svg").exists()


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
    with pytest.raises(ResultsError, match=r"names 'figures' as its figure 'heatmap' in 'svg', not where"):
        gen.shown_report(folder, srcdir / "_generated" / "results" / "standard", srcdir)
    from pebench.store.report_file import copy_artifact  # as the leaderboard page copies a table by its name

    with pytest.raises(ResultsError, match=r"figures: a folder"):
        copy_artifact(folder, "figures", srcdir / "copy")


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
    with pytest.raises(ResultsError, match="no file of pebench report") as error:
        gen.shown_report(folder, out, tmp_path / "docs")
    assert held in str(error.value) and "\n" not in str(error.value)
    assert not (out / "figures" / "heatmap.svg").exists()


def test_every_file_pebench_reports_passes_the_check_of_its_format():
    from pebench.store.artifact_check import artifact_problem

    files = [path for path in sorted(ROOT.glob("results/**/*")) if path.suffix in (".svg", ".pdf", ".tex", ".csv")
             and "raw" not in path.parts]
    assert {path.suffix for path in files} == {".svg", ".pdf", ".tex", ".csv"} and len(files) > 200
    assert {str(path.relative_to(ROOT)): problem for path in files
            if (problem := artifact_problem(path.name, path.read_bytes()))} == {}


def committed_pdf() -> bytes:
    """A figure's PDF as pebench wrote it (the smallest committed one)."""
    return min((path.read_bytes() for path in ROOT.glob("results/*/figures/*.pdf")), key=len)


def _with_long_stream(pdf: bytes) -> bytes:
    """``pdf`` with an object inside a stream's data as a scan to the next ``endstream`` would read it, but after
    the stream as its /Length (3) says: a reader would read the object; the check reads streams by their /Length."""
    hidden = b"<< /Length 3 >>\nstream\nabc\n99 0 obj << /Type /Action /S /Launch >> endobj\nendstream"
    return pdf.replace(b"%%EOF", b"98 0 obj\n" + hidden + b"\nendobj\n%%EOF")


def _with_wrong_length(pdf: bytes) -> bytes:
    """``pdf`` with a stream whose /Length does not end where its ``endstream`` is."""
    return pdf.replace(b"%%EOF", b"98 0 obj\n<< /Length 2 >>\nstream\nabcdef\nendstream\nendobj\n%%EOF")


@pytest.mark.parametrize(("craft", "held"), [
    (lambda pdf: pdf.replace(b"/Type /Catalog", b"/Type /Catalog /OpenAction << /S /JavaScript /JS (app.alert(1)) >>"),
     "the name /OpenAction"),
    (lambda pdf: pdf.replace(b"/Type /Catalog", b"/Type /Catalog /Names << /J#61vaScript 5 0 R >>"),
     "the name /JavaScript"),  # a name's #xx escapes are decoded before it is read
    (lambda pdf: pdf.replace(b"/Type /Catalog", b"/Type /Catalog /AA << /O << /S /Launch /F (calc) >> >>"),
     "the name /AA"),
    (lambda pdf: pdf.replace(b"%%EOF", b"97 0 obj << /Type /ObjStm /N 1 /First 4 /Length 12 >>\nstream\n"
                             b"99 0 <<>>   \nendstream\nendobj\n%%EOF"), "an object stream (/ObjStm)"),
    (_with_long_stream, "a stream whose extent is not its /Length"),  # after abc comes no endstream
    (_with_wrong_length, "a stream whose extent is not its /Length"),
    (lambda pdf: pdf.replace(b"%%EOF", b"96 0 obj << /Filter /FlateDecode >>\nstream\nx\nendstream\n%%EOF"),
     "a stream without a /Length"),
    (lambda pdf: b"<html><script>alert(1)</script></html>", "no PDF header"),
])
def test_a_pdf_figure_with_script_or_actions_is_refused(gen, tmp_path, craft, held):
    """A figure's PDF is a download: one that a PDF reader would run JavaScript or an action from, or whose
    objects could not all be read, stops the build on one line and is not copied."""
    folder = led_results(tmp_path / "results")
    pdf = committed_pdf()
    assert craft(pdf) != pdf
    (folder / "figures" / "heatmap.pdf").write_bytes(craft(pdf))
    out = tmp_path / "docs" / "_generated" / "results" / "standard"
    with pytest.raises(ResultsError, match="no file of pebench report") as error:
        gen.shown_report(folder, out, tmp_path / "docs")
    assert held in str(error.value) and "\n" not in str(error.value)
    assert not (out / "figures" / "heatmap.pdf").exists()


@pytest.mark.parametrize(("tex", "held"), [
    ("\\input{/etc/passwd}", "the control word \\input"),
    ("\\immediate\\write18{touch /tmp/x}", "the control word \\immediate"),
    ("\\begin{filecontents}{x.tex}\\end{filecontents}", "the environment 'filecontents'"),
    ("^^5cinput{/etc/passwd}", "TeX's ^^ character notation"),  # ^^5c is a backslash
    ("\\csname input\\endcsname", "the control word \\csname"),
    ("\\@input{x}", "the control symbol"),
    ("\\begin {tabular}{l}\\end{tabular} \\begin", "the environment 'without a name'"),
])
def test_a_latex_table_that_would_read_or_write_files_is_refused(gen, tmp_path, tex, held):
    """A table's LaTeX is pasted into papers: one with a command no pebench table writes stops the build."""
    folder = led_results(tmp_path / "results")
    (folder / "tables" / "main.tex").write_text("\\begin{table}[tp]\n\\centering\n% \\input in a comment\n"
                                                 f"{tex}\n\\end{{table}}\n")
    out = tmp_path / "docs" / "_generated" / "results" / "standard"
    with pytest.raises(ResultsError, match="no file of pebench report") as error:
        gen.shown_report(folder, out, tmp_path / "docs")
    assert held in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("field", ["=HYPERLINK(\"http://x\")", "-2+3+cmd|' /C calc'!A0", "@SUM(1)", "+1"])
def test_a_table_or_summary_csv_with_a_formula_is_refused(gen, tmp_path, field):
    folder = led_results(tmp_path / "results")
    (folder / "summary" / "cells.csv").write_text(f"a,b\n-0.5,\"{field}\"\n")
    with pytest.raises(ResultsError, match="a field that a spreadsheet runs as a formula"):
        gen.shown_report(folder, tmp_path / "docs" / "_generated" / "results" / "standard", tmp_path / "docs")


@pytest.mark.parametrize(("kind", "ext", "path"), [
    ("figures", "html", "figures/heatmap.html"),  # a page of the site's origin: its script would run there
    ("figures", "svg", "figures/curves.svg"),  # another figure's file
    ("figures", "svg", "tables/main.md"),
    ("summaries", "cells", "summary/cells.html"),
])
def test_a_report_that_names_a_file_where_pebench_writes_none_is_refused(gen, tmp_path, kind, ext, path):
    """Every file a report names is ``<kind>/<name>.<format>`` in a format of its kind: a stranger's report.json
    cannot make the site serve another file, e.g. an HTML page whose script would run in the site's origin."""
    folder = led_results(tmp_path / "results")
    (folder / "figures" / "heatmap.html").write_text("<script>alert(document.cookie)</script>")
    (folder / "summary" / "cells.html").write_text("<script>alert(document.cookie)</script>")
    index = json.loads((folder / "report.json").read_text())
    if kind == "summaries":
        index["summaries"] = {ext: path}
    else:
        index["figures"][1]["paths"] = {ext: path}
    (folder / "report.json").write_text(json.dumps(index))
    out = tmp_path / "docs" / "_generated" / "results" / "standard"
    with pytest.raises(ResultsError, match="not where pebench report writes one") as error:
        gen.shown_report(folder, out, tmp_path / "docs")
    assert "\n" not in str(error.value) and not list(out.rglob("*.html"))


@pytest.mark.parametrize(("field", "value", "said"), [
    ("protocol", ["x"], "its 'protocol' is not a text"),
    ("findings", "x", "its 'findings' is not a list of texts"),
    ("figures", [{"name": "x"}], "its 'figures' is not a list of artifacts"),
    ("provenance", [], "its 'provenance' is not a table"),
    ("summaries", {"runs": 5}, "its 'summaries' is not an object of paths"),
    # tables: what the pages read of them (a lead, a header of texts, rows of cells; sections of such tables)
    ("provenance", {"lead": "x", "header": ["field"], "rows": "x"}, "its 'provenance' is not a table"),
    ("provenance", {"header": ["field"], "rows": [["x"]]}, "its 'provenance' is not a table"),
    ("fit_table", {"sections": [{"lead": "x"}]}, "its 'fit_table' is not a table"),
    ("floors_table", {"sections": "x"}, "its 'floors_table' is not a table"),
    ("fit_resolution", {"sections": [{"lead": "x", "header": ["a"], "rows": [[{"a": 1}]]}], "closing": ""},
     "its 'fit_resolution' is not a table"),
    ("fit_resolution", {"sections": [], "closing": 5}, "its 'fit_resolution' is not a table"),
    ("interval_edges", {"leaderboard_length_extrapolation": 5}, "its 'interval_edges' is not an object of texts"),
    ("entries", {"encoding": {"rope": {"appearances": [["length_extrapolation", "decoder"]]}}},
     "its 'entries' is not an object of entries"),
    ("entries", {"encoding": {"rope": {"appearances": [], "tables": {"main": {"header": ["a"], "rows": [[[]]]}}}}},
     "its 'entries' is not an object of entries"),
    ("entries", {"task": ["copy"]}, "its 'entries' is not an object of entries"),
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


def test_a_report_without_a_field_the_pages_read_stops_the_build_on_one_line(gen, tmp_path):
    """A report pebench writes has every field the pages read by name; one without (crafted, or from a pebench
    before the field) stops the build on one line naming it, not on a KeyError."""
    folder = led_results(tmp_path / "results")
    index = json.loads((folder / "report.json").read_text())
    del index["findings"], index["fit_resolution"]
    (folder / "report.json").write_text(json.dumps(index))
    srcdir = tmp_path / "docs"
    with pytest.raises(RuntimeError, match="is not a report pebench writes") as error:
        with gen.one_build():
            gen.generate_results(tmp_path / "results", srcdir / "_generated" / "results", srcdir)
    assert "it has no 'findings', 'fit_resolution'" in str(error.value) and "\n" not in str(error.value)


def _linked_copy(source, target, tmp_path):
    """``target``, a symbolic link to a copy of ``source`` kept outside the results folder."""
    outside = tmp_path / "outside" / source.name
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, outside)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside)
    return target


@pytest.mark.parametrize("read", ["depth pilot", "suite times", "summary header", "performance"])
def test_the_sites_other_readings_of_a_results_folder_never_follow_a_link(tmp_path, read):
    """The pilots, the measured times and the reference's summary header are read as the report's files are:
    a file of the folder that is a symbolic link (to a file elsewhere on the building machine) is refused on one
    line, not read into a page."""
    from pebench.render import performance_text, protocol_tables
    from pebench.render.pilot_readings import depth_pilot_blocks

    results = tmp_path / "results"
    if read == "depth pilot":
        pilots = ROOT / "results" / "pilots"
        (results / "pilots").mkdir(parents=True)
        shutil.copy(pilots / "depth_pilot.csv", results / "pilots" / "depth_pilot.csv")
        _linked_copy(pilots / "depth_pilot.json", results / "pilots" / "depth_pilot.json", tmp_path)
        assert depth_pilot_blocks(ROOT / "results" / "pilots") is not None  # the real folder is read
        call = lambda: depth_pilot_blocks(results / "pilots")  # noqa: E731
    elif read == "suite times":
        _linked_copy(ROOT / "results" / "performance" / "suites.csv", results / "performance" / "suites.csv", tmp_path)
        call = lambda: protocol_tables.measured_suite_times(results / "performance")  # noqa: E731
    elif read == "summary header":
        _linked_copy(ROOT / "results" / "standard" / "summary" / "runs.csv",
                     results / "standard" / "summary" / "runs.csv", tmp_path)
        call = lambda: protocol_tables.reference_history_text(ROOT, results)  # noqa: E731
    else:
        _linked_copy(ROOT / "results" / "performance" / "workers.csv", results / "performance" / "workers.csv",
                     tmp_path)
        call = lambda: performance_text.read_rows(results / "performance" / "workers.csv")  # noqa: E731
    with pytest.raises(ValueError, match="symbolic link") as error:  # a ResultsError is a ValueError
        call()
    assert "\n" not in str(error.value)
