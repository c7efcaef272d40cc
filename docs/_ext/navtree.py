"""The sidebar's navigation tree, computed from the tables of contents that it keeps.

Furo draws the sidebar of every page from ``toctree(collapse=False, titles_only=True, maxdepth=-1,
includehidden=True)``. Sphinx answers that call by copying the whole table of contents of every document (about
2,900 entries on this site, 1,280 of them API objects) and then deleting all but each document's title entries
and the toctrees under them, once per page: a third of the site's build time. This extension gives that one call
tables of contents already cut the way ``titles_only`` cuts them (:func:`titles_only_toc`), so Sphinx copies
about 300 entries instead of 2,900, and the sidebar is the same HTML. Every other call, and every table of
contents kept in the environment, is left as it is.

The sidebars of two pages in one folder differ only where Sphinx marks the page being drawn: its entry and the
entries and lists above it get the class ``current``, its link becomes ``#``, and furo then checks the boxes of
the marked entries and adds ``current-page`` to the last. So the tree is drawn (by Sphinx, then parsed and
rewritten by furo) once per folder, without marks (:func:`unmarked`), and each page's marks are put back into
furo's HTML (:func:`marked`): another third of the build's writing.
"""

from __future__ import annotations

import posixpath
import re
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
    kept = app._pebench_cut_tocs
    if kept is None:
        tocs = app.env.tocs
        cut = {docname: titles_only_toc(toc) for docname, toc in tocs.items()}
        kept = app._pebench_cut_tocs = {docname: toc if cut[docname] is None else cut[docname]
                                        for docname, toc in tocs.items()}
    return kept


def _forget_cut_tocs(app: Any, env: Any = None) -> None:
    app._pebench_cut_tocs = None
    app._pebench_sidebars = {}


#: the tags whose marks :func:`unmarked` and :func:`marked` read and write
_TAG = re.compile(r"<(/?)(ul|li|a|input)\b([^>]*)>")
_CLASS = re.compile(r'\sclass="([^"]*)"')
#: the classes furo adds to an entry, after Sphinx's
_FURO_CLASSES = ("has-children", "current-page")


def _classes(attrs: str) -> list[str]:
    found = _CLASS.search(attrs)
    return found.group(1).split() if found else []


def _with_classes(attrs: str, classes: list[str]) -> str:
    value = " ".join(classes)
    if _CLASS.search(attrs):
        return _CLASS.sub(lambda _: f' class="{value}"' if value else "", attrs, count=1)
    return f' class="{value}"{attrs}' if value else attrs


def unmarked(html: str, link: str) -> str:
    """The navigation tree ``html`` drawn for a page whose own link is ``link`` (its file name), with that page's
    marks taken out: the tree every page of its folder shares."""

    def unmark(tag: re.Match) -> str:
        close, name, attrs = tag.groups()
        if close:
            return tag.group(0)
        if name in ("ul", "li", "a") and {"current", "current-page"} & set(_classes(attrs)):
            attrs = _with_classes(attrs, [c for c in _classes(attrs) if c not in ("current", "current-page")])
        if name == "a":  # the page's own link, and a link to one of its sections (not in a titles-only tree)
            attrs = attrs.replace(' href="#', f' href="{link}#').replace(f' href="{link}#"', f' href="{link}"')
        elif name == "input":
            attrs = attrs.replace(' checked=""', "")
        return f"<{name}{attrs}>"

    return _TAG.sub(unmark, html)


def _links_and_branches(tags: list, link: str) -> tuple[list[int], set[int]]:
    """Of a navigation tree's ``tags``: the indices of the internal links to ``link``, and of every list and entry
    open above one of them (:func:`marked`)."""
    above: list[int] = []  # the lists and entries open at this tag
    links, current = [], set()
    for index, tag in enumerate(tags):
        close, name, attrs = tag.groups()
        if name in ("ul", "li") and close:
            above.pop()
        elif name in ("ul", "li"):
            above.append(index)
        elif name == "a" and not close and f' href="{link}"' in attrs and "reference internal" in attrs:
            links.append(index)
            current.update(above)
    return links, current


