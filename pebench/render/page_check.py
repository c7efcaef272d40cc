"""Refuse a page of the site that holds MyST a pebench page never writes (``docs/_ext`` checks each one it writes).

The generated pages carry text of results folders (their ``report.json``, tables and manifests), and a folder may
come from anyone. MyST would act on some of what such a text could hold: a substitution ``{{ ... }}`` is Jinja2,
evaluated on the building machine; raw HTML reaches every reader's browser; a ``{download}`` role or a directive
copies or reads a file of the building machine. :func:`check_page` parses each page as the site does
(:data:`MYST_EXTENSIONS`) and allows only what the page modules write: text, emphasis, code, tables, lists, the
roles and directives of :data:`ROLES` and :data:`DIRECTIVES`, files only under ``_generated/``, links only to the
web or within the site. Anything else stops the build on one line that names the page and what it held. The
library escapes the values it puts in a sentence (:func:`pebench.render.tables.markdown_text`), so a report pebench
wrote passes whatever its folder's manifest says; what fails was written by something else.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it.token import Token

#: the MyST extensions the site enables (``docs/conf.py`` reads them from here, so both parse alike)
MYST_EXTENSIONS = ("dollarmath", "colon_fence", "substitution", "deflist")
#: the folder of a site's sources that holds its generated pages
GENERATED = "_generated"

#: roles a generated page may use
ROLES = frozenset({"doc", "ref", "download", "cite:t", "cite:p", "func", "class", "meth", "mod", "attr", "data"})
#: directives a generated page may use, with the options each may take
DIRECTIVES = {"figure": {"alt", "width", "align", "name", "class"}, "admonition": {"class", "name"},
              "toctree": {"maxdepth", "hidden", "caption", "titlesonly"}, "eval-rst": set()}
#: what an ``{eval-rst}`` block may hold: autodoc of a Python name (:func:`_documented`), with flag options
EVAL_RST_LINE = re.compile(r"\.\. auto(?:module|class|function|data|exception)::\s+(?P<name>[A-Za-z_][\w.]*)"
                           r"|   :(?:members|ignore-module-all|no-index|undoc-members):|")
#: directives and roles whose argument is a file of the site: it must lie under ``_generated/``
FILE_DIRECTIVES = frozenset({"figure"})
#: front matter a generated page may start with
FRONT_MATTER = frozenset({"orphan: true"})
#: an HTML block that is only comments (module docstrings carry them into the API pages): inert
HTML_COMMENTS = re.compile(r"(?:\s*<!--(?:(?!-->)[\s\S])*-->)+\s*")
#: schemes a link may use (no scheme: within the site)
LINK_SCHEMES = ("http://", "https://", "mailto:")
_OPTION = re.compile(r":([\w-]+):(?:\s.*)?")


class UnsafePage(RuntimeError):
    """A generated page holds MyST that no pebench page writes (:func:`check_page`)."""


@functools.cache
def _parser():
    """MyST's Markdown parser, configured as the site's (made once: building it takes longer than a page's parse)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=set(MYST_EXTENSIONS)), RendererHTML)


def check_page(text: str, path: Path) -> None:
    """Refuse ``text``, the page to be written at ``path`` (under a ``_generated`` folder of a site's sources), if
    it holds MyST no pebench page writes (see the module's docstring). A file that is not a page (``.md``: a figure,
    a table's CSV) is not checked.

    Raises:
        UnsafePage: naming ``path`` and the first such construct, on one line.
    """
    if Path(path).suffix != ".md":
        return
    srcdir = source_folder(path)
    where = Path(path).resolve()
    shown = where.relative_to(srcdir.resolve()) if where.is_relative_to(srcdir.resolve()) else where
    check_text(text, str(shown), srcdir, page=True)


def check_text(text: str, what: str, srcdir: Path, page: bool = False) -> None:
    """Refuse ``text`` as :func:`check_page` does, naming it ``what``: a text the site inserts into its pages (a
    substitution's value), or with ``page`` a whole page, which may begin with front matter."""
    if problem := _problem(_parser().parse(text), srcdir, page):
        raise UnsafePage(f"pebench_docs: {what} would hold {problem}, which no pebench page writes: a report.json, "
                         "table or manifest of a results folder may have been crafted; the build stops")


def source_folder(path: Path) -> Path:
    """The site's source folder of a generated page: the folder above its ``_generated`` (else the page's own)."""
    parts = Path(path).resolve().parts
    if GENERATED not in parts:
        return Path(path).resolve().parent
    return Path(*parts[:len(parts) - 1 - parts[::-1].index(GENERATED)])


def check_substitutions(values: Mapping[str, object], srcdir: Path) -> dict[str, object]:
    """``values``, MyST substitutions of the site's pages, each checked by :func:`check_text`: MyST parses a value
    where a page uses it, so it may hold no more than a page."""
    for name, value in values.items():
        check_text(str(value), f"the substitution {name}", srcdir)
    return dict(values)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _problem(tokens: Iterable[Token], srcdir: Path, first: bool) -> str | None:
    """The first thing among ``tokens`` (parsed MyST, and their children) that a generated page may not hold, in
    words; ``first``: they open the page, where its first token may be the front matter pebench writes."""
    for n, token in enumerate(tokens):
        if problem := _markup_problem(token, first and n == 0) or _reference_problem(token, srcdir):
            return problem
        if token.children and (problem := _problem(token.children, srcdir, first=False)):
            return problem
    return None


def _markup_problem(token: Token, opening: bool) -> str | None:
    """What ``token`` holds that no generated page writes (a substitution, raw HTML, math, an image; front matter
    other than pebench's, or anywhere but at the ``opening`` of the page), in words."""
    kind = token.type
    if kind.startswith("substitution"):
        return f"a MyST substitution {_short(token.content)} (Jinja2, evaluated by the build)"
    if kind == "html_inline" or (kind == "html_block" and not HTML_COMMENTS.fullmatch(token.content)):
        return f"raw HTML {_short(token.content)}"
    if kind == "front_matter" and not (opening and token.content.strip() in FRONT_MATTER):
        return f"front matter {_short(token.content)}"
    if kind.startswith("math") or kind == "amsmath":  # no generated page writes math: LaTeX of a folder's text
        return f"math {_short(token.content)}"
    if kind == "image":
        return f"an image {_short(token.attrs.get('src', ''))}"
    return None


def _reference_problem(token: Token, srcdir: Path) -> str | None:
    """What ``token`` points to that a generated page may not (a link of another scheme, a role or directive
    pebench does not write, a file outside the site: :func:`_role_problem`, :func:`_directive_problem`)."""
    kind = token.type
    if kind == "link_open":
        href = str(token.attrs.get("href", ""))
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) and not href.startswith(LINK_SCHEMES):
            return f"a link to {_short(href)}"
    if kind == "myst_role":
        return _role_problem(token, srcdir)
    if kind in ("fence", "colon_fence") and token.info.strip().startswith("{"):
        return _directive_problem(token, srcdir)
    return None


