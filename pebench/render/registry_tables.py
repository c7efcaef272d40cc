"""The registries in tables: each encoding's and task's facts, a task's examples as each architecture sees
them, the encodings, tasks and metrics tables, and the BibTeX of pebench and of the papers the registries cite
(the site's encoding, task and cite pages and indexes render them).

Texts are MyST Markdown: names in backticks, papers as ``{cite:t}`` roles of the bibliography. A table whose
first column names an encoding or a task takes ``link``, how a name is shown there (the site links its page).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Collection
from datetime import datetime, timezone
from pathlib import Path

import torch

import pebench
from pebench import encodings, metrics, tasks
from pebench.protocol import SUITE_ENCODINGS
from pebench.registry import Citation
from pebench.render.tables import Table, text_table
from pebench.store.schema import encoding_label, task_label

#: the source checkout, which holds ``CITATION.cff`` and the bibliography (``docs/references.bib``)
CHECKOUT = Path(__file__).resolve().parents[2]

#: what each encoding kind does, by the hook it implements
KIND_SLOTS = {
    "none": "none: no positional information",
    "input": "input: added to the token embeddings (`embed`)",
    "rotary": "rotary: transforms queries and keys (`rotate`)",
    "bias": "bias: added to the attention scores (`bias`)",
    "content": "content: a score term computed from the queries, keys and logits (`content_score`)",
    "gate": "gate: a gate computed from the layer input decays the logits (`attention_weights`)",
    "softmax": "softmax: replaces or rescales the softmax (`attention_weights`, or a scale in `rotate`)",
    "architectural": "architectural: a per-layer choice or a change to the block (`for_layer`, `mix`)",
    "wrapper": "wrapper: changes the positions given to another encoding (`positions`)",
}


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def cited(citation: Citation) -> str:
    """What an encoding cites, in MyST: a citation of the bibliography, a DOI's link, or the citation as written
    (a plugin's paper that pebench's bibliography does not hold)."""
    if citation.kind == "bibtex":
        return f"{{cite:t}}`{citation.value}`"
    if citation.kind == "doi":
        return f"[doi:{citation.value}]({citation.url})"
    return citation.value


def encoding_facts(name: str) -> Table:
    """Encoding ``name``'s slot, whether it has parameters, whether it is causal only, its papers and class."""
    meta, cls = encodings.meta(name), encodings.ENCODINGS.get(name)
    papers = [cited(meta["citation"]), *(f"{{cite:t}}`{key}`" for key in meta["cites"])]
    return text_table(["", ""], [["slot", KIND_SLOTS.get(meta["kind"], meta["kind"])],
                                 ["family", encodings.KIND_FAMILIES.get(meta["kind"], meta["kind"])],
                                 ["trainable parameters", _yes(meta["has_parameters"])],
                                 ["causal (decoder) only", _yes(meta["causal_only"])],
                                 ["paper", ", ".join(papers)], ["class", f"`{cls.__module__}.{cls.__qualname__}`"]])


def encoding_options(name: str) -> Table | None:
    """Encoding ``name``'s options with their defaults, or None when it has none."""
    options = encodings.options(name)
    return text_table(["option", "default"], [[f"`{k}`", f"`{v!r}`"] for k, v in options.items()]) if options else None


def build_call(name: str) -> tuple[str, str]:
    """The name to build encoding ``name`` by (a wrapper around RoPE) and its ``encodings.build`` call with every
    option that has a default."""
    call_name = f"{name}:rope" if encodings.wraps(name) else name
    opts = "".join(f", {k}={v!r}" for k, v in encodings.options(name).items() if v is not None)
    return call_name, f'pe = encodings.build("{call_name}", d_model=64, n_heads=4, max_len=128{opts})'


def _plain_link(text: str, name: str) -> str:
    """A name column's cell without a link: its text."""
    return text


def _named(link: Callable[[str, str], str], label: str, name: str) -> str:
    """A name column's cell: the ``label`` tables show, passed through ``link`` (with the registered ``name``),
    and the name to type, in code, where it differs."""
    return link(label, name) + ("" if label == name else f" (`{name}`)")


