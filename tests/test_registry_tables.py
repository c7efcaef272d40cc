"""The registries in tables (:mod:`pebench.render.registry_tables`), as the encoding and task pages show them."""

from __future__ import annotations

from pebench import encodings, tasks
from pebench.render import registry_tables


def test_encodings_table_lists_every_encoding_with_the_suites_comparing_it_and_links_names_as_asked():
    table = registry_tables.encodings_table(lambda text, name: f"<{text}|{name}>")
    rows = {row[0].text: [cell.text for cell in row] for row in table.rows}
    # the label papers use, linked, then the name to type where it differs
    # grouped by family, by name within one: NoPE, then the absolute encodings
    assert list(rows)[:3] == ["<NoPE|none> (`none`)", "<Learned|learned> (`learned`)",
                              "<Sinusoidal|sinusoidal> (`sinusoidal`)"]
    families = [row[1] for row in rows.values()]
    assert families == sorted(families, key=list(dict.fromkeys(encodings.KIND_FAMILIES.values())).index)
    assert rows["<FoX|fox> (`fox`)"][1] == "data-dependent" and rows["<Canon|canon> (`canon`)"][1] == "architectural"
    assert len(rows) == len(encodings.names())
    randomized = rows["<Randomized|randomized> (`randomized`)"]
    assert randomized[5] == "standard, extended, paper, replication"  # randomized:rope is compared
    assert rows["<CoPE|cope> (`cope`)"][5] == "standard, extended, paper, replication"  # protocol v3: the whole field
    assert "addition" in [row[0].text for row in registry_tables.tasks_table().rows]  # its name in words: the same
    assert "reverse string (`reverse_string`)" in [row[0].text for row in registry_tables.tasks_table().rows]


def test_a_wrapper_is_built_around_rope_with_its_defaults():
    call_name, call = registry_tables.build_call("randomized")
    assert call_name == "randomized:rope" and call.startswith('pe = encodings.build("randomized:rope", d_model=64')


def test_task_examples_render_the_first_example_for_each_architecture():
    examples, rendered = registry_tables.task_examples("copy")
    assert len(examples.rows) == 2 and set(rendered) == set(tasks.ARCHS)
    decoder = rendered["decoder"]
    length = registry_tables.example_length(tasks.get("copy"))
    assert [row[0].text for row in decoder.rows] == ["token", "label"]
    assert decoder.rows[0][length + 1].text == "SEP"  # the input, then the separator
    assert "_" in [cell.text for cell in rendered["encoder"].rows[0]]  # the encoder's blanks


def test_task_facts_give_the_chance_accuracy_at_the_example_length():
    facts = {row[0].text: row[1].text for row in registry_tables.task_facts("copy").rows}
    length = registry_tables.example_length(tasks.get("copy"))
    assert facts[f"chance token accuracy at length {length}"] == f"{tasks.get('copy').chance_accuracy(length):.3f}"


def test_the_readme_and_the_citation_name_every_registered_encoding():
    """The README's and CITATION.cff's lists of encodings are written by hand: each registered encoding's label is
    in both (they named 9 of 15 once the field joined the standard suite)."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text().split("## Quickstart")[0]
    abstract = yaml.safe_load((root / "CITATION.cff").read_text())["abstract"]
    for text in (readme, abstract):
        joined = " ".join(text.split()).lower()  # the lines of a paragraph joined
        assert [label for label in map(encodings.label, encodings.names()) if label.lower() not in joined] == []
