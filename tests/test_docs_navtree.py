"""The sidebar's faster navigation tree (``docs/_ext/navtree.py``) draws the same HTML as Sphinx's own.

A small furo project, with what the site's tables of contents hold (nested toctrees, a hidden one, sections at
three depths, a toctree under a section, described objects whose entries join the table of contents), is built
twice, without and with the extension; every page must come out byte for byte the same, and the tables of
contents the sidebar reads must be cut to document titles and toctrees.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from docutils import nodes
from sphinx import addnodes

EXT = Path(__file__).resolve().parent.parent / "docs" / "_ext"
sys.path.insert(0, str(EXT))
navtree = pytest.importorskip("navtree")
Sphinx = pytest.importorskip("sphinx.application").Sphinx

PAGES = {
    "index": "Home\n====\n\nIntro.\n\nFirst\n-----\n\n.. toctree::\n\n   guide\n   api/index\n\n"
             "Second\n------\n\nText.\n\n.. toctree::\n   :hidden:\n\n   hidden\n",
    "guide": "Guide\n=====\n\nA\n-\n\nB\n~\n\nC\n^\n\nD\n-\n\n.. toctree::\n\n   deep\n",
    "deep": "Deep\n====\n\nOne\n---\n\nTwo\n---\n",
    "hidden": "Hidden\n======\n\nSection\n-------\n",
    "api/index": "API\n===\n\n.. py:function:: alpha(x)\n\n   Alpha.\n\n.. py:class:: Beta\n\n"
                 "   .. py:method:: gamma()\n\n      Gamma.\n\n.. toctree::\n\n   more\n   third\n   /deep\n",
    "api/more": "More\n====\n\n.. py:function:: delta()\n\n   Delta.\n",
    "api/third": "Third\n=====\n\n.. toctree::\n\n   fourth\n",
    "api/fourth": "Fourth\n======\n",
}


def build(root: Path, extensions: list[str]) -> tuple[dict[str, bytes], bool, int]:
    """Build the project of :data:`PAGES` under ``root`` with furo and ``extensions``: every page's HTML, whether
    the sidebar read cut tables of contents, and how many sidebar trees Sphinx drew."""
    source = root / "source"
    for name, text in PAGES.items():
        (source / name).with_suffix(".rst").parent.mkdir(parents=True, exist_ok=True)
        (source / name).with_suffix(".rst").write_text(text)
    (source / "conf.py").write_text(f"extensions = {extensions!r}\nhtml_theme = 'furo'\nproject = 'p'\n")
    out = root / "html"
    app = Sphinx(str(source), str(source), str(out), str(root / "doctrees"), "html", status=None, warning=None,
                 freshenv=True, warningiserror=True)
    app.build()
    pages = {path.relative_to(out).as_posix(): path.read_bytes() for path in sorted(out.rglob("*.html"))}
    return pages, getattr(app, "_pebench_cut_tocs", None) is not None, len(getattr(app, "_pebench_sidebars", {}))


def test_the_sidebar_is_the_same_html_with_the_cut_tables(tmp_path):
    plain, plain_was_cut, _ = build(tmp_path / "plain", [])
    cut, was_cut, drawn = build(tmp_path / "cut", ["navtree"])
    assert was_cut and not plain_was_cut  # furo's sidebar call went through the wrapper
    assert drawn == 2  # one tree per folder (the top and api/), each page's marks put back into it
    assert set(plain) == set(cut) and len(plain) == len(PAGES) + 2  # the pages, genindex and search
    different = [name for name in plain if plain[name] != cut[name]]
    assert not different, f"navtree changed the HTML of {different}"
    # the sidebar holds every page, the hidden one too (furo's call includes hidden toctrees); a page in two
    # toctrees is marked in both, three levels down too
    assert b'href="hidden.html"' in cut["index.html"] and b'href="../deep.html"' in cut["api/more.html"]
    assert cut["deep.html"].count(b'class="current reference internal" href="#"') == 2
    assert b'class="toctree-l3 current current-page"' in cut["api/fourth.html"]


def test_a_cut_table_keeps_titles_and_toctrees_only():
    toc = nodes.bullet_list()
    entry = nodes.list_item("", addnodes.compact_paragraph("", "", nodes.reference("", "Title", refuri="x")))
    sub = nodes.bullet_list()
    section = nodes.list_item("", addnodes.compact_paragraph("", "", nodes.reference("", "S", anchorname="#s")))
    deeper = nodes.bullet_list("", addnodes.toctree(entries=[(None, "y")]))
    section += deeper
    sub += section
    sub += nodes.list_item("", addnodes.compact_paragraph("", "", nodes.reference("", "T", anchorname="#t")))
    entry += sub
    toc += entry
    cut = navtree.titles_only_toc(toc)
    assert [type(node).__name__ for node in cut.findall()] == [
        "bullet_list", "list_item", "compact_paragraph", "reference", "Text", "bullet_list", "toctree"]
    assert len(list(toc.findall(nodes.list_item))) == 3  # the environment's table is left whole
    # a table whose shape depends on the build's tags is not cut
    toc += addnodes.only("", expr="html")
    assert navtree.titles_only_toc(toc) is None


def test_a_second_build_in_one_process_cuts_the_tables_it_read_again(tmp_path):
    """The cut tables are forgotten whenever the environment is updated: a title changed between two builds of
    one application shows in the sidebar of the page read again, not the old title."""
    build(tmp_path, ["navtree"])
    source = tmp_path / "source"
    app = Sphinx(str(source), str(source), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html", status=None,
                 warning=None, warningiserror=True)
    app.build()  # the first build's environment, nothing to read: its tables are cut
    (source / "deep.rst").write_text(PAGES["deep"].replace("Deep\n====", "Deeper\n======"))
    app.build()
    sidebar = (tmp_path / "html" / "deep.html").read_text().split('class="sidebar-tree"')[1].split("</ul>")[0]
    assert "Deeper" in sidebar


def test_marks_come_off_and_go_back_exactly():
    """A page's tree without its marks is its folder's tree (what a sibling page's shows, unmarked); marking it again
    for the page gives the page's tree back, a link to one of its sections included."""
    box = ('<input aria-label="Toggle" {}class="toctree-checkbox" id="toctree-checkbox-1" name="toctree-checkbox-1" '
           'role="switch" type="checkbox"/><label for="toctree-checkbox-1"></label>')
    drawn_for_b = (
        '<ul class="current"><li class="toctree-l1 current has-children"><a class="reference internal" '
        'href="index.html">Top</a>' + box.format('checked="" ') + '<ul class="current">'
        '<li class="toctree-l2"><a class="reference internal" href="a.html">A</a></li>'
        '<li class="toctree-l2 current current-page"><a class="current reference internal" href="#">B</a></li>'
        '<li class="toctree-l2"><a class="reference internal" href="#part">B, a part</a></li>'
        '</ul></li><li class="toctree-l1"><a class="reference external" href="https://b.html">B.html</a></li></ul>')
    drawn_for_a = (
        '<ul class="current"><li class="toctree-l1 current has-children"><a class="reference internal" '
        'href="index.html">Top</a>' + box.format('checked="" ') + '<ul class="current">'
        '<li class="toctree-l2 current current-page"><a class="current reference internal" href="#">A</a></li>'
        '<li class="toctree-l2"><a class="reference internal" href="b.html">B</a></li>'
        '<li class="toctree-l2"><a class="reference internal" href="b.html#part">B, a part</a></li>'
        '</ul></li><li class="toctree-l1"><a class="reference external" href="https://b.html">B.html</a></li></ul>')
    shared = navtree.unmarked(drawn_for_b, "b.html")
    assert shared == navtree.unmarked(drawn_for_a, "a.html")
    assert "current" not in shared and "checked" not in shared
    assert navtree.marked(shared, "b.html") == drawn_for_b
    assert navtree.marked(shared, "a.html") == drawn_for_a
    assert navtree.marked(shared, "elsewhere.html") == shared  # a page the tree does not hold: nothing marked
