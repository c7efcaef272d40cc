"""The documentation site: its generators, the worked example of docs/extending.md, and a full -W build."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_registry import cited_plugins  # noqa: F401  (a fixture: plugin encodings cited by DOI, text)

from pebench import encodings, tasks
from pebench.render.results_text import rerun_summary
from pebench.store.report_file import rerun_reference

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLE = DOCS / "examples" / "scaled_sinusoidal.py"
TASK_EXAMPLE = DOCS / "examples" / "rotate_task.py"


def load_generators() -> SimpleNamespace:
    """The names of every page module of the docs extension (``docs/_ext/pebench_docs/``), as one namespace."""
    if str(DOCS / "_ext") not in sys.path:
        sys.path.insert(0, str(DOCS / "_ext"))
    package = importlib.import_module("pebench_docs")
    names = {}
    for info in pkgutil.iter_modules(package.__path__, "pebench_docs."):
        names.update(vars(importlib.import_module(info.name)))
    names.update(vars(package))
    return SimpleNamespace(**names)


@pytest.fixture(scope="module")
def gen():
    return load_generators()


def test_citation_cff_matches_the_package():
    import yaml

    import pebench

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == pebench.__version__
    assert cff["title"] == "pebench" and cff["authors"]


def test_every_cited_key_is_in_the_bibliography(gen):
    keys = set(gen.bib_entries())
    cited = {encodings.meta(name)["paper"] for name in encodings.names()}
    cited |= {tasks.TASKS.meta(name)["paper"] for name in tasks.names() if tasks.TASKS.meta(name)["paper"]}
    cited |= {key for name in encodings.names() for key in encodings.meta(name)["cites"]}
    assert cited <= keys, f"missing from docs/references.bib: {sorted(cited - keys)}"


def test_suite_bibtex(gen):
    import pebench

    text = gen.suite_bibtex()
    assert text.startswith("@software{pebench,") and f"version  = {{{pebench.__version__}}}" in text


@pytest.mark.parametrize("name", encodings.names())
def test_encoding_page(gen, name, tmp_path):
    page = gen.encoding_page(name, tmp_path / "_generated", srcdir=tmp_path)
    meta = encodings.meta(name)
    label = encodings.ENCODINGS.label(name)  # the title: the name papers use, and the registered one
    assert page.startswith(f"# {label} (`{name}`)\n" if label != name else f"# `{name}`\n")
    assert f"{{cite:t}}`{meta['paper']}`" in page
    assert ".. autoclass::" in page and ":no-index:" in page
    for option, default in encodings.options(name).items():
        assert f"| `{option}` | `{default!r}` |" in page


def test_the_registry_pages_show_the_results_the_site_is_built_from(gen, tmp_path):
    """A preview of another results folder (PEBENCH_DOCS_RESULTS) links an encoding's or a task's page to its
    all-results page only where that folder has results for it, as the all-results pages are made from that
    folder: a folder without any gives no link to a page that was not made."""
    empty = tmp_path / "results"
    empty.mkdir()
    for page in (gen.encoding_page("rope", tmp_path / "_generated", srcdir=tmp_path, results=empty),
                 gen.task_page("copy", results=empty)):
        assert "_results/" not in page and "## In the results" in page
    assert "</_generated/encoding_results/rope>" in gen.encoding_page("rope", tmp_path / "_generated", srcdir=tmp_path)
    assert gen.all_results_page("encoding", "rope", empty) is None


@pytest.mark.parametrize("name", ["copy", "charlm", "count"])
def test_task_page(gen, name):
    page = gen.task_page(name)
    assert "Rendered for the decoder" in page
    assert ("Rendered for the encoder" in page) == (not tasks.TASKS.meta(name).get("decoder_only", False))


def test_a_task_page_shows_its_in_distribution_pilot_runs(gen, tmp_path):
    """The pilots that decided whether a task joins a suite (results/pilots) show on its page, one table per pilot
    file with runs of it; a folder without pilots, or a task no pilot ran, shows none."""
    pilots = tmp_path / "results" / "pilots"
    pilots.mkdir(parents=True)
    header = "task,arch,encoding,seed,step_cap,fitted,steps_to_fit,fit_token_acc,floor_token_acc,git_sha\n"
    (pilots / "probe_encoder_fit.csv").write_text(
        header + "mqar,encoder,rope,0,5000,False,,0.7148,0.3415,e207255312ae\n"
        "mqar,encoder,learned,0,5000,True,1900.0,0.9941,0.3415,e207255312ae\n"
        "s5_word_problem,encoder,rope,0,1000,False,,0.0098,0.0207,e207255312ae\n")
    page = gen.task_page("mqar", results=tmp_path / "results")
    assert "## In-distribution pilots" in page
    assert "`results/pilots/probe_encoder_fit.csv`, made at commit e207255" in page
    assert "| encoder | Learned | 0 | 5000 | yes | 1900 | 0.994 | 0.342 |" in page
    assert "| encoder | RoPE | 0 | 5000 | no | — | 0.715 | 0.342 |" in page  # learned before RoPE: the registry's order
    assert page.index("| encoder | Learned") < page.index("| encoder | RoPE") and "s5" not in page.split("## Def")[0]
    assert "## In-distribution pilots" not in gen.task_page("copy", results=tmp_path / "results")


def test_missing_results_page_shows_no_numbers(gen, tmp_path):
    pages = gen.generate_results(tmp_path / "results", tmp_path / "out", srcdir=tmp_path)
    assert pages == ["standard"]
    text = (tmp_path / "out" / "standard.md").read_text()
    assert "no results in `results/standard` yet" in text


def fake_results(root: Path, *, protocol_columns: bool = True, tables: bool = True) -> Path:
    """A suite folder ``root/standard`` with a ``summary/runs.csv`` (with or without the fit and floor columns of
    the current protocol), optionally the leaderboard tables of ``pebench report``, and a ``report.json``
    holding what the library computes from them (:func:`fake_report`)."""
    from test_report import fit_summary_folder

    folder = fit_summary_folder(root, protocol_columns=protocol_columns)
    manifest = {"suite": "standard", "invocations": [{}], "latest": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    if tables:
        (folder / "tables").mkdir()
        for kind in ("leaderboard", "pairwise", "pairwise_tasks", "extrapolation", "capability", "harm",
                     "capacity"):
            stem = folder / "tables" / f"{kind}_length_extrapolation"
            stem.with_suffix(".md").write_text(f"| Arch | {kind} |\n|---|---|\n| decoder | 0.75 |\n\n{kind} caption.\n")
            stem.with_suffix(".tex").write_text("\\begin{table}\\end{table}\n")
            stem.with_suffix(".csv").write_text("arch,value\ndecoder,0.75\n")
        (folder / "tables" / "task_ranks_length_extrapolation.csv").write_text("task,rank\ncopy,1\n")
    fake_report(folder, findings=[
        "copy (decoder): best OOD token accuracy rope 0.9.",
        "Length extrapolation, decoder: 2 encodings share the top tier, their intervals overlapping: rope 0.90 "
        "[0.80, 0.95], alibi 0.85 [0.70, 0.92] (on 12 jointly fitted task-seed pairs of 4 order-dependent tasks).",
        "Length extrapolation, decoder: NoPE vs sinusoidal: no significant difference (Holm p = 1)."])
    return folder


def page_fields() -> dict:
    """Every field of a ``report.json`` that the pages read by name (``PAGE_FIELDS``), empty of its kind: what a
    test's minimal report starts from (``pebench report`` always writes them all)."""
    return {"figures": [], "tables": [], "findings": [], "skipped": [], "protocol": "", "summaries": {},
            "results_version": "", "citation": "", "completeness": "", "provenance": {"missing": ""}, "headline": [],
            "main_table": "", "interval_edges": {}, "fit_table": {"sections": []}, "floors_table": {"sections": []},
            "fit_resolution": {"sections": [], "closing": ""}}


