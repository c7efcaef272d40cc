"""Pages and tables of the registries: one page per encoding and task, the encodings, tasks and metrics
tables, the API pages, the Concepts page's teaching figures and the citations."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import torch

import pebench
from pebench import encodings, explain, tasks
from pebench.registry import Citation

from .common import DOCS, ROOT, markdown_table, report_index, save_figure, source_path, suite_folders

KIND_SLOTS = {
    "none": "none: no positional information",
    "input": "input: added to the token embeddings (`embed`)",
    "rotary": "rotary: transforms queries and keys (`rotate`)",
    "bias": "bias: added to the attention scores (`bias`)",
    "content": "content: a score term computed from the queries, keys and logits (`content_score`)",
    "wrapper": "wrapper: changes the positions given to another encoding (`positions`)",
}


def cited(citation: Citation) -> str:
    """What an encoding cites, in MyST: a citation of the bibliography, a DOI's link, or the citation as written
    (a plugin's paper that pebench's bibliography does not hold)."""
    if citation.kind == "bibtex":
        return f"{{cite:t}}`{citation.value}`"
    if citation.kind == "doi":
        return f"[doi:{citation.value}]({citation.url})"
    return citation.value


def results_links(column: str, name: str, results: Path = ROOT / "results") -> list[str]:
    """A section showing where ``name`` (an encoding or a task) appears in the committed results: per suite, the
    experiments and architectures (:func:`pebench.report.findings.appearances`), its rows of each table and the
    figures that draw it, each captioned with what to look at (:func:`pebench.report.entries.entries`)."""
    found = []
    for folder in suite_folders(results):
        index = report_index(folder)
        pairs = index["appearances"][column].get(name)
        if not pairs:
            continue
        where = ", ".join(f"`{experiment}` ({arch})" for experiment, arch in pairs)
        page = f"/_generated/results/{folder.name}"
        found += [f"### {folder.name} results", "", f"{{doc}}`The {folder.name} results <{page}>`: {where}.", ""]
        entry = index.get("entries", {}).get(column, {}).get(name, {"tables": {}, "figures": {}})
        for table in index["tables"]:
            rows = entry["tables"].get(table["name"])
            if rows:
                found += [f"#### {table['title']}", "", markdown_table(rows["header"], rows["rows"])]
        for figure in index["figures"]:
            look = entry["figures"].get(figure["name"])
            if look and "svg" in figure["paths"]:
                found += [f":::{{figure}} {page}/{figure['paths']['svg']}", f":alt: {figure['title']}", "",
                          f"**{figure['title']}.** {look}", ":::", ""]
    if not found:
        return ["## In the results", "", f"Not part of the committed reference results; run it with "
                f"`pebench run --suite standard --{column} {name}`.", ""]
    return ["## In the results", "", "Its rows of each table of the committed results (the whole tables, their "
            "captions and downloads are on the results pages) and the figures that draw it.", "", *found]


def autoclass_block(cls: type) -> list[str]:
    """The MyST lines that render ``cls``'s docstring (its formula or definition) on a page, unindexed."""
    return ["```{eval-rst}", f".. autoclass:: {cls.__module__}.{cls.__qualname__}", "   :no-index:", "```", ""]