def _role_problem(token: Token, srcdir: Path) -> str | None:
    name = str(token.meta.get("name", ""))
    if name not in ROLES:
        return f"the role {{{name}}}"
    if name == "download":
        target = re.search(r"<([^<>]*)>\s*$", token.content)
        return _file_problem(target.group(1) if target else token.content.strip(), srcdir, "{download}")
    return None


def _directive_problem(token: Token, srcdir: Path) -> str | None:
    info = token.info.strip()
    match = re.fullmatch(r"\{([\w:-]+)\}\s*(.*)", info)
    name = match.group(1) if match else info
    if not match or name not in DIRECTIVES:
        return f"the directive {_short(info)}"
    lines = token.content.split("\n")
    if lines[0].strip() == "---":  # options as a YAML block: pebench writes them as :name: lines only
        return f"the YAML options of {{{name}}}"
    options = 0
    while options < len(lines) and (option := _OPTION.fullmatch(lines[options])):
        if option.group(1) not in DIRECTIVES[name]:
            return f"the option :{option.group(1)}: of {{{name}}}"
        options += 1
    body = "\n".join(lines[options:])
    if name in FILE_DIRECTIVES and (problem := _file_problem(match.group(2), srcdir, f"{{{name}}}")):
        return problem
    if name == "eval-rst":
        bad = next((line for line in lines if not _documented(EVAL_RST_LINE.fullmatch(line))), None)
        return None if bad is None else f"the reStructuredText {_short(bad)}"
    if name == "toctree":
        bad = next((line for line in lines[options:] if "{" in line or "`" in line), None)
        return None if bad is None else f"the toctree entry {_short(bad)}"
    return _problem(_parser().parse(body), srcdir, first=False)  # a figure's caption, an admonition's text


def _documented(line: re.Match | None) -> bool:
    """Whether an ``{eval-rst}`` line is one a page may hold: an option, or autodoc of a pebench name (pebench is a
    regular package: its modules are its own files) or of a module the build has already imported or a name already
    in one (a plugin's encoding), so that autodoc imports nothing new. A name whose parent is imported but which is
    not yet in it is refused: a namespace package's path (``sphinxcontrib``) spans every folder of the import path,
    the working directory too under ``python -m sphinx``, so autodoc would import a file of a user's folder."""
    if line is None:
        return False
    name = line.group("name")
    if not name:
        return True
    if name == "pebench" or (name.startswith("pebench.") and all(name.split("."))):
        return True
    if name in sys.modules:
        return True
    parent, _, last = name.rpartition(".")
    module = sys.modules.get(parent)
    return module is not None and last in getattr(module, "__dict__", {})  # already there: nothing is imported


def _file_problem(target: str, srcdir: Path, what: str) -> str | None:
    """Why ``target`` (a site path, ``/`` = the source folder) is not a file the site may serve, or None."""
    path = PurePosixPath(target)
    if not target.startswith(f"/{GENERATED}/") or ".." in path.parts or "\\" in target:
        return f"{what} of {_short(target)} (not under /_generated/)"
    if (srcdir / target.lstrip("/")).is_symlink():
        return f"{what} of {_short(target)} (a symbolic link)"
    return None
