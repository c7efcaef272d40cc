"""Text of a results folder never becomes MyST markup on the site: the library escapes the values it puts in a
sentence or a table cell (pebench.render.tables.markdown_text, markdown_code), and the site refuses a page holding
markup no pebench page writes (pebench.render.page_check): a substitution, which MyST evaluates as Jinja2 on the
building machine, raw HTML, a role or directive that reads a file, a link out of the web."""

from __future__ import annotations

import random
import string

import pytest
from test_docs import load_generators

from pebench.render import page_check
from pebench.render.page_check import UnsafePage, check_page, check_text
from pebench.render.tables import markdown_code, markdown_text
from pebench.report import findings, protocol_text

#: what a crafted manifest or run file could hold, each a construct MyST acts on
PAYLOADS = [
    "{{ env.app.__class__ }}", "<script>alert(1)</script>", "<!-- x --><img src=x onerror=alert(1)>",
    "{download}`x </etc/passwd>`", "```{literalinclude} /etc/passwd\n```", ":::{figure} /etc/x\n:::",
    "[x](javascript:alert(1))", "![x](http://tracker/x.png)", "$\\input{/etc/passwd}$", "# heading", "1. list",
    "- item", "> quote", "(target)=", "% comment", "+++", "a | b", "\\*not emphasis\\*", "_x_", "&amp;", "x\n\ny",
]


@pytest.fixture(scope="module")
def gen():
    return load_generators()


@pytest.fixture(scope="module")
def parse():
    return page_check._parser().parse


def shown_text(parse, markdown: str) -> str | None:
    """What a paragraph of ``markdown`` shows, if it is one paragraph of plain text (else None)."""
    tokens = parse(markdown)
    if [t.type for t in tokens] != ["paragraph_open", "inline", "paragraph_close"]:
        return None
    children = tokens[1].children or []
    if any(child.type not in ("text", "text_special", "softbreak") for child in children):
        return None
    return "".join(child.content for child in children)


def as_one_line(text: str) -> str:
    # a paragraph shows its blanks as one space and none at either end: compare the words, not the blanks
    return " ".join(text.split())


@pytest.mark.parametrize("text", PAYLOADS)
def test_an_escaped_text_is_one_paragraph_of_itself(parse, text):
    assert as_one_line(shown_text(parse, markdown_text(text)) or "") == as_one_line(text)


def test_any_printable_text_escaped_is_shown_as_it_is(parse):
    rng = random.Random(0)  # seeded: the same 3000 strings on every machine
    alphabet = string.printable + "±≥—é\u00a0"
    for _ in range(3000):
        text = rng.choice(["", *PAYLOADS]) + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
        if not text.strip():
            continue
        assert as_one_line(shown_text(parse, markdown_text(text)) or "") == as_one_line(text), repr(text)


def test_the_names_and_numbers_of_tables_are_left_as_they_are():
    for text in ("monte_carlo", "length_extrapolation", "0.97 ± 0.02", "2.13.0+cpu", "AMD EPYC 7B13 64-Core Processor",
                 "Linux-6.18.44-fc-v782-x86_64-with-glibc2.36", "2026-11-24T03:34:27+00:00"):
        assert markdown_text(text) == text


@pytest.mark.parametrize("text", ["a`b", "``x``", "`", "plain"])
def test_a_code_span_holds_any_text_whole(parse, text):
    tokens = parse(markdown_code(text))
    children = tokens[1].children
    assert [child.type for child in children] == ["code_inline"] and children[0].content == text


def crafted_manifest() -> dict:
    latest = {key: f"v{n}{PAYLOADS[n % len(PAYLOADS)]}" for n, key in enumerate(findings.PROVENANCE_KEYS)}
    second = {**latest, "cpu_model": "<b>other</b> {{ 1 }}", "date": "2026-01-01{{ x }}"}
    return {"suite": "standard", "invocations": [latest, second], "latest": second}


def test_a_crafted_manifest_is_shown_as_text_on_the_site(gen, parse, tmp_path):
    srcdir = tmp_path / "docs"
    manifest = crafted_manifest()
    page = gen.table_text(findings.provenance(manifest, n_files=2), tmp_path / "results" / "standard")
    check_page(page, srcdir / "_generated" / "results" / "standard-provenance.md")  # passes
    software = protocol_text._software(manifest["latest"])
    check_page(software, srcdir / "_generated" / "results" / "standard.md")
    shown = shown_text(parse, software)  # one paragraph of plain text, the values as they are
    assert shown is not None and "2026-01-01{{ x }}" in shown and "{download}`x </etc/passwd>`" in shown
    for token in parse(page):
        assert token.type not in ("html_inline", "html_block") and "substitution" not in token.type
        for child in token.children or []:
            assert child.type in ("text", "text_special", "code_inline", "softbreak", "strong_open", "strong_close")