def fake_report(folder: Path, findings: list[str] = (), **fields) -> dict:
    """Write a ``report.json`` for ``folder`` as ``pebench report`` would from its summary, tables and manifest
    (no figures or tables listed; ``fields`` replace entries), current for its run files; returns it."""
    from pebench.plan.experiment import registered_report_specs
    from pebench.report import findings as findings_module
    from pebench.report import fit
    from pebench.store import read_manifest
    from pebench.store.report_file import raw_digest

    index = {"figures": [], "tables": [], "findings": list(findings), "protocol": "", "summaries": {}, "skipped": [],
             "results_version": "", "citation": "", "raw_sha256": raw_digest(folder), "completeness": "",
             "provenance": findings_module.provenance(read_manifest(folder)),
             "headline": findings_module.headline(findings, registered_report_specs(["length_extrapolation"])),
             "main_table": "", "interval_edges": findings_module.leaderboard_edges(folder / "tables"),
             "fit_table": fit.fit_table(folder), "floors_table": fit.floors_table(folder),
             "fit_resolution": {"sections": [], "closing": ""}, **fields}
    (folder / "report.json").write_text(json.dumps(index))
    return index


def markdown_rows(rows: list[list]) -> list[str]:
    """The lines a Markdown table shows for ``rows`` of a ``report.json``."""
    return ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def test_leaderboard_page_shows_the_committed_tables(gen, tmp_path):
    results = tmp_path / "results"
    folder = fake_results(results)
    srcdir = tmp_path / "docs"
    out = srcdir / "_generated" / "leaderboard"
    lead, every, archive = (include(results, out, srcdir) for include in (
        gen.leaderboard_include, gen.suites_include, gen.archive_include))
    # the leaderboard page leads with protocol v3's boards of the reference: tiers, then capability and harm; its
    # other tables are on the page of every table, v2's ranking on the archive page
    boards = ("Extrapolation tiers", "Capability", "Harm on the order-free controls")
    positions = [lead.index(f"### {title}: Length extrapolation\n") for title in boards]
    assert positions == sorted(positions) and "Mean reciprocal rank" not in lead and "Declared" not in lead
    assert not any(f"### {title}: Length extrapolation\n" in every + archive for title in boards)
    assert "### Mean reciprocal rank (protocol v2's ranking): Length extrapolation" in archive
    assert "| decoder | 0.75 |" in archive
    assert "Mean reciprocal rank" not in every
    text = lead + every + archive
    titles = ("Extrapolation tiers", "Capability", "Harm on the order-free controls",
              "Capable encodings' runs not fitted", "Declared comparisons", "Declared comparisons per task")
    positions = [text.index(f"### {title}: Length extrapolation\n") for title in titles]
    assert positions == sorted(positions)
    titles += ("Mean reciprocal rank (protocol v2's ranking)",)
    # each once: pairwise_tasks_* is not also a `pairwise` table of an experiment called tasks_...
    assert all(text.count(f"### {title}: Length extrapolation\n") == 1 for title in titles)
    assert text.count("/pairwise_tasks_length_extrapolation.csv>`") == 1
    assert "leaderboard caption." in text and "### Declared comparisons: Length extrapolation" in text
    assert "{download}`TEX </_generated/leaderboard/standard/leaderboard_length_extrapolation.tex>`" in text
    assert "{download}`CSV </_generated/leaderboard/standard/pairwise_length_extrapolation.csv>`" in text
    assert (srcdir / "_generated" / "leaderboard" / "standard" / "task_ranks_length_extrapolation.csv").exists()
    assert not list((srcdir / "_generated").rglob("*.md"))  # a copied .md would become a page of the site
    fit_rows = json.loads((folder / "report.json").read_text())["fit_table"]["sections"][0]["rows"]
    assert all(line in text for line in markdown_rows(fit_rows))  # the fit table, as the report computed it
    assert "lies within" not in text  # that table's CSV has no MRR interval: nothing said about it


@pytest.mark.parametrize("suffix", [".md", ".tex"])
def test_leaderboard_page_refuses_a_table_that_is_a_link(gen, tmp_path, suffix):
    """A results folder may come from anyone: a table of it that is a symbolic link (here to a file outside it) is
    refused with one line, never read or copied onto the site."""
    import os

    from pebench.store import ResultsError

    results = tmp_path / "results"
    folder = fake_results(results)
    table = folder / "tables" / f"leaderboard_length_extrapolation{suffix}"
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the folder")
    table.unlink()
    os.symlink(secret, table)
    with pytest.raises(ResultsError, match="link") as error:
        gen.archive_include(results, tmp_path / "docs" / "_generated" / "leaderboard", tmp_path / "docs")
    assert "\n" not in str(error.value)
    assert not any("outside the folder" in path.read_text() for path in (tmp_path / "docs").rglob("*") if
                   path.is_file())


def test_leaderboard_page_shows_the_reports_reading_of_the_mrr_intervals(gen, tmp_path):
    results = tmp_path / "results"
    folder = fake_results(results)
    fake_report(folder, interval_edges={"leaderboard_length_extrapolation": "In 1 of 3 rows the MRR lies within."})
    page = gen.archive_include(results, tmp_path / "docs" / "_generated" / "leaderboard", tmp_path / "docs")
    assert "| decoder | 0.75 |\n\nleaderboard caption.\n\nDownload:" in page
    assert "\nIn 1 of 3 rows the MRR lies within.\n" in page


def test_results_without_a_column_say_so(gen, tmp_path):
    folder = fake_results(tmp_path / "results", protocol_columns=False, tables=False)
    for text in (gen.report_tables(folder, "fit_table"), gen.report_tables(folder, "floors_table")):
        assert "not in these results" in text and ("`fitted`" in text or "`id_floor_token_acc`" in text)
        assert f"`{gen.shown(folder)}/summary/runs.csv`" in text  # the report's placeholder, filled
    board = gen.archive_include(tmp_path / "results", tmp_path / "docs" / "_generated" / "leaderboard",
                                tmp_path / "docs")
    assert "*Leaderboard: not in these results" in board and "|---|" not in board
    assert "not in these results" in gen.report_tables(tmp_path / "nowhere", "fit_table")
    assert "not in these results" in gen.headline_findings(tmp_path / "nowhere")


def test_floors_table_shows_the_reports_rows(gen, tmp_path):
    folder = fake_results(tmp_path / "results")
    text = gen.report_tables(folder, "floors_table")
    section = json.loads((folder / "report.json").read_text())["floors_table"]["sections"][0]
    assert text.startswith(section["lead"].replace("{folder}", gen.shown(folder)))
    assert all(line in text for line in markdown_rows(section["rows"]))


def test_headline_findings_are_the_reports(gen, tmp_path):
    folder = fake_results(tmp_path / "results")
    text = gen.headline_findings(tmp_path / "results")
    headline = json.loads((folder / "report.json").read_text())["headline"]
    assert headline and text.startswith("\n".join(f"- {finding}" for finding in headline) + "\n\nFrom `")


def test_board_caveats_are_the_reports_stability_and_identical_models(gen, tmp_path):
    from pebench.render.results_text import IDENTICAL_LEAD, SPLIT_HALF_LEAD

    folder = fake_results(tmp_path / "results")
    assert "not in these results" in gen.board_caveats(tmp_path / "results")  # its headline has neither
    stability = f"Length extrapolation, decoder: {SPLIT_HALF_LEAD}, Kendall's tau 0.85 between its 2 seeds."
    identical = f"{IDENTICAL_LEAD} iRoPE gave the same rows as RoPE in every one of the 2 runs they share."
    tiers = "Length extrapolation, decoder: tier 1: RoPE 0.90 [0.80, 0.95] (P(tier) 0.990)."
    fake_report(folder, findings=[tiers, stability, identical])
    assert gen.board_caveats(tmp_path / "results") == f"- {stability}\n- {identical}\n"  # the tiers are above them
    assert "not in these results" in gen.board_caveats(tmp_path / "nowhere")


def test_protocol_numbers_come_from_the_code(gen):
    from pebench import protocol
    from pebench.learn.train import TrainConfig
    from pebench.plan import experiment

    values = gen.protocol_tables.protocol_values()
    assert values["step_cap"] == str(protocol.SCALES["standard"]["steps"])
    assert values["single_output_steps"] == str(protocol.SINGLE_OUTPUT_STEPS)
    assert values["fit_threshold"] == f"{TrainConfig().fit_threshold:g}"
    lengths = experiment.load_experiments().get("length_extrapolation").runs("standard")[0].eval.lengths
    assert values["length_extrapolation_ood_lengths"] == ", ".join(str(n) for n in lengths if n > 8)


