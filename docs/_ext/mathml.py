"""Math rendered to MathML when the site is built, with latex2mathml: formulas show in any current browser
with no script and no network (the default, MathJax, loads from a CDN and shows raw TeX offline).

Registered as the HTML math renderer ``mathml`` (``html_math_renderer = "mathml"`` in ``conf.py``). A
formula latex2mathml cannot convert is a build warning (an error under ``-W``), never raw TeX on a page.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def to_mathml(latex: str, display: str, node: nodes.Node) -> str:
    """``latex`` as a ``<math>`` element (``display`` ``inline`` or ``block``); a warning if it cannot be."""
    try:
        return convert(latex.strip(), display=display)
    except Exception as exc:  # noqa: BLE001 (latex2mathml raises many types)
        logger.warning("cannot render math %r as MathML: %s", latex, exc, location=node)
        return f"<code>{nodes.Text(latex).astext()}</code>"


def visit_math(self: Any, node: nodes.Node) -> None:
    """Inline math: ``<span class="math"><math display="inline">...</math></span>``."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(to_mathml(node.astext(), "inline", node))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.Node) -> None:
    """Display math: one ``<math display="block">`` per equation of the block."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    for equation in (part for part in node.astext().split("\n\n") if part.strip()):
        self.body.append(to_mathml(equation, "block", node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
