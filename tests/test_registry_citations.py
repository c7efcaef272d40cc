"""The BibTeX the cite page shows (:mod:`pebench.render.registry_tables`): pebench's own from ``CITATION.cff`` and each
paper the registries cite, once, under the first encoding or the tasks that cite it."""

from __future__ import annotations

from pebench import encodings, tasks
from pebench.render.registry_tables import bib_entries, cited_papers, suite_bibtex


def test_each_cited_paper_of_the_bibliography_is_listed_once_under_who_cites_it_first():
    entries = bib_entries()
    papers = cited_papers(entries)
    keys = [key for _, key in papers]
    assert len(keys) == len(set(keys)) and set(keys) <= set(entries)
    first = encodings.names()[0]
    assert papers[0] == (f"{encodings.meta(first)['paper']} (`{first}`)", encodings.meta(first)["paper"])
    chomsky = [name for name in tasks.names() if tasks.TASKS.meta(name).get("paper") == "deletang2023chomsky"]
    assert ("deletang2023chomsky (tasks " + ", ".join(f"`{n}`" for n in chomsky[:6])
            + f" and {len(chomsky) - 6} more)", "deletang2023chomsky") in papers


def test_a_paper_outside_the_bibliography_is_left_out():
    assert cited_papers(set()) == []


def test_pebench_is_cited_from_its_citation_file(tmp_path):
    (tmp_path / "CITATION.cff").write_text("title: pebench\nabstract: A benchmark. More.\nversion: 9.9\n"
                                           "authors:\n  - family-names: Doe\n    given-names: Jo\n")
    text = suite_bibtex(tmp_path / "CITATION.cff")
    assert text.startswith("@software{pebench,\n  title    = {{pebench}: A benchmark},\n  author   = {Doe, Jo},")
    assert "  version  = {9.9}" in text and text.endswith("\n}")
