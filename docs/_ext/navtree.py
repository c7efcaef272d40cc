"""The sidebar's navigation tree, computed from the tables of contents that it keeps.

Furo draws the sidebar of every page from ``toctree(collapse=False, titles_only=True, maxdepth=-1,
includehidden=True)``. Sphinx answers that call by copying the whole table of contents of every document (about
2,900 entries on this site, 1,280 of them API objects) and then deleting all but each document's title entries
and the toctrees under them, once per page: a third of the site's build time. This extension gives that one call
tables of contents already cut the way ``titles_only`` cuts them (:func:`titles_only_toc`), so Sphinx copies
about 300 entries instead of 2,900, and the sidebar is the same HTML. Every other call, and every table of
contents kept in the environment, is left as it is.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx import addnodes


def titles_only_toc(toc: nodes.bullet_list) -> nodes.bullet_list | None:
    """What Sphinx's ``titles_only`` keeps of one document's table of contents ``toc``, or None where it cannot
    be cut without a difference (an ``only`` node, whose children depend on the build's tags).

    Sphinx keeps each top-level entry's paragraph and replaces the entry's sub-list by the toctree nodes found
    anywhere under it, in document order, or drops the sub-list where there are none
    (``sphinx.environment.adapters.toctree._entries_from_toctree``). The cut keeps the same, so that Sphinx's own
    cut, applied to it, changes nothing.
    """
    if any(True for _ in toc.findall(addnodes.only)):
        return None
    cut = toc.copy()
    for entry in toc.children:
        if not (isinstance(entry, nodes.list_item) and len(entry) == 2 and isinstance(entry[1], nodes.bullet_list)):
            cut += entry.deepcopy()  # nothing to cut (a title alone), or a shape Sphinx's cut is left to handle
            continue
        kept = entry.copy()
        kept += entry[0].deepcopy()
        subtrees = [node.deepcopy() for node in entry[1].findall(addnodes.toctree)]
        if subtrees:
            sub_list = entry[1].copy()
            sub_list.extend(subtrees)
            kept += sub_list
        cut += kept
    return cut


def _cut_tocs(app: Any) -> dict[str, nodes.bullet_list]:
    """The environment's tables of contents cut by :func:`titles_only_toc` (each left whole where it cannot be
    cut), computed once per build's writing: they are forgotten when the environment is updated (``env-updated``,
    after every reading), so a table that a build read again is never cut from its old version."""
    kept = getattr(app, "_pebench_cut_tocs", None)
    if kept is None:
        tocs = app.env.tocs
        cut = {docname: titles_only_toc(toc) for docname, toc in tocs.items()}
        kept = app._pebench_cut_tocs = {docname: toc if cut[docname] is None else cut[docname]
                                        for docname, toc in tocs.items()}
    return kept


def _forget_cut_tocs(app: Any, env: Any) -> None:
    app._pebench_cut_tocs = None


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Wrap the page's ``toctree`` function so that the sidebar's call reads the cut tables of contents."""
    toctree = context.get("toctree")
    if toctree is None:
        return

    def sidebar_toctree(**kwargs: Any) -> str:
        # only where the cut is exact: titles only, nothing collapsed, no depth limit (furo's sidebar call)
        if not (kwargs.get("titles_only") and not kwargs.get("collapse", True) and kwargs.get("maxdepth", 0) <= 0):
            return toctree(**kwargs)
        env = app.env
        whole = env.tocs
        env.tocs = _cut_tocs(app)
        try:
            return toctree(**kwargs)
        finally:
            env.tocs = whole

    context["toctree"] = sidebar_toctree


def setup(app: Any) -> dict[str, Any]:
    """Register the wrapper before furo's own page-context handler (priority 500) reads ``toctree``, and forget the
    cut tables whenever the environment is updated."""
    app.connect("html-page-context", _on_page_context, priority=400)
    app.connect("env-updated", _forget_cut_tocs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