def encoding_page(name: str, out: Path, srcdir: Path = DOCS) -> str:
    """The page of encoding ``name``; its example figure goes to ``out/figures`` (inside ``srcdir``)."""
    meta = encodings.meta(name)
    cls = encodings.ENCODINGS.get(name)
    options = encodings.options(name)
    papers = [cited(meta["citation"]), *(f"{{cite:t}}`{key}`" for key in meta["cites"])]
    call_name = f"{name}:rope" if meta["kind"] == "wrapper" else name
    lines = [
        f"# `{name}`",
        "",
        meta["summary"],
        "",
        markdown_table(["", ""], [
            ["slot", KIND_SLOTS.get(meta["kind"], meta["kind"])],
            ["trainable parameters", "yes" if meta["has_parameters"] else "no"],
            ["causal (decoder) only", "yes" if meta["causal_only"] else "no"],
            ["paper", ", ".join(papers)],
            ["class", f"`{cls.__module__}.{cls.__qualname__}`"],
        ]),
        "## Options",
        "",
    ]
    if options:
        lines.append(markdown_table(["option", "default"], [[f"`{k}`", f"`{v!r}`"] for k, v in options.items()]))
    else:
        lines.append("None: the encoding is fully determined by the model's width and heads.\n")
    opts = "".join(f", {k}={v!r}" for k, v in options.items() if v is not None)
    lines += [
        "Build it by name (every option may be omitted; its default is shown):",
        "",
        "```python",
        "from pebench import encodings",
        "",
        f'pe = encodings.build("{call_name}", d_model=64, n_heads=4, max_len=128{opts})',
        "```",
        "",
        f"and select it in a run with `pebench run --suite smoke --filter encoding={call_name}`.",
        "",
    ]
    example = explain.encoding_example(name)
    if example is not None:
        fig, caption = example
        stem = out / "figures" / f"encoding_{name}"
        save_figure(fig, stem)
        image = source_path(stem.with_suffix(".svg"), srcdir)
        lines += ["## Example", "", f":::{{figure}} {image}", f":alt: {name} example", "", caption, ":::", ""]
    lines += results_links("encoding", name)
    lines += [
        "## Definition and conventions",
        "",
        "The class docstring, which states the formula, the convention and the reference code it was checked "
        "against:",
        "",
        *autoclass_block(cls),
    ]
    return "\n".join(lines)


def encodings_table() -> str:
    """Every registered encoding: its slot, parameters, paper, summary, and the suites that compare it
    (:data:`pebench.protocol.SUITE_ENCODINGS`; a wrapper such as ``randomized`` counts where one of its
    instances, e.g. ``randomized:rope``, is compared)."""
    from pebench.protocol import SUITE_ENCODINGS

    rows = []
    for name in encodings.names():
        meta = encodings.meta(name)
        suites = [suite for suite, compared in SUITE_ENCODINGS.items() if suite != "smoke"
                  and any(e.partition(":")[0] == name for e in compared)]
        rows.append([f"{{doc}}`{name} </_generated/encodings/{name}>`", meta["kind"],
                     "yes" if meta["has_parameters"] else "no", "yes" if meta["causal_only"] else "no",
                     ", ".join(suites) or "none", cited(meta["citation"]), meta["summary"]])
    return markdown_table(["name", "slot", "parameters", "causal only", "suites", "paper", "summary"], rows)


def _example_length(task: tasks.Task) -> int:
    length = max(task.min_length, 5)
    return length if task.max_length is None else min(length, task.max_length)


def _token_text(task: tasks.Task, token: int) -> str:
    return {task.vocab_size: "SEP", task.vocab_size + 1: "_", tasks.IGNORE: "·"}.get(token, str(token))


def rendered_table(task: tasks.Task, batch: tasks.Batch, arch: str) -> str:
    """The first example of ``batch`` as the ``arch`` model sees it: tokens and labels per position."""
    tokens, labels = tasks.render(task, batch, arch)
    rows = [["token", *(_token_text(task, int(t)) for t in tokens[0])],
            ["label", *(_token_text(task, int(t)) for t in labels[0])]]
    return markdown_table(["position", *range(tokens.shape[1])], rows)