def marked(html: str, link: str) -> str:
    """Furo's navigation tree ``html``, drawn without marks, as Sphinx and furo draw it for the page whose own link
    (its file name, relative to its folder) is ``link``: each internal link to it becomes ``#`` with the class
    ``current``; every list and entry above one gets ``current`` (after Sphinx's classes, before furo's) and each
    such entry's box is checked; the last such entry, in document order, gets furo's ``current-page``."""
    tags = list(_TAG.finditer(html))
    links, current = _links_and_branches(tags, link)
    entries = [index for index in current if tags[index].group(2) == "li"]
    boxes = set()
    for entry in entries:  # an entry's box is the first input before its own list or next entry
        box = next((i for i in range(entry + 1, len(tags)) if tags[i].group(2) in ("input", "ul", "li")), None)
        if box is not None and tags[box].group(2) == "input":
            boxes.add(box)
    last = max(entries, default=None)
    pieces, position = [], 0
    for index, tag in enumerate(tags):
        close, name, attrs = tag.groups()
        if index in links:
            new = _with_classes(attrs, ["current", *_classes(attrs)]).replace(f' href="{link}"', ' href="#"')
        elif name == "a" and f' href="{link}#' in attrs:  # a section of the page: Sphinx marks no branch for it
            new = attrs.replace(f' href="{link}#', ' href="#')
        elif index in current and name == "li":
            classes = _classes(attrs)
            new = _with_classes(attrs, [c for c in classes if c not in _FURO_CLASSES] + ["current"]
                                + [c for c in classes if c in _FURO_CLASSES] + ["current-page"] * (index == last))
        elif index in current:
            new = _with_classes(attrs, [*_classes(attrs), "current"])
        elif index in boxes:
            new = attrs.replace(' class="toctree-checkbox"', ' checked="" class="toctree-checkbox"')
        else:
            continue
        pieces += [html[position:tag.start()], f"<{close}{name}{new}>"]
        position = tag.end()
    return "".join([*pieces, html[position:]])


def _sidebar_call(kwargs: dict[str, Any]) -> bool:
    # only where the cut is exact: titles only, nothing collapsed, no depth limit (furo's sidebar call)
    return bool(kwargs.get("titles_only") and not kwargs.get("collapse", True) and kwargs.get("maxdepth", 0) <= 0)


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Wrap the page's ``toctree`` function so that the sidebar's call reads the cut tables of contents, once per
    folder and call, and answers with the folder's tree without marks (:func:`unmarked`)."""
    toctree = context.get("toctree")
    if toctree is None:
        return
    link = posixpath.basename(app.builder.get_target_uri(pagename))
    folder = posixpath.dirname(pagename)

    def sidebar_toctree(**kwargs: Any) -> str:
        if not _sidebar_call(kwargs):
            return toctree(**kwargs)
        key = (folder, tuple(sorted(kwargs.items())))
        sidebars = app._pebench_sidebars
        if key not in sidebars:
            env = app.env
            whole = env.tocs
            env.tocs = _cut_tocs(app)
            try:
                html = toctree(**kwargs)
            finally:
                env.tocs = whole
            sidebars[key] = unmarked(html, link)
        context["_pebench_sidebar_link"] = link
        return sidebars[key]

    context["toctree"] = sidebar_toctree


def _mark_page(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """After furo drew the folder's tree (:func:`_on_page_context`), put this page's marks back into it."""
    link = context.pop("_pebench_sidebar_link", None)
    if link is not None and context.get("furo_navigation_tree"):
        context["furo_navigation_tree"] = marked(context["furo_navigation_tree"], link)


def setup(app: Any) -> dict[str, Any]:
    """Register the wrapper before furo's own page-context handler (priority 500) reads ``toctree`` and the marks
    after it, and forget the cut tables and drawn trees whenever the environment is updated."""
    app.connect("html-page-context", _on_page_context, priority=400)
    app.connect("html-page-context", _mark_page, priority=600)
    app.connect("env-updated", _forget_cut_tocs)
    _forget_cut_tocs(app)  # nothing cut or drawn yet
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