def encodings_table(link: Callable[[str, str], str] = _plain_link) -> Table:
    """Every registered encoding, grouped by family (:data:`pebench.encodings.KIND_FAMILIES`, in its order): its
    label (``link(label, name)``) and name, family, slot, parameters, paper, summary, and the suites that compare
    it (:data:`pebench.protocol.SUITE_ENCODINGS`; a wrapper such as ``randomized`` counts where one of its
    instances, e.g. ``randomized:rope``, is compared)."""
    families = list(dict.fromkeys(encodings.KIND_FAMILIES.values()))
    rows = []
    for name in encodings.names():
        meta = encodings.meta(name)
        family = encodings.KIND_FAMILIES.get(meta["kind"], meta["kind"])
        suites = [suite for suite, compared in SUITE_ENCODINGS.items() if suite != "smoke"
                  and any(e.partition(":")[0] == name for e in compared)]
        rows.append([_named(link, encoding_label(name), name), family, meta["kind"], _yes(meta["has_parameters"]),
                     _yes(meta["causal_only"]), ", ".join(suites) or "none", cited(meta["citation"]), meta["summary"]])
    rows.sort(key=lambda row: families.index(row[1]) if row[1] in families else len(families))  # stable: by name within
    return text_table(["encoding", "family", "slot", "parameters", "causal only", "suites", "paper", "summary"], rows)


def example_length(task: tasks.Task) -> int:
    """The input length a task's page shows its examples at: 5, within the task's lengths."""
    length = max(task.min_length, 5)
    return length if task.max_length is None else min(length, task.max_length)


def task_archs(name: str) -> list[str]:
    """The architectures task ``name`` runs on."""
    return ["decoder"] if tasks.TASKS.meta(name).get("decoder_only") else list(tasks.ARCHS)


def task_facts(name: str) -> Table:
    """Task ``name``'s version, order dependence, symbols, lengths, chance at :func:`example_length`,
    architectures, source, Chomsky class and complexity note (each where the task declares one)."""
    task, meta = tasks.get(name), tasks.TASKS.meta(name)
    length = example_length(task)
    return text_table(["", ""], [
        ["version", task.version],
        ["order", "order-dependent" if task.order_dependent else "order-invariant (a control)"],
        ["symbols (`vocab_size`)", task.vocab_size],
        ["input lengths", f"{task.min_length} .. {task.max_length or 'any'}"],
        [f"chance token accuracy at length {length}", f"{task.chance_accuracy(length):.3f}"],
        ["architectures", ", ".join(task_archs(name))],
        ["source", f"{{cite:t}}`{meta['paper']}`" if meta.get("paper") else "pebench"],
        *([["Chomsky class", f"{meta['chomsky'].replace('_', '-')} ({{cite:t}}`deletang2023chomsky`)"]]
          if meta.get("chomsky") else []),
        *([["complexity", meta["complexity"]]] if meta.get("complexity") else []),
    ])


def _token_text(task: tasks.Task, token: int) -> str:
    return {task.vocab_size: "SEP", task.vocab_size + 1: "_", tasks.IGNORE: "·"}.get(token, str(token))


def task_examples(name: str) -> tuple[Table, dict[str, Table]]:
    """Two examples of task ``name`` at :func:`example_length` (seed 0, the evaluation split), and the first as
    each architecture sees it: tokens and labels per position (``SEP`` the separator, ``_`` an encoder's blank,
    ``·`` a position without loss)."""
    task = tasks.get(name)
    batch = task.sample(2, example_length(task), torch.Generator().manual_seed(0), split="eval")
    examples = text_table(["input", "output"], [[" ".join(map(str, x.tolist())), " ".join(map(str, y.tolist()))]
                                                for x, y in zip(batch.inputs, batch.targets, strict=True)])
    single = tasks.Batch(inputs=batch.inputs[:1], targets=batch.targets[:1])
    rendered = {}
    for arch in task_archs(name):
        tokens, labels = tasks.render(task, single, arch)
        rendered[arch] = text_table(["position", *range(tokens.shape[1])],
                                    [["token", *(_token_text(task, int(t)) for t in tokens[0])],
                                     ["label", *(_token_text(task, int(t)) for t in labels[0])]])
    return examples, rendered