def task_page(name: str) -> str:
    """The page of task ``name``: its facts, two examples (seed 0) and how each architecture sees one."""
    task = tasks.get(name)
    meta = tasks.TASKS.meta(name)
    length = _example_length(task)
    batch = task.sample(2, length, torch.Generator().manual_seed(0), split="eval")
    archs = ["decoder"] if meta.get("decoder_only") else list(tasks.ARCHS)
    lines = [
        f"# `{name}`",
        "",
        task.describe(),
        "",
        markdown_table(["", ""], [
            ["version", task.version],
            ["order", "order-dependent" if task.order_dependent else "order-invariant (a control)"],
            ["symbols (`vocab_size`)", task.vocab_size],
            ["input lengths", f"{task.min_length} .. {task.max_length or 'any'}"],
            [f"chance token accuracy at length {length}", f"{task.chance_accuracy(length):.3f}"],
            ["architectures", ", ".join(archs)],
            ["source", f"{{cite:t}}`{meta['paper']}`" if meta.get("paper") else "pebench"],
            *([["Chomsky class", f"{meta['chomsky'].replace('_', '-')} ({{cite:t}}`deletang2023chomsky`)"]]
              if meta.get("chomsky") else []),
        ]),
        f"## Examples (length {length}, seed 0)",
        "",
        markdown_table(["input", "output"], [[" ".join(map(str, x.tolist())), " ".join(map(str, y.tolist()))]
                                             for x, y in zip(batch.inputs, batch.targets, strict=True)]),
    ]
    single = tasks.Batch(inputs=batch.inputs[:1], targets=batch.targets[:1])
    for arch in archs:
        lines += [f"### Rendered for the {arch}", "", rendered_table(task, single, arch)]
    lines += results_links("task", name)
    lines += [
        "`SEP` separates input and output, `_` is the blank an encoder fills in, `·` a position without loss "
        "(label -100); see {func}`pebench.tasks.base.render_pair`.",
        "",
        "## Definition",
        "",
        *autoclass_block(type(task)),
    ]
    return "\n".join(lines)


def tasks_table() -> str:
    """Every registered task: whether order matters, its symbols, version and definition."""
    rows = []
    for name in tasks.names():
        task = tasks.get(name)
        rows.append([f"{{doc}}`{name} </_generated/tasks/{name}>`",
                     "dependent" if task.order_dependent else "invariant", task.vocab_size, task.version,
                     task.describe()])
    return markdown_table(["task", "order", "symbols", "version", "definition"], rows)


def metrics_table() -> str:
    """Every registered metric with its metadata (:mod:`pebench.metrics`, the only source of it)."""
    from pebench import metrics

    direction = {True: "higher", False: "lower", None: "—"}
    rows = [[f"`{m.name}`", m.level, m.label, direction[m.higher_is_better], m.applies_to,
             f"`{m.reference}`" if m.reference else "—", "yes" if getattr(m, "needs_fit", False) else "no",
             m.description]
            for m in metrics.run_metrics() + metrics.length_metrics()]
    return markdown_table(["metric", "per", "label", "better", "applies to", "reference level", "fitted seeds only",
                           "what it is"], rows)


def api_modules() -> list[str]:
    """Every ``pebench`` module that imports (modules still being written are left out, not fatal)."""
    names = ["pebench"]
    for info in pkgutil.walk_packages(pebench.__path__, "pebench."):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that does not import has no API page
            continue
        names.append(info.name)
    return sorted(names)


def api_page(module: str) -> str:
    """The autodoc page of ``module`` (its first docstring line kept as a comment)."""
    doc = (inspect.getdoc(importlib.import_module(module)) or "").split("\n")[0]
    return "\n".join([f"# `{module}`", "", "```{eval-rst}", f".. automodule:: {module}", "   :members:",
                      "   :ignore-module-all:", "```", "", f"<!-- {doc.replace('`', '')} -->", ""])