def test_protocol_page_takes_its_numbers_from_the_build():
    """The protocol page's constants are substitutions and its result tables generated includes."""
    page = (DOCS / "protocol.md").read_text()
    for name in ("standard_task_caps", "standard_depth", "standard_plateau_stop", "single_output_steps",
                 "fit_threshold", "fit_patience", "position_capacity",
                 "length_extrapolation_ood_lengths"):
        assert f"{{{{ {name} }}}}" in page, name
    for name in ("fit_table", "floors_table", "battery_length_extrapolation"):
        assert f"_generated/includes/{name}.md" in page


@dataclass
class FakeArtifact:
    name: str
    title: str
    caption: str
    paths: dict = field(default_factory=dict)


def test_a_figure_and_a_table_are_rendered_with_their_captions_and_downloads(gen, tmp_path):
    out = tmp_path / "_generated" / "results" / "standard"
    out.mkdir(parents=True)
    for name in ("fig.svg", "fig.pdf", "table.md", "table.tex", "table.csv"):
        (out / name).write_text("| a | b |\n|---|---|\n| 1 | 2 |\n" if name.endswith(".md") else "x")
    figure = FakeArtifact("fig", "A figure", "Its caption.", {"svg": out / "fig.svg", "pdf": out / "fig.pdf"})
    table = FakeArtifact("table", "A table", "Table caption.",
                         {"md": out / "table.md", "tex": out / "table.tex", "csv": out / "table.csv"})
    text = "\n".join(gen.figure_section(figure, tmp_path) + gen.table_section(table, tmp_path))
    assert text.startswith("## A figure\n\n:::{figure} /_generated/results/standard/fig.svg") and "Its caption." in text
    assert "{download}`PDF </_generated/results/standard/fig.pdf>`" in text
    assert "## A table\n\nTable caption.\n\n| a | b |" in text
    assert "{download}`TEX </_generated/results/standard/table.tex>`" in text


def test_manifest_section(gen, tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"suite": "standard", "invocations": [{}], "latest": {"git_sha": "abc123", "device": "cpu"}}))
    fake_report(tmp_path)
    text = gen.manifest_section(tmp_path)
    assert "| `git_sha` | abc123 |" in text and "| `device` | cpu |" in text


def test_api_modules_import(gen):
    modules = gen.api_modules()
    for required in ("pebench.registry", "pebench.encodings", "pebench.encodings.rope", "pebench.tasks",
                     "pebench.model", "pebench.learn.train", "pebench.learn.evaluate", "pebench.plan.experiment",
                     "pebench.plan.runner", "pebench.cli", "pebench.explain"):
        assert required in modules


EXAMPLE_CHECK = """
import sys
import torch
from pebench import encodings, registry, tasks
registry.load_plugin(sys.argv[1])
registry.load_plugin(sys.argv[2])
assert "scaled_sinusoidal" in encodings.names() and "rotate" in tasks.names()
assert encodings.options("scaled_sinusoidal") == {"theta": 10000.0, "init_scale": 1.0}
scaled = encodings.build("scaled_sinusoidal", d_model=16, n_heads=2, max_len=32)
plain = encodings.build("sinusoidal", d_model=16, n_heads=2, max_len=32)
x, pos = torch.randn(2, 10, 16), torch.arange(10)
assert torch.equal(scaled.embed(x, pos), plain.embed(x, pos))  # starts out as sinusoidal
assert sum(p.numel() for p in scaled.parameters()) == 1
batch = tasks.get("rotate").sample(3, 5, torch.Generator().manual_seed(0))
assert torch.equal(batch.targets, torch.cat([batch.inputs[:, 1:], batch.inputs[:, :1]], dim=1))
"""