def test_a_crafted_commit_or_version_cannot_break_the_bibtex():
    entry = protocol_text.citation_bibtex("standard", "v3-0123abcd", ["abc}\\input{/etc/passwd}"],
                                          made_with=["3.0.0}{\\write18{x}"])
    assert "\\" not in entry and entry.count("{") == entry.count("}")


@pytest.mark.parametrize(("markdown", "refused"), [
    ("| a |\n|---|\n| {{ env }} |\n", "a MyST substitution"),
    ("Text {{ 7 * 7 }}.\n", "a MyST substitution"),
    ("A <script>alert(1)</script>.\n", "raw HTML"),
    ("<div>x</div>\n", "raw HTML"),
    ("<!-- x --><img src=x>\n", "raw HTML"),
    ("See {download}`x </etc/passwd>`.\n", "{download} of '/etc/passwd'"),
    ("See {download}`x </_generated/../../etc/passwd>`.\n", "not under /_generated/"),
    ("See {raw-html}`<b>`.\n", "the role {raw-html}"),
    ("```{literalinclude} /etc/passwd\n```\n", "the directive '{literalinclude} /etc/passwd'"),
    ("```{include} /etc/passwd\n```\n", "the directive '{include} /etc/passwd'"),
    (":::{figure} /etc/x.svg\n:::\n", "{figure} of '/etc/x.svg'"),
    (":::{figure} /_generated/x.svg\n:target: javascript:x\n:::\n", "the option :target: of {figure}"),
    (":::{admonition} Note\nA {{ x }}\n:::\n", "a MyST substitution"),
    (":::{figure} /_generated/x.svg\n---\ntarget: javascript:x\n---\n:::\n", "the YAML options of {figure}"),
    ("```{eval-rst}\n.. raw:: html\n\n   <script>x</script>\n```\n", "the reStructuredText '.. raw:: html'"),
    ("[x](ftp://host/x)\n", "a link to 'ftp://host/x'"),
    ("![x](http://tracker/x.png)\n", "an image"),
    ("---\nmyst:\n  substitutions:\n    x: y\n---\n", "front matter"),
    ("x $\\input{/etc/passwd}$\n", "math"),
])
def test_a_page_holding_what_no_pebench_page_writes_is_refused_on_one_line(gen, tmp_path, markdown, refused):
    srcdir = tmp_path / "docs"
    with pytest.raises(UnsafePage) as error:
        check_page(markdown, srcdir / "_generated" / "results" / "standard.md")
    assert refused in str(error.value) and "\n" not in str(error.value)
    assert "_generated/results/standard.md" in str(error.value)


def test_what_pebench_pages_write_passes(gen, tmp_path):
    srcdir = tmp_path / "docs"
    page = "\n".join([
        "---", "orphan: true", "---", "", "# Title", "", "<!-- a module's comment -->", "",
        "Text with **bold**, *italics*, `code`, {doc}`a page </_generated/encodings/rope>` and "
        "{download}`TEX </_generated/results/standard/tables/main.tex>`, [a link](https://example.org).", "",
        ":::{figure} /_generated/results/standard/figures/x.svg", ":alt: A figure", "", "**Caption.** Look here.",
        ":::", "", "```{eval-rst}", ".. autoclass:: pebench.tasks.base.Task", "   :no-index:", "```", "",
        "```{toctree}", ":maxdepth: 1", "", "Tables <standard-tables>", "```", "", "```bibtex", "@misc{x, y={{z}}}",
        "```", "", "| a | b |", "|---|---|", "| 1 | 2 |", ""])
    check_page(page, srcdir / "_generated" / "results" / "standard.md")


def test_a_substitution_value_is_checked_like_a_page(gen, tmp_path):
    with pytest.raises(UnsafePage, match="the substitution reruns would hold a MyST substitution"):
        check_text("Reruns: {{ env }}", "the substitution reruns", tmp_path)


def test_every_generated_page_is_checked_before_it_is_written(gen, tmp_path):
    path = tmp_path / "docs" / "_generated" / "results" / "standard.md"
    with pytest.raises(UnsafePage):
        gen.write(path, "Text {{ env }}\n")
    assert not path.exists()
    gen.write(path, "Text.\n")
    assert path.read_text() == "Text.\n"


def test_autodoc_on_a_page_imports_nothing_the_build_has_not(tmp_path):
    page = tmp_path / "docs" / "_generated" / "encodings" / "x.md"
    check_page("```{eval-rst}\n.. autoclass:: pebench.tasks.base.Task\n   :no-index:\n```\n", page)
    check_page("```{eval-rst}\n.. autoclass:: collections.OrderedDict\n```\n", page)  # a plugin's, imported
    with pytest.raises(UnsafePage, match="automodule:: not_imported_anywhere"):
        check_page("```{eval-rst}\n.. automodule:: not_imported_anywhere\n```\n", page)