def generate_figures(out: Path) -> dict[str, str]:
    """The teaching figures of the Concepts page; returns substitutions with the numbers they show."""
    figures = {
        "sinusoidal_heatmap": explain.sinusoidal_heatmap,
        "sinusoidal_waves": explain.sinusoidal_waves,
        "rotation_property": explain.rotation_property,
        "score_decay": explain.score_decay_figure,
        "bias_matrices": explain.bias_figure,
        "attention_maps": explain.attention_maps,
        "permutation_demo": explain.permutation_demo,
    }
    for name, make in figures.items():
        save_figure(make(), out / name)
    rope, nope = explain.demo_model("rope"), explain.demo_model("none")
    tokens = explain.demo_tokens()
    perm = explain.permutation(tokens.shape[1])
    decay_rope = explain.score_decay("rope")
    decay_xpos = explain.score_decay("xpos")
    return {
        "demo_rope_token_acc": f"{rope.token_acc:.2f}",
        "demo_rope_seq_acc": f"{rope.seq_acc:.2f}",
        "demo_none_token_acc": f"{nope.token_acc:.2f}",
        "demo_none_seq_acc": f"{nope.seq_acc:.2f}",
        "demo_chance": f"{tasks.get('copy').chance_accuracy(8):.2f}",
        "perm_gap_none": f"{explain.permutation_gap(nope.model, tokens, perm):.1e}",
        "perm_gap_rope": f"{explain.permutation_gap(rope.model, tokens, perm):.2f}",
        "shift_error": f"{explain.sinusoidal_shift_error(5):.0e}",
        "decay_rope_100": f"{float(decay_rope[100]):.2f}",
        "decay_xpos_100": f"{float(decay_xpos[100]):.2f}",
    }


def git_year() -> int:
    """Year of the checked-out commit (the current year outside git)."""
    try:
        stamp = subprocess.run(["git", "log", "-1", "--format=%cI"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
        return datetime.fromisoformat(stamp).year
    except (OSError, subprocess.CalledProcessError, ValueError):
        return datetime.now(timezone.utc).year


def suite_bibtex(citation_file: Path = ROOT / "CITATION.cff") -> str:
    """BibTeX of pebench from ``CITATION.cff`` (title, authors, version, license, repository if given)."""
    import yaml

    cff = yaml.safe_load(citation_file.read_text())
    authors = " and ".join(
        f"{{{a['name']}}}" if "name" in a else f"{a['family-names']}, {a['given-names']}" for a in cff["authors"]
    )
    fields = {"title": f"{{{cff['title']}}}: {cff.get('abstract', '').split('.')[0]}".rstrip(": "),
              "author": authors, "year": str(git_year()), "version": cff.get("version", pebench.__version__),
              "license": cff.get("license", ""), "url": cff.get("repository-code", "")}
    body = ",\n".join(f"  {key:<8} = {{{value}}}" for key, value in fields.items() if value)
    return f"@software{{pebench,\n{body}\n}}"


def bib_entries(bib: Path = DOCS / "references.bib") -> dict[str, str]:
    """Raw text of each entry of ``references.bib`` by key."""
    text = bib.read_text()
    starts = [m for m in re.finditer(r"^@\w+\{([^,]+),", text, flags=re.M)]
    entries = {}
    for current, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(text)
        entries[current.group(1).strip()] = text[current.start():end].strip()
    return entries


def cite_include() -> str:
    """The BibTeX of pebench, of each encoding's papers and of the tasks' sources."""
    entries = bib_entries()
    lines = ["### pebench", "", "```bibtex", suite_bibtex(), "```", ""]
    seen: set[str] = set()
    for name in encodings.names():
        for key in [encodings.meta(name)["paper"], *encodings.meta(name)["cites"]]:
            if key in seen or key not in entries:
                continue
            seen.add(key)
            lines += [f"### {key} (`{name}`)", "", "```bibtex", entries[key], "```", ""]
    by_paper: dict[str, list[str]] = {}
    for name in tasks.names():  # the sources of the tasks, e.g. Deletang et al. for the Chomsky-hierarchy battery
        key = tasks.TASKS.meta(name).get("paper")
        if key and key in entries and key not in seen:
            by_paper.setdefault(key, []).append(name)
    for key, names in by_paper.items():
        shown_names = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        lines += [f"### {key} (tasks {shown_names})", "", "```bibtex", entries[key], "```", ""]
    return "\n".join(lines)