def pebench_command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``pebench ARGS`` in a fresh interpreter (this checkout's package), as a user types it."""
    return subprocess.run([sys.executable, "-m", "pebench.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> list[Path]:
    """The two example files of docs/extending.md, copied to a folder outside the repository."""
    folder = tmp_path_factory.mktemp("my_plugins")
    copies = [folder / "my_encodings.py", folder / "rotate_task.py"]
    for source, copy in zip((EXAMPLE, TASK_EXAMPLE), copies, strict=True):
        copy.write_text(source.read_text())
    assert not any(copy.resolve().is_relative_to(ROOT) for copy in copies)
    return copies


def test_extending_examples_register_and_build(plugins):
    done = subprocess.run([sys.executable, "-c", EXAMPLE_CHECK, *map(str, plugins)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_plugins_run_under_the_protocol_and_reach_the_report(plugins, tmp_path):
    """docs/extending.md: an encoding and a task from files outside the repository are listed, trained with
    `pebench --plugin FILE run --encoding NAME --task NAME`, and appear in `pebench report`'s tables."""
    flags = [arg for path in plugins for arg in ("--plugin", str(path))]
    listed = pebench_command(*flags, "list", "encodings")
    assert listed.returncode == 0 and "scaled_sinusoidal" in listed.stdout, listed.stderr
    out = tmp_path / "results"
    done = pebench_command(*flags, "run", "--suite", "smoke", "--experiment", "length_extrapolation",
                           "--encoding", "scaled_sinusoidal", "--task", "rotate", "--filter",
                           "encoding=scaled_sinusoidal,none", "--filter", "task=rotate,copy", "--workers", "2",
                           "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    from pebench.store import load

    frame = load(out)
    assert set(zip(frame["task"], frame["encoding"], strict=True)) == {
        ("rotate", "scaled_sinusoidal"), ("rotate", "none"), ("copy", "scaled_sinusoidal"), ("copy", "none")}
    assert set(frame["status"]) == {"ok"}
    assert (frame.loc[frame["encoding"] == "scaled_sinusoidal", "encoding_params"] == 1).all()
    reported = pebench_command(*flags, "report", "--results", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    table = (out / "tables" / "length_extrapolation.md").read_text()
    assert "rotate" in table and "scaled_sinusoidal" in table
    without = pebench_command("list", "encodings")  # nothing in pebench was edited
    assert "scaled_sinusoidal" not in without.stdout


def test_a_bad_plugin_is_one_line_and_exit_2(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    duplicate = tmp_path / "duplicate.py"
    duplicate.write_text("from pebench.encodings import register\nfrom pebench.encodings.rope import RoPE\n"
                         "register('rope', kind='rotary', paper='x', has_parameters=False)(RoPE)\n")
    not_an_encoding = tmp_path / "not_an_encoding.py"
    not_an_encoding.write_text("from pebench.encodings import register\n"
                               "@register('thing', kind='input', paper='x', has_parameters=False)\n"
                               "class Thing:\n    pass\n")
    for path, message in ((tmp_path / "missing.py", "not found"), (broken, "RuntimeError: boom"),
                          (duplicate, "'rope' is registered twice"),
                          (not_an_encoding, "must be a subclass of pebench.encodings.base.PositionalEncoding")):
        done = pebench_command("--plugin", str(path), "list", "tasks")
        assert done.returncode == 2 and message in done.stderr, (path, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_extending_page_shows_the_tested_files():
    page = (DOCS / "extending.md").read_text()
    assert "```{literalinclude} examples/scaled_sinusoidal.py" in page
    assert "```{literalinclude} examples/rotate_task.py" in page


@pytest.mark.long
def test_site_builds_without_warnings(tmp_path):
    """The whole site, warnings as errors, as `tox -e docs` builds it (into a temporary folder)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("sphinxcontrib.bibtex")
    pytest.importorskip("furo")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"),
         str(DOCS), str(tmp_path / "html")],
        # a guard against a hung build, not a speed test: the build takes about 7 min on 2 idle cores beside the
        # rest of the suite, and CI's own limit (15 min for all of .ci/run) is the budget
        cwd=ROOT, capture_output=True, text=True, timeout=840,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    html = tmp_path / "html"
    for page in ("index", "quickstart", "protocol", "concepts", "leaderboard", "results", "extending",
                 "distributed", "api",
                 "cite", "references", "_generated/encodings/rope", "_generated/tasks/copy",
                 "_generated/results/standard"):
        assert (html / f"{page}.html").exists(), page
    assert "<math" in (html / "protocol.html").read_text()  # formulas are MathML written at build time
    for page in html.rglob("*.html"):
        problems = offline_problems(page.read_text())
        assert not problems, f"{page.relative_to(html)}: {problems[:3]}"
    for sheet in html.rglob("*.css"):  # fonts and imports of the stylesheets (a theme's or ours)
        remote = REMOTE_CSS.findall(sheet.read_text())
        assert not remote, f"{sheet.relative_to(html)} loads {remote[0]} from the network"
    # a number cell of the main table is marked, whatever other classes (its column's alignment) come first
    assert re.search(r'class="[^"]*\bpebench-number\b', (html / "_generated/results/standard.html").read_text())
    # people's words (issue 39): a replication's boards under its declared title, tasks and encodings by label
    # (the leaderboard page leads with the reference's boards; the other suites' are on "every table", issue 65)
    assert "Replication: Kazemnejad et al. 2023 — extrapolation tiers" in \
        (html / "leaderboard_tables.html").read_text()
    assert "Reverse string (<code" in (html / "_generated/tasks/reverse_string.html").read_text()
    assert "reverse string" in (html / "tasks.html").read_text() and "T5 bias" in (html / "index.html").read_text()


#: a script, stylesheet, font, image or frame the browser would fetch from another host
REMOTE_ASSET = re.compile(
    r'<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href|srcset)=["\']?(?:https?:)?//[^"\'\s>]*')
#: ``url(https://...)`` or ``@import "https://..."`` in CSS (a web font from a CDN)
REMOTE_CSS = re.compile(r'(?:url\(\s*["\']?|@import\s+["\'])(?:https?:)?//[^"\')\s]*')


def offline_problems(source: str) -> list[str]:
    """What in one built HTML page needs the network or shows raw TeX: remote scripts, stylesheets, fonts or
    images, and TeX (``$...$``, ``\\frac``) outside ``<math>``, code and scripts."""
    problems = [f"loads {m} from the network" for m in REMOTE_ASSET.findall(source)]
    for style in re.findall(r"(?s)<style\b.*?</style>", source):
        problems += [f"loads {m} from the network" for m in REMOTE_CSS.findall(style)]
    prose = re.sub(r"<[^>]+>", "", re.sub(r"(?s)<(pre|code|script|style|math)\b.*?</\1>", "", source))
    problems += [f"shows raw TeX {m!r}" for m in re.findall(r"\\[a-zA-Z]{2,}|\$[^$\s][^$]*\$", prose)]
    return problems


def test_offline_check_catches_cdn_assets_and_raw_tex():
    """The check of test_site_builds_without_warnings fails on what a MathJax-from-a-CDN site shows."""
    assert offline_problems('<p>Formula: <math><mi>x</mi></math>, code <code>$\\frac$</code></p>') == []
    assert offline_problems('<link rel="stylesheet" href="_static/pebench.css"><a href="https://x.org">x</a>') == []
    bad = ['<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>',
           "<link rel='stylesheet' href='//fonts.googleapis.com/css?family=Roboto'>",
           '<style>@font-face { src: url("https://fonts.gstatic.com/a.woff2") }</style>',
           '<p>the score $q^\\top k$ decays</p>', r'<p>\(\frac{1}{2}\)</p>']
    for source in bad:
        assert offline_problems(source), source


def test_protocol_step_caps_are_grouped_by_cap():
    """The experiments table names each step cap once with its tasks, not one "task (arch): steps" per cell."""
    from types import SimpleNamespace

    from pebench.render.protocol_tables import steps_text

    def spec(task, arch, steps):
        return SimpleNamespace(task=task, arch=arch, train=SimpleNamespace(steps=steps))

    both = [spec(t, a, n) for t, n in (("copy", 2500), ("parity_check", 1000), ("reverse", 2500))
            for a in ("decoder", "encoder")]
    assert steps_text(both) == "2500: copy, reverse; 1000: parity_check"
    one_arch = steps_text([*both, spec("sort", "decoder", 1000)])
    assert one_arch == "2500: copy, reverse; 1000: parity_check, sort (decoder)"


@pytest.fixture(scope="module")
def reported_rerun(tmp_path_factory) -> tuple[Path, Path]:
    """``results/standard`` and its local rerun ``results/local/standard`` (one broken seed), each with the report
    ``pebench report`` writes (the rerun's compared with the reference beside it)."""
    from test_report import copy_results, edit_runs
    from test_results import write_synthetic_results

    from pebench.report import write_report

    results = tmp_path_factory.mktemp("site") / "results"
    reference = write_synthetic_results(results / "standard")
    local = copy_results(reference, results / "local" / "standard")
    shutil.copy(reference / "manifest.json", local / "manifest.json")
    edit_runs(local, {"task": "copy", "encoding": "alibi", "seed": 0}, "token_acc", lambda s: s * 0)
    write_report(reference)
    write_report(local)
    return reference, local


def test_local_rerun_page_shows_the_per_cell_comparison_and_stacked_figures(gen, reported_rerun, tmp_path):
    """The local-rerun page: the verdict, then the report's row per cell and metric, and each figure of the
    reference above the rerun's at the content width (not ~350 px side by side)."""
    reference, local = reported_rerun
    srcdir = tmp_path / "docs"
    pages = gen.rerun_page(local, reference, srcdir / "_generated" / "results" / gen.LOCAL_PAGE, srcdir)
    page = gen.LOCAL_PAGE
    assert list(pages) == [page, *(f"{page}-{part}" for part in ("comparison", "figures", "tables", "findings",
                                                                  "provenance"))]
    text = pages[page]
    comparison = json.loads((local / "report.json").read_text())["rerun"]["comparison"]
    verdict = comparison["verdict"].replace("{folder}", gen.shown(local)).replace("{reference}", gen.shown(reference))
    assert f"## Reproduction check\n\n{verdict}\n\n{comparison['method']}" in text
    assert not any(line in text for line in markdown_rows(comparison["rows"]))  # on the comparison page
    assert all(line in pages[f"{page}-comparison"] for line in markdown_rows(comparison["rows"]))
    assert "## Provenance of the rerun" in pages[f"{page}-provenance"]
    lead = json.loads((local / "report.json").read_text())["lead_figure"]
    assert re.findall(r"^:::\{figure\} \S+/(\S+)\.svg", text, flags=re.M) == [lead, lead]  # reference, rerun
    figures_page = pages[f"{page}-figures"]
    assert ":::{list-table}" not in figures_page and "**Reference:**" in figures_page
    assert figures_page.index("**Reference:**") < figures_page.index("**Local rerun:**")
    figures = re.findall(r"^:::\{figure\} (\S+)", figures_page, flags=re.M)
    assert len(figures) > 2 and any("/reference/" in f for f in figures) and any("/local/" in f for f in figures)


def test_citation_cff_references_the_task_battery_as_the_bibliography_does(gen):
    """CITATION.cff names the source of the task battery (Deletang et al. 2023), with the title and year of
    its docs/references.bib entry, and the cite page's BibTeX has every task source."""
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    entries = [" ".join(re.sub(r"[{}]", "", text).split()) for text in gen.bib_entries().values()]
    for reference in cff.get("references", []):
        match = [text for text in entries if f"title = {reference['title']}," in text]
        assert match, f"{reference['title']!r} is not in docs/references.bib"
        assert f"year = {reference['year']}" in match[0]
    assert "Neural Networks and the Chomsky Hierarchy" in {r["title"] for r in cff["references"]}
    cite = gen.cite_include()
    for name in tasks.names():
        key = tasks.TASKS.meta(name).get("paper")
        if key:
            assert re.search(rf"^@\w+\{{{key},", cite, flags=re.M), f"task {name}: {key} not on the cite page"


def test_the_reference_is_listed_before_the_local_rerun(gen, reported_rerun, tmp_path):
    """The Results page lists the reference first, then its local rerun, then the other suites by name."""
    reference, local = reported_rerun
    results = tmp_path / "results"
    for folder, name in ((reference, "standard"), (local, "local/standard")):
        shutil.copytree(folder, results / name)
    pages = gen.generate_results(results, tmp_path / "docs" / "_generated" / "results", tmp_path / "docs")
    assert pages == ["standard", gen.LOCAL_PAGE]
    shutil.copytree(reference, results / "extended")
    pages = gen.generate_results(results, tmp_path / "docs" / "_generated" / "results", tmp_path / "docs")
    assert pages == ["standard", gen.LOCAL_PAGE, "extended"]
    toc = gen.results_toc(pages)
    assert toc.index("results/standard\n") < toc.index("results/standard-local-rerun") < toc.index("extended")


def test_the_site_shows_the_committed_reports_and_copies_each_once_per_build(gen, reported_rerun, tmp_path,
                                                                              monkeypatch):
    """A build never writes a report: it copies the committed one's files, once per build for the reference that
    sits beside its rerun (the rerun page shows the reference page's figures), again when the copies are gone or
    for another source tree."""
    import pebench.report

    monkeypatch.setattr(pebench.report, "write_report", lambda *args, **kwargs: pytest.fail("the site reported"))
    import pebench.store.report_file

    copied, read = [], pebench.store.report_file.artifact_bytes
    monkeypatch.setattr(pebench.store.report_file, "artifact_bytes",
                        lambda folder, relative: copied.append(folder / relative)
                        or read(folder, relative))
    reference, local = reported_rerun
    out, srcdir = tmp_path / "docs" / "_generated" / "results", tmp_path / "docs"
    gen.generate_results(reference.parent, out, srcdir)
    sources = {path.parents[1] if path.parent.name in ("figures", "tables", "summary") else path.parent
               for path in copied}
    assert sources == {reference, local}
    assert len(copied) == len(set(copied))  # the reference's files once, for both pages
    page = (out / f"{gen.LOCAL_PAGE}.md").read_text()
    assert "_generated/results/standard/figures/" in page and not (out / gen.LOCAL_PAGE / "reference").exists()
    copied.clear()
    shutil.rmtree(out)  # as generate() empties the folder before it writes the results pages (buildtree.regenerated)
    gen.generate_results(reference.parent, out, srcdir)
    assert copied  # copies gone: copied again
    copied.clear()
    gen.generate_results(reference.parent, tmp_path / "other" / "_generated" / "results", tmp_path / "other")
    assert {path.parents[1] for path in copied if path.parent.name == "figures"} == {reference, local}


def test_a_build_checks_each_folders_report_once_and_a_later_build_again(gen, reported_rerun, monkeypatch):
    """Within one build (``one_build``, which ``generate`` runs under) a folder's report is read and checked
    against its run files once, however many pages ask; outside it, and in the next build, every time."""
    import pebench_docs.common as common

    reference, _ = reported_rerun
    checked, check = [], common.current_report
    monkeypatch.setattr(common, "current_report",
                        lambda folder, *required: checked.append(folder) or check(folder, *required))
    with gen.one_build():
        first = [gen.report_index(reference) for _ in range(3)]
    assert checked == [reference] and first[0] is first[2]
    with gen.one_build():
        gen.report_index(reference)
    gen.report_index(reference)
    gen.report_index(reference)
    assert checked == [reference] * 4


def test_a_results_folder_without_a_current_report_stops_the_build_with_one_line(gen, reported_rerun, tmp_path):
    from test_report import edit_runs

    reference, _ = reported_rerun
    results = tmp_path / "results"
    shutil.copytree(reference, results / "standard")
    (results / "standard" / "report.json").unlink()
    out, srcdir = tmp_path / "docs" / "_generated" / "results", tmp_path / "docs"
    with pytest.raises(RuntimeError, match=r"standard has no report.json: run pebench report .*standard") as error:
        gen.generate_results(results, out, srcdir)
    assert "\n" not in str(error.value)
    assert f"tox -e report -- {results / 'standard'}" in str(error.value)  # for a reader with tox and no pebench
    shutil.copy(reference / "report.json", results / "standard" / "report.json")
    gen.generate_results(results, out, srcdir)  # current again
    edit_runs(results / "standard", {"task": "copy", "encoding": "alibi", "seed": 0}, "token_acc", lambda s: s * 0)
    with pytest.raises(RuntimeError, match="report.json is older than the run files"):
        gen.generate_results(results, out, srcdir)


def test_a_stale_report_ends_the_build_with_its_one_line_and_no_traceback(monkeypatch, tmp_path):
    """Sphinx prints any exception of an extension in a box with a traceback ("please report to the Sphinx
    developers"); a folder without a current report is the reader's to mend, so the build exits with its line."""
    import pebench_docs

    from pebench.store.report_file import StaleReport

    def stale(srcdir, results):
        raise StaleReport("results/local/standard has no report.json: run pebench report results/local/standard")

    monkeypatch.setattr(pebench_docs, "generate", stale)
    app, config = SimpleNamespace(srcdir=str(tmp_path)), SimpleNamespace(myst_substitutions={})
    with pytest.raises(SystemExit) as ended:
        pebench_docs._on_config_inited(app, config)
    assert str(ended.value.code) == ("pebench_docs: results/local/standard has no report.json: run pebench report "
                                     "results/local/standard")
    assert app._pebench_build_lock is None  # released: the next build does not wait for it


def test_a_committed_rerun_gets_a_page_that_says_how_far_the_results_moved(gen, reported_rerun, tmp_path):
    """results/reruns/<name>/ (another machine, same suite): its own page after the local rerun, led by the
    summary its report read from both folders (:func:`pebench.report.reruns.rerun_summary`); the same summary is
    the ``reruns`` substitution, which says so when no rerun is committed."""
    from pebench.report import write_report

    reference, local = reported_rerun
    results = tmp_path / "results"
    assert gen.reruns_text(results).startswith("- No rerun of a suite on other hardware is committed")
    shutil.copytree(reference, results / "standard")
    rerun = results / gen.RERUNS / "gpu"
    shutil.copytree(local, rerun)
    write_report(rerun)
    pages = gen.generate_results(results, tmp_path / "docs" / "_generated" / "results", tmp_path / "docs")
    assert pages == ["standard", f"{gen.RERUNS}-gpu"]
    text = (tmp_path / "docs" / "_generated" / "results" / f"{gen.RERUNS}-gpu.md").read_text()
    assert text.startswith("# Rerun: `gpu`")
    summary = json.loads((rerun / "report.json").read_text())["rerun"]["summary"]
    shown = [line.replace("{folder}", gen.shown(rerun)) for line in summary]
    assert summary[0].startswith("`{folder}` reruns the `standard` suite")
    assert rerun_summary(rerun, reference, gen.ROOT, json.loads((rerun / "report.json").read_text())) == shown
    assert all(f"- {line}" in text for line in shown)
    assert text.index(f"- `{gen.shown(rerun)}` reruns") < text.index("## Reproduction check")
    assert gen.reruns_text(results) == f"- {{doc}}`Rerun gpu </_generated/results/{gen.RERUNS}-gpu>`: {' '.join(shown)}"
    (rerun / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": []}))
    with pytest.raises(ValueError, match="no manifest naming its suite"):
        rerun_reference(rerun.parent / "nowhere")


def test_a_linked_rerun_folder_or_manifest_stops_the_build_with_one_line(gen, reported_rerun, tmp_path):
    """A results folder is untrusted data (issue 38): the site lists results/reruns and reads a rerun's manifest
    through pebench.store, so a link (reruns/ itself, a rerun in it, its manifest) is refused on one line, never
    followed out of the folder, and the suite a manifest names becomes a path only when it is a plain name."""
    from pebench.store import ResultsError

    reference, local = reported_rerun
    results, out, srcdir = tmp_path / "results", tmp_path / "docs" / "_generated" / "results", tmp_path / "docs"
    shutil.copytree(reference, results / "standard")
    elsewhere = shutil.copytree(local, tmp_path / "elsewhere" / "gpu")
    (results / gen.RERUNS).mkdir()
    (results / gen.RERUNS / "gpu").symlink_to(elsewhere, target_is_directory=True)
    for show in (gen.rerun_folders, gen.reruns_text, lambda results: gen.generate_results(results, out, srcdir)):
        with pytest.raises(ResultsError, match=r"reruns/gpu is a symbolic link; pebench never follows") as error:
            show(results)
        assert "\n" not in str(error.value)
    (results / gen.RERUNS / "gpu").unlink()
    rerun = shutil.copytree(local, results / gen.RERUNS / "gpu")
    assert gen.rerun_folders(results) == [rerun] and rerun_reference(rerun) == results / "standard"
    (rerun / "manifest.json").unlink()
    (rerun / "manifest.json").symlink_to(elsewhere / "manifest.json")
    with pytest.raises(ResultsError, match=r"gpu/manifest.json: a symbolic link, not a manifest"):
        rerun_reference(rerun)
    (rerun / "manifest.json").unlink()
    (rerun / "manifest.json").write_text(json.dumps({"suite": "../elsewhere", "invocations": []}))
    with pytest.raises(ResultsError, match=r"'\.\./elsewhere' is not a plain file name"):
        rerun_reference(rerun)
    shutil.rmtree(results / gen.RERUNS)
    (results / gen.RERUNS).symlink_to(elsewhere.parent, target_is_directory=True)
    with pytest.raises(ResultsError, match=r"results/reruns is a symbolic link"):
        gen.rerun_folders(results)



def _kept(source: Path, target: Path) -> Path:
    """A committed results folder's run files, manifest and report copied to ``target`` (the report stays current:
    it records the digest of the same run files)."""
    shutil.copytree(source / "raw", target / "raw")
    for name in ("manifest.json", "report.json"):
        shutil.copy(source / name, target / name)
    return target


def test_a_replaced_reference_is_kept_whole_with_its_rerun_and_the_site_names_both(gen, tmp_path):
    """After a reference is replaced under a new protocol (issue 36), the old one and its rerun live on under
    ``results/archive/<name>/`` as a results folder of their own: the rerun still compares with the reference it
    reran, the leaderboard's stability sentence quotes it as such, the protocol page names what is kept, and a
    link in the archive is refused, never followed."""
    from pebench.render.protocol_tables import regeneration_text
    from pebench.store import ResultsError
    from pebench.store.report_file import archived_roots

    results = tmp_path / "results"
    archive = results / "archive" / "v2"
    committed = ROOT / "results" / "archive" / "v2"  # the v2 pair, once the v3 reference has replaced it
    committed = committed if committed.is_dir() else ROOT / "results"
    reference = _kept(committed / "standard", archive / "standard")
    _kept(committed / "reruns" / "standard-h100", archive / "reruns" / "standard-h100")
    version = json.loads((reference / "report.json").read_text())["results_version"]
    assert archived_roots(results) == [archive] and gen.rerun_folders(results) == []
    assert regeneration_text(results) == (
        "The earlier standard references are kept whole, so that their tables stay citable and `pebench report` "
        f"regenerates them: `results/archive/v2/standard` (standard {version}, 606 runs; its rerun standard-h100 "
        "beside it).")
    stability = gen.reruns_text(results)
    assert stability.startswith("- No rerun of a suite on other hardware is committed (")
    assert stability.count("\n- ") == 1  # one item each: no rerun of the current reference, the kept one
    kept = ("Kept with the standard reference it reran (standard " + version + ", "
            f"`{gen.report_file.display_path(reference, gen.ROOT)}`): ")
    assert kept in stability
    assert re.search(r"\d+ of \d+ cells reproduce the reference", stability.split(kept)[1])  # its own comparison
    (results / "archive" / "v3").symlink_to(tmp_path, target_is_directory=True)
    for show in (archived_roots, regeneration_text, gen.reruns_text):
        with pytest.raises(ResultsError, match=r"archive/v3 is a symbolic link"):
            show(results)


def test_results_of_an_earlier_protocol_say_so_above_their_boards():
    """The leaderboard's lead of a suite made under an earlier protocol says what its boards measure; one of the
    current protocol, or a report that records no version, gets no such sentence."""
    from pebench import protocol
    from pebench.render.results_text import earlier_protocol_text, report_protocol, tables_from_text

    assert report_protocol({"results_version": "v2-aaa7cfcc"}) == 2 and report_protocol({}) is None
    assert report_protocol({"results_version": "v2"}) is None  # no digest: not a results version
    old = earlier_protocol_text({"results_version": "v2-aaa7cfcc"})
    assert old.startswith("These results (v2-aaa7cfcc) were made under protocol v2's model and budget")
    assert "the audit that led to protocol v3" in old  # the audit of v2's budget, whichever protocol is in force
    if protocol.PROTOCOL > 3:  # a folder of v3 is not said to measure its budget: only that it is v3's answer
        v3 = earlier_protocol_text({"results_version": "v3-7d9b17de"})
        assert v3.startswith(f"These results (v3-7d9b17de) were made under protocol v3, and protocol "
                             f"v{protocol.PROTOCOL} is in force now") and "budget" not in v3
    assert earlier_protocol_text({"results_version": f"v{protocol.PROTOCOL}-0123abcd"}) == ""
    assert earlier_protocol_text({}) == ""
    folder = ROOT / "results" / "extended"  # made under protocol v2, and kept so
    report = json.loads((folder / "report.json").read_text())
    lead = tables_from_text(folder, ROOT, "/page", report)
    assert lead.endswith(earlier_protocol_text(report)) and "protocol v2's model" in lead
    assert lead.startswith("From `results/extended/tables/`")
    assert tables_from_text(folder, ROOT, "/page") == lead.removesuffix(" " + earlier_protocol_text(report))


def test_a_folder_without_an_mrr_leaderboard_says_why(tmp_path):
    """Protocol v4 writes no MRR ranking: its folder says so, not that it was reported before the leaderboard."""
    from pebench.protocol import MRR_LAST_PROTOCOL
    from pebench.render.results_text import no_leaderboard_text

    later = no_leaderboard_text(tmp_path, tmp_path, {"results_version": f"v{MRR_LAST_PROTOCOL + 1}-0123abcd"})
    assert later.startswith(f"*Protocol v{MRR_LAST_PROTOCOL + 1}, under which these results were made, ranks by the "
                            "extrapolation board alone")
    for report in ({"results_version": f"v{MRR_LAST_PROTOCOL}-0123abcd"}, {}, None):
        assert "reported before the leaderboard existed" in no_leaderboard_text(tmp_path, tmp_path, report)


def test_the_archive_page_shows_each_archived_reference_newest_first(gen, tmp_path):
    """Each reference a later protocol replaced (``results/archive/<vK>/<suite>``) gets its main table and protocol
    v2's MRR ranking where its report wrote one, with its results version, the newest first; copies land per archive."""
    from pebench.render.results_text import archived_references
    from pebench.store.report_file import archived_roots

    results = ROOT / "results"
    folders = archived_references(results)
    if not folders:
        pytest.skip("no archived reference is committed")
    archives = [folder.parent.name for folder in folders]
    assert archives == sorted(archives, reverse=True)  # the newest protocol's first
    assert {f.parent for f in folders} <= set(archived_roots(results))
    out = tmp_path / "docs" / "_generated" / "leaderboard"
    text = gen.archive_include(results, out, tmp_path / "docs")
    headings = [line for line in text.splitlines() if line.startswith("## `results/archive/")]
    assert headings == [f"## `results/archive/{folder.parent.name}/{folder.name}`" for folder in folders]
    for folder in folders:
        version = json.loads((folder / "report.json").read_text())["results_version"]
        assert f"(results version {folder.name} {version}, the name its tables are cited by)" in text
        assert (out / folder.parent.name / folder.name / "main.csv").exists()
    assert "### Length extrapolation: leaderboard (OOD token accuracy)" in text
    assert text.index("## `standard` suite") < text.index(headings[0])  # after the suites' rankings


def test_tox_bench_ends_with_the_verdict_and_the_page_to_read(gen):
    """`tox -e bench` (one command, :mod:`pebench.bench`) runs compare last (its verdict ends the log; a cell that
    does not reproduce fails nothing) and then names the site and the page."""
    import configparser

    from pebench import bench

    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    commands = [line.strip() for line in tox["testenv:bench"]["commands"].splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert len(commands) == 1 and commands[0].startswith("python -m pebench.bench ")
    assert "--out" not in commands[0]  # the bench's default: results/local/<suite> (-- --suite quick: its own)
    last = bench.bench_steps("results/local/standard", 2)[-1]
    assert last.argv[-3:] == ("compare", "results/local/standard", "results/standard") and not last.must_succeed
    assert "docs/_build/html/index.html" in bench.CLOSING
    assert f"docs/_build/html/_generated/results/{gen.LOCAL_PAGE}.html" in bench.CLOSING


def led_results(root: Path, **fields) -> Path:
    """:func:`fake_results` with what a results page leads with: a main table, a per-task table, two figures (the
    second the lead), the headline, a version and its citation, a protocol and summary data (``fields`` replace
    entries of its ``report.json``)."""
    folder = fake_results(root)
    (folder / "figures").mkdir()
    for stem in ("curves", "heatmap"):
        for ext in ("svg", "pdf"):
            (folder / "figures" / f"{stem}.{ext}").write_text("<svg/>" if ext == "svg" else "%PDF-1.4\n%%EOF\n")
    for stem, row in (("main", "| decoder | rope | 1 |"), ("per_task", "| copy | rope | 0.93 ± 0.02 |")):
        (folder / "tables" / f"{stem}.md").write_text(f"| a | b | c |\n|---|---|---|\n{row}\n")
        for ext in ("tex", "csv"):
            (folder / "tables" / f"{stem}.{ext}").write_text("x")
    (folder / "summary" / "cells.csv").write_text("x\n")

    def artifact(kind, stem, title, exts):
        return {"name": stem, "title": title, "caption": f"{title} caption.",
                "paths": {ext: f"{kind}/{stem}.{ext}" for ext in exts}}

    index = json.loads((folder / "report.json").read_text())
    fake_report(folder, index["findings"], **{
        "figures": [artifact("figures", "curves", "Accuracy vs length", ("svg", "pdf")),
                    artifact("figures", "heatmap", "OOD heatmap", ("svg", "pdf"))],
        "tables": [artifact("tables", "main", "Main results", ("csv", "md", "tex")),
                   artifact("tables", "per_task", "Per task", ("csv", "md", "tex"))],
        "main_table": "main", "lead_figure": "heatmap", "results_version": "v3-0123abcd",
        "citation": "@misc{pebench_standard}", "protocol": "length_extrapolation: trained on lengths 1-8.",
        "summaries": {"cells": "summary/cells.csv"}, **fields})
    return folder


def test_a_results_page_leads_with_the_main_table_and_one_figure_and_links_the_rest(gen, tmp_path):
    """Issue 39: a suite's page reads title, completeness, main table, the lead figure the report names, headline
    findings and the cite box; every figure, every table, every finding, the provenance and the protocol are on
    detail pages that its "More" list links."""
    folder = led_results(tmp_path / "results")
    srcdir = tmp_path / "docs"
    pages = gen.results_page(folder, srcdir / "_generated" / "results" / "standard", srcdir)
    details = ["standard-figures", "standard-tables", "standard-findings", "standard-provenance"]
    assert list(pages) == ["standard", *details]
    text = pages["standard"]
    index = json.loads((folder / "report.json").read_text())
    order = ["# Results: `standard` suite", "## Main results", "| decoder | rope | 1 |", "## OOD heatmap",
             ":::{figure} /_generated/results/standard/figures/heatmap.svg", "## Headline findings",
             *(f"- {finding}" for finding in index["headline"]), ":::{admonition} Cite these results", "## More"]
    assert [text.index(line) for line in order] == sorted(text.index(line) for line in order)
    assert text.count(":::{figure}") == 1 and "curves.svg" not in text and "Per task" not in text
    for absent in ("## Provenance", "## Protocol", "## Findings", "copy (decoder): best", "cells.csv"):
        assert absent not in text, absent
    assert all(f"<{page}>" in text[text.index("## More"):] for page in details)
    assert pages["standard-figures"].count(":::{figure}") == 2
    tables = pages["standard-tables"]
    assert tables.index("95% confidence interval") < tables.index("| copy | rope | 0.93 ± 0.02 |")
    assert "## Main results" in tables and "`cells </_generated/results/standard/summary/cells.csv>`" in tables
    assert all(f"- {finding}" in pages["standard-findings"] for finding in index["findings"])
    assert "## Provenance" in pages["standard-provenance"] and "trained on lengths 1-8" in pages["standard-provenance"]
    # each detail page links back by the page's title: a title in a {doc} link could not hold the suite's `code`
    assert all(page.startswith("# ") and "From {doc}`/_generated/results/standard`." in page
               for name, page in pages.items() if name != "standard")


def test_a_report_that_names_no_lead_figure_leads_with_its_first(gen, tmp_path):
    """A report written before ``lead_figure`` was recorded: the page leads with its first figure."""
    folder = led_results(tmp_path / "results")
    index = json.loads((folder / "report.json").read_text())
    del index["lead_figure"]
    (folder / "report.json").write_text(json.dumps(index))
    srcdir = tmp_path / "docs"
    text = gen.results_page(folder, srcdir / "_generated" / "results" / "standard", srcdir)["standard"]
    assert text.count(":::{figure}") == 1 and "/figures/curves.svg" in text


def test_two_builds_of_one_tree_take_turns_on_its_generated_sources(gen, tmp_path):
    # the second build waits for the first's lock, says so, and gives up with one line naming the holder
    first = gen.hold_build_lock(tmp_path)
    with pytest.raises(RuntimeError, match=r"another build of .* holds \.pebench-build\.lock \(pid \d+\)"):
        gen.hold_build_lock(tmp_path, timeout=0.2, poll=0.05)
    first.close()
    second = gen.hold_build_lock(tmp_path, timeout=0.2, poll=0.05)  # free again once the first has finished
    second.close()


def test_task_caps_name_each_cap_with_its_tasks():
    from pebench.render.protocol_tables import task_caps_text

    assert task_caps_text({}) == "none"
    caps = {("decoder", "copy"): 5000, ("encoder", "copy"): 5000, ("decoder", "reverse"): 5000,
            ("encoder", "reverse"): 5000, ("decoder", "sort"): 2500}
    assert task_caps_text(caps) == "5000 for copy and reverse; 2500 for sort (on the decoder)"


def test_the_docs_give_each_suite_its_latest_measured_time(gen, tmp_path):
    """suites.csv keeps every measurement; the pages quote the last one of each suite."""
    import pandas as pd

    folder = tmp_path / "performance"
    folder.mkdir()
    rows = [("standard", 606, 5664.0, "2026-11-23"), ("smoke", 60, 13.0, "2026-11-23"),
            ("standard", 606, 4484.0, "2026-11-24")]
    pd.DataFrame([dict(suite=suite, workers=2, runs=runs, wall_seconds=wall, wall_minutes=wall / 60, date=date)
                  for suite, runs, wall, date in rows]).to_csv(folder / "suites.csv", index=False)
    times = gen.protocol_tables.suite_time_values(tmp_path / "performance")
    assert times["standard_time"].startswith("606 runs in 75 min with 2 workers")
    assert "2026-11-24" in times["standard_time"]
    from pebench.protocol import SCALES

    now = SCALES["standard"]["protocol"]  # the protocol in force, named
    assert times["standard_scope"].startswith(f"That was protocol v2's standard suite; protocol v{now}'s, of ")
    assert times["smoke_time"].startswith("60 runs in 13 s")
    # 606 runs: a measurement of protocol v2's suite, judged by v2's budget and battery (read from v2's runs)
    assert times["standard_budget"].startswith("over protocol v2's budget of 60 minutes by 15 min. It was not cut")
    assert times["standard_budget"].endswith("12 tasks, 3 seeds, every compared encoding")
    from pebench.render.protocol_tables import standard_budget_text

    assert standard_budget_text(59.6) == "within its budget of 60 minutes"
    from pebench.plan.experiment import suite_runs

    rows.append(("standard", len(suite_runs("standard")), 40000.0, "2026-11-30"))  # the suite in force
    pd.DataFrame([dict(suite=suite, workers=2, runs=runs, wall_seconds=wall, wall_minutes=wall / 60, date=date)
                  for suite, runs, wall, date in rows]).to_csv(folder / "suites.csv", index=False)
    times = gen.protocol_tables.suite_time_values(tmp_path / "performance")
    assert times["standard_budget"].startswith(f"the suite of protocol v{now}, whose scale is the one its pilots")


def test_fit_resolution_shows_the_rows_of_each_folders_report_under_one_lead(gen, tmp_path):
    folders = []
    for name, rows in (("standard", [["`{folder}`", "one token", 3, 2, 1, "0.960"]]),
                       ("extended", [["`{folder}`", "longer", 2, 1, 1, "0.970"]])):
        folder = tmp_path / name
        (folder / "raw").mkdir(parents=True)
        header = ["results", "answer", "fitted runs", "below 0.99", "below 0.98", "lowest"]
        fake_report(folder, fit_resolution={"sections": [{"lead": "Resolution.", "header": header, "rows": rows},
                                                         {"lead": "Unused.", "header": header, "rows": []}],
                                            "closing": "Closing."})
        folders.append(folder)
    text = gen.fit_resolution([*folders, tmp_path / "missing"])
    assert text.startswith("Resolution.\n\n| results | answer |") and text.endswith("\n\nClosing.")
    assert "Unused." not in text  # a section without rows (no fitted run of its criterion) is not shown
    assert f"| `{gen.shown(folders[0])}` | one token | 3 | 2 | 1 | 0.960 |" in text
    assert f"| `{gen.shown(folders[1])}` | longer | 2 | 1 | 1 | 0.970 |" in text
    assert "not in these results" in gen.fit_resolution([tmp_path / "missing"])
    fake_report(folders[1], fit_resolution={"sections": [{"lead": "Resolution under v3.", "header": ["results"],
                                                          "rows": [["`{folder}`"]]}], "closing": "Closing."})
    text = gen.fit_resolution(folders)  # two criteria: each with its own lead and rows
    assert text.startswith("Resolution.\n\n| results | answer |") and "\n\nResolution under v3.\n\n| results |" in text
    assert text.count(f"`{gen.shown(folders[1])}`") == 1 and text.endswith("\n\nClosing.")


def test_the_replication_and_pilot_pages_render_the_blocks_they_are_given(gen, tmp_path):
    import json

    results = tmp_path / "results"
    assert "not in these results" in gen.replications_include(results)
    assert "`python pilots/cap_pilot.py read`" in gen.pilot_reading(results / "pilots" / "cap_pilot.json",
                                                                     "Step-cap pilot", "pilots/cap_pilot.py")
    blocks = [dict(kind="heading", level=2, text="Replication: a paper"), dict(kind="text", text="A **finding**."),
              dict(kind="table", header=["encoding", "tau"], rows=[["NoPE", "0.69"]]),
              dict(kind="list", items=["`arm`: what it changes"]), dict(kind="code", language="bash", lines=["run"])]
    from pebench.store.report_file import DIGEST_KEY, raw_digest

    (results / "replication" / "raw").mkdir(parents=True)
    report = {**page_fields(), "replications": [{"blocks": blocks}], DIGEST_KEY: "older"}
    (results / "replication" / "report.json").write_text(json.dumps(report))
    with pytest.raises(RuntimeError, match="report.json is older than the run files"):
        gen.replications_include(results)  # a report not made from the run files there now is not shown
    report[DIGEST_KEY] = raw_digest(results / "replication")
    (results / "replication" / "report.json").write_text(json.dumps(report))
    assert gen.replications_include(results) == ("## Replication: a paper\n\nA **finding**.\n\n| encoding | tau |\n"
                                                 "|---|---|\n| NoPE | 0.69 |\n\n\n- `arm`: what it changes\n\n"
                                                 "```bash\nrun\n```\n")
    (results / "pilots").mkdir()
    (results / "pilots" / "cap_pilot.json").write_text(json.dumps({"blocks": blocks[1:2]}))
    assert gen.pilot_reading(results / "pilots" / "cap_pilot.json", "Step-cap pilot", "pilots/cap_pilot.py") == \
        "A **finding**.\n"
    with pytest.raises(ValueError, match="kind 'figure' cannot be rendered"):
        gen.markdown_lines([dict(kind="figure")])
    # blocks read from a folder may come from anyone: one of the wrong shape is refused on one line
    for block, said in ((dict(kind="table", header=["a"], rows=5), "a table block's 'rows' is not rows of cells"),
                        (dict(kind="heading", level="2", text="x"), "a heading block's 'level' is not a level (1-6)"),
                        (dict(kind="code", language="bash"), "a code block's 'lines' is not a list of texts"),
                        ("text", "a block is not an object")):
        with pytest.raises(ValueError, match=re.escape(said)):
            gen.markdown_lines([block])
    report["replications"] = [{"heading": "x"}]
    (results / "replication" / "report.json").write_text(json.dumps(report))
    with pytest.raises(RuntimeError, match="its 'replications' is not a list of replication sections"):
        gen.replications_include(results)


@pytest.mark.usefixtures("cited_plugins")
def test_a_plugin_encoding_shows_the_doi_or_citation_it_was_registered_with(gen, tmp_path):
    """An encoding whose paper pebench's bibliography does not hold is cited by its DOI (a link) or as written,
    in the encodings table and on its page; a key of the bibliography stays a citation of it."""
    link = "[doi:10.5555/12345](https://doi.org/10.5555/12345)"
    table = gen.encodings_table()
    assert link in table and "Smith and Lee (2025). My encoding. arXiv 2501.01234" in table
    assert "{cite:t}`su2021roformer`" in table
    page = gen.encoding_page("doi_pe", tmp_path / "_generated", srcdir=tmp_path)
    assert f"| paper | {link} |" in page


def test_encoding_and_task_pages_lead_with_the_main_table_boards_and_two_figures_and_link_all_results(gen, tmp_path):
    """A page shows the reference suite's main table and board rows and one figure per architecture; every row
    and figure is on its orphan "All results" page (issue 39: pages a researcher reads)."""
    results = tmp_path / "results"
    folder = fake_results(results)
    main = {"header": ["Arch", "Encoding"], "rows": [["decoder", "rope"]]}
    per_task = {"header": ["Task", "Encoding"], "rows": [["copy", "rope"]]}
    curves = [f"length_extrapolation_{arch}_acc_part{k}" for arch in ("decoder", "encoder") for k in (1, 2)]
    entries = {"encoding": {"rope": {"appearances": [["length_extrapolation", "decoder"],
                                                     ["length_extrapolation", "encoder"]],
                                     "tables": {"main": main, "length_extrapolation_decoder": per_task},
                                     "figures": {name: "Look for rope." for name in curves}}}, "task": {}}
    fake_report(folder, entries=entries, main_table="main",
                tables=[{"name": "main", "title": "Main results", "caption": "", "paths": {}},
                        {"name": "length_extrapolation_decoder", "title": "Per task", "caption": "", "paths": {}}],
                figures=[*({"name": name, "title": name, "caption": "", "paths": {"svg": f"figures/{name}.svg"}}
                           for name in curves),
                         {"name": "other", "title": "Other", "caption": "", "paths": {"svg": "figures/other.svg"}}])
    lines = gen.results_links("encoding", "rope", results)
    assert lines[:2] == ["## In the results", ""] and lines[4:8] == [
        "### standard results", "",
        "{doc}`The standard results </_generated/results/standard>`: Length extrapolation, decoder; "
        "Length extrapolation, encoder.", ""]
    text = "\n".join(lines)
    assert "#### Main results\n\n| Arch | Encoding |\n|---|---|\n| decoder | rope |" in text
    assert "Per task" not in text  # per-task rows are on the all-results page
    assert text.count(":::{figure}") == 2 and "decoder_acc_part1.svg" in text and "encoder_acc_part1.svg" in text
    assert "**length_extrapolation_decoder_acc_part1.** Look for rope." in text
    assert lines[-2] == ("{doc}`All results for RoPE </_generated/encoding_results/rope>`: every suite, every table "
                         "row and every figure that draws it.")
    page = gen.all_results_page("encoding", "rope", results)
    assert page.startswith("---\norphan: true\n---\n\n# All results for RoPE (`rope`)")
    assert "## standard results" in page and "### standard" not in page  # one level below the title
    assert "### Per task" in page and "### Main results" in page and "other.svg" not in page
    assert page.count(":::{figure}") == 4  # every figure that draws it, none that does not
    assert "Not part of the committed reference results" in gen.results_links("task", "copy", results)[2]
    assert "--task copy --filter task=copy` runs it" in gen.results_links("task", "copy", results)[2]
    assert "`pebench evaluate fire` runs" in gen.results_links("encoding", "fire", results)[2]
    assert gen.all_results_page("task", "copy", results) is None
