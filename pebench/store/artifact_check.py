"""What the files of a report may hold before the site copies them (a results folder may come from anyone).

``pebench report`` writes figures (SVG, PDF), tables (CSV, Markdown, LaTeX) and summaries (CSV); the site copies
the ones a ``report.json`` names and offers them for download or shows them
(:func:`pebench.store.report_file.copy_report`).
Each such file is checked here against what pebench writes in its format, so that one crafted by hand cannot act
on whoever opens it:

- an SVG opened from the site runs its scripts there (:func:`svg_problem`);
- a PDF can carry JavaScript or actions that a PDF reader runs or follows (:func:`pdf_problem`);
- a LaTeX table is pasted into papers and compiled, where ``\\write18``, ``\\input`` or a ``filecontents``
  environment reach the author's machine (:func:`tex_problem`);
- a CSV field that begins like a formula is run by a spreadsheet (:func:`csv_problem`).

A Markdown table is not checked here: the site puts its text in a page, and every page is checked before it is
written (:mod:`pebench.render.page_check`). Importing this module loads neither pandas nor scipy.
"""

from __future__ import annotations

import csv
import io
import re

#: the formats of each kind of file a report writes, as ``report.json`` names them (``<kind>/<name>.<format>``)
REPORT_FORMATS = {"figures": ("svg", "pdf"), "tables": ("csv", "md", "tex"), "summary": ("csv",)}

# --------------------------------------------------------------------------- SVG

#: the elements a figure of a report may hold (what matplotlib writes in an SVG): no script, no foreign object, no
#: animation (``<set>`` can rewrite a link), no link out of the figure
SVG_ELEMENTS = frozenset({
    "svg", "g", "defs", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "image",
    "use", "clipPath", "mask", "pattern", "linearGradient", "radialGradient", "stop", "style", "title", "desc",
    "metadata", "rdf:RDF", "cc:Work", "cc:Agent", "dc:type", "dc:format", "dc:title", "dc:date", "dc:creator",
})
#: where a figure's ``href`` may point: within the figure, or an image embedded in it
SVG_HREF = re.compile(r"#[\w.-]*|data:image/png;base64,[A-Za-z0-9+/=\s]*")


def svg_problem(data: bytes) -> str | None:
    """What in the SVG ``data`` no figure of ``pebench report`` holds (an SVG the site serves can run script in its
    readers' browsers when opened): an element not in :data:`SVG_ELEMENTS`, an event attribute (``on...=``), a link
    not of :data:`SVG_HREF`, a ``url(...)`` or ``@import`` in a style, an entity declaration; ``None`` when none."""
    text = data.decode("utf-8", errors="replace")
    if re.search(r"<!ENTITY|<!DOCTYPE[^>]*\[", text, re.I):
        return "an entity declaration"
    for element in re.findall(r"<([A-Za-z][\w:.-]*)", text):
        if element not in SVG_ELEMENTS:
            return f"the element <{element}>"
    if event := re.search(r"\son[a-z]+\s*=", text, re.I):
        return f"the event attribute {event.group().strip()!r}"
    for href in re.findall(r"href\s*=\s*[\"']([^\"']*)", text):
        if not SVG_HREF.fullmatch(href):
            return f"a link to {href[:40]!r}"
    if re.search(r"url\(\s*['\"]?(?!#)|@import|expression\(", text, re.I):
        return "a style that loads something"
    return None


# --------------------------------------------------------------------------- PDF

#: the PDF names of actions, scripts, embedded files and forms: none is in a figure matplotlib writes, and each
#: makes a PDF reader run or open something
PDF_ACTIONS = frozenset({
    "JavaScript", "JS", "OpenAction", "AA", "Launch", "URI", "GoToR", "GoToE", "SubmitForm", "ImportData",
    "ResetForm", "RichMedia", "EmbeddedFile", "EmbeddedFiles", "FileAttachment", "XFA", "AcroForm", "Sound", "Movie",
    "Rendition", "Hide", "Named", "SetOCGState", "Trans", "GoTo3DView",
})
_PDF_NAME = re.compile(rb"/([^\s/<>\[\]()%{}]*)")
_PDF_STREAM = re.compile(rb"/Length\s+(\d+)(\s+\d+\s+R)?[^>]*?>>\s*stream\r?\n", re.S)


def _pdf_length(data: bytes, number: int, reference: bytes | None) -> int | None:
    """A stream's ``/Length``: ``number`` itself, or the number the object ``number`` holds when ``reference`` (its
    generation and ``R``) makes it a reference (``12 0 R``); ``None`` when no such object is found."""
    if not reference:
        return number
    found = re.findall(rb"(?<![0-9])%d\s+%s\s+obj\s+(\d+)\s+endobj" % (number, reference.split()[0]), data)
    return int(found[-1]) if found else None  # the last definition: an incremental update replaces the first