def tasks_table(link: Callable[[str, str], str] = _plain_link) -> Table:
    """Every registered task: its label (``link(label, name)``) and name, whether order matters, its symbols,
    version and definition."""
    return text_table(["task", "order", "symbols", "version", "definition"],
                      [[_named(link, task_label(name), name), "dependent" if task.order_dependent else "invariant",
                        task.vocab_size, task.version, task.describe()]
                       for name in tasks.names() for task in [tasks.get(name)]])


def metrics_table() -> Table:
    """Every registered metric with its metadata (:mod:`pebench.metrics`, the only source of it)."""
    direction = {True: "higher", False: "lower", None: "—"}
    rows = [[f"`{m.name}`", m.level, m.label, direction[m.higher_is_better], m.applies_to,
             f"`{m.reference}`" if m.reference else "—", _yes(m.needs_fit), m.description]
            for m in metrics.run_metrics() + metrics.length_metrics()]
    return text_table(["metric", "per", "label", "better", "applies to", "reference level", "fitted seeds only",
                       "what it is"], rows)


def git_year(root: Path = CHECKOUT) -> int:
    """Year of the checked-out commit (the current year outside git)."""
    try:
        stamp = subprocess.run(["git", "log", "-1", "--format=%cI"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
        return datetime.fromisoformat(stamp).year
    except (OSError, subprocess.CalledProcessError, ValueError):
        return datetime.now(timezone.utc).year


def suite_bibtex(citation_file: Path = CHECKOUT / "CITATION.cff") -> str:
    """BibTeX of pebench from ``CITATION.cff`` (title, authors, version, license, repository if given)."""
    import yaml  # PyYAML comes with the docs extra, not with pebench

    cff = yaml.safe_load(citation_file.read_text())
    authors = " and ".join(
        f"{{{a['name']}}}" if "name" in a else f"{a['family-names']}, {a['given-names']}" for a in cff["authors"]
    )
    fields = {"title": f"{{{cff['title']}}}: {cff.get('abstract', '').split('.')[0]}".rstrip(": "),
              "author": authors, "year": str(git_year(citation_file.parent)),
              "version": cff.get("version", pebench.__version__), "license": cff.get("license", ""),
              "url": cff.get("repository-code", "")}
    body = ",\n".join(f"  {key:<8} = {{{value}}}" for key, value in fields.items() if value)
    return f"@software{{pebench,\n{body}\n}}"


def bib_entries(bib: Path = CHECKOUT / "docs" / "references.bib") -> dict[str, str]:
    """Raw text of each entry of ``references.bib`` by key."""
    text = bib.read_text()
    starts = list(re.finditer(r"^@\w+\{([^,]+),", text, flags=re.M))
    return {current.group(1).strip(): text[current.start():following.start() if following else len(text)].strip()
            for current, following in zip(starts, [*starts[1:], None], strict=True)}


def cited_papers(keys: Collection[str]) -> list[tuple[str, str]]:
    """The papers of the bibliography (its ``keys``) that the registries cite, each once, as ``(heading, key)``:
    each encoding's paper and what it cites, then the tasks' sources no encoding cites (e.g. Deletang et al. for
    the Chomsky-hierarchy battery), each headed with at most six of its tasks."""
    papers: dict[str, str] = {}
    for name in encodings.names():
        for key in [encodings.meta(name)["paper"], *encodings.meta(name)["cites"]]:
            if key in keys and key not in papers:
                papers[key] = f"{key} (`{name}`)"
    by_paper: dict[str, list[str]] = {}
    for name in tasks.names():
        key = tasks.TASKS.meta(name).get("paper")
        if key and key in keys and key not in papers:
            by_paper.setdefault(key, []).append(name)
    for key, names in by_paper.items():
        shown = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        papers[key] = f"{key} (tasks {shown})"
    return [(heading, key) for key, heading in papers.items()]