def pdf_problem(data: bytes) -> str | None:
    """What in the PDF ``data`` no figure of ``pebench report`` holds: it does not begin as a PDF, a stream's extent
    is not its ``/Length`` (so that data outside what is checked could be read as objects), an object stream
    (``/ObjStm``, whose compressed objects no scan reads), or a name of :data:`PDF_ACTIONS` (JavaScript, an action,
    an embedded file) outside the streams, ``#xx`` escapes decoded; ``None`` when none."""
    if not data.startswith(b"%PDF-"):
        return "no PDF header"
    outside, position, streams = [], 0, 0
    for match in _PDF_STREAM.finditer(data):
        if match.start() < position:
            return "a stream inside a stream"
        length = _pdf_length(data, int(match.group(1)), match.group(2))
        end = match.end() + length if length is not None else -1
        if length is None or not re.match(rb"\r?\n?endstream", data[end:end + 11]):
            return "a stream whose extent is not its /Length"
        outside.append(data[position:match.end()])
        position, streams = end, streams + 1
    outside = b"".join([*outside, data[position:]])
    if len(re.findall(rb"(?<!end)stream(?![A-Za-z])", outside)) != streams:
        return "a stream without a /Length"
    for name in _PDF_NAME.findall(outside):
        decoded = re.sub(rb"#([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), name).decode("latin-1")
        if decoded == "ObjStm":
            return "an object stream (/ObjStm)"
        if decoded in PDF_ACTIONS:
            return f"the name /{decoded}"
    return None


# --------------------------------------------------------------------------- LaTeX

#: the control words a table of ``pebench report`` writes (:func:`pebench.render.tables.to_latex`,
#: :data:`pebench.render.tables._LATEX_SPECIAL`); none reads or writes a file or redefines anything
TEX_WORDS = frozenset({
    "begin", "end", "centering", "small", "footnotesize", "caption", "label",
    "addtocounter", "smallskip", "medskip", "par", "toprule", "midrule", "bottomrule", "textbf", "underline",
    "parbox", "raggedright", "resizebox", "ifdim", "width", "linewidth", "else", "fi", "pm", "geq", "leq", "times",
    "approx", "cdot", "dag", "textbackslash", "textasciitilde", "textbar", "textasciicircum",
})
#: the control symbols it writes (a line break, escaped specials, ``\\|`` in math, the acute accent)
TEX_SYMBOLS = frozenset("\\&%$#_{}|'")
#: the environments it opens
TEX_ENVIRONMENTS = frozenset({"table", "table*", "tabular"})
_TEX_TOKEN = re.compile(r"%[^\n]*|\\([A-Za-z]+|.)|\^\^", re.S)


def tex_problem(data: bytes) -> str | None:
    """What in the LaTeX ``data`` no table of ``pebench report`` holds (a reader pastes it into a paper and
    compiles it): a control word not in :data:`TEX_WORDS` (``\\input``, ``\\write``, ``\\catcode``, ...), a
    control symbol not in :data:`TEX_SYMBOLS`, an environment not in :data:`TEX_ENVIRONMENTS` (``filecontents``
    writes a file), TeX's ``^^`` character notation, or text that is not UTF-8; ``None`` when none. Comments are
    not read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "text that is not UTF-8"
    for match in _TEX_TOKEN.finditer(text):
        token = match.group()
        if token.startswith("%"):
            continue
        if token == "^^":
            return "TeX's ^^ character notation"
        name = match.group(1)
        if len(name) == 1 and not name.isalpha() and name not in TEX_SYMBOLS:
            return f"the control symbol \\{name!r}"[:60]
        if name.isalpha() and name not in TEX_WORDS:
            return f"the control word \\{name[:30]}"
        if name in ("begin", "end"):
            environment = re.match(r"\s*\{([^{}]*)\}", text[match.end():])
            if not environment or environment.group(1) not in TEX_ENVIRONMENTS:
                shown = environment.group(1)[:30] if environment else "without a name"
                return f"the environment {shown!r}"
    return None


# --------------------------------------------------------------------------- CSV

#: what a spreadsheet reads as a formula where a field begins (``=HYPERLINK(...)``, ``@SUM(...)``, ``-2+3``); a
#: field of pebench that begins with ``-`` is a number
FORMULA_STARTS = ("=", "+", "@", "\t", "\r")


def formula_field(fields) -> str | None:
    """The first of ``fields`` (texts as written) that a spreadsheet would run as a formula: one beginning with one
    of :data:`FORMULA_STARTS`, or with ``-`` and not a number; ``None`` when none."""
    for field in fields:
        if field.startswith(FORMULA_STARTS):
            return field
        if field.startswith("-"):
            try:
                float(field)
            except ValueError:
                return field
    return None


def csv_problem(data: bytes) -> str | None:
    """What in the CSV ``data`` no table or summary of ``pebench report`` holds: a field a spreadsheet would run as
    a formula (:func:`formula_field`), or text that is not UTF-8 CSV; ``None`` when none."""
    try:
        records = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
        field = formula_field(field for record in records for field in record)
    except (UnicodeDecodeError, csv.Error):
        return "text that is not UTF-8 CSV"
    return None if field is None else f"a field that a spreadsheet runs as a formula ({field[:40]!r})"


#: the check of each format a report writes (Markdown: its text is checked as part of the page that shows it)
CHECKS = {"svg": svg_problem, "pdf": pdf_problem, "tex": tex_problem, "csv": csv_problem, "md": lambda data: None}


def artifact_problem(relative: str, data: bytes) -> str | None:
    """What in ``data``, the file ``relative`` of a report (``figures/x.svg``), no such file of ``pebench report``
    holds, by its format (:data:`CHECKS`; a format a report does not write is itself the problem); ``None``
    when none."""
    ext = relative.rsplit(".", 1)[-1] if "." in relative else ""
    check = CHECKS.get(ext)
    return f"a file of a format no report writes ({ext[:10] or 'none'!r})" if check is None else check(data)
