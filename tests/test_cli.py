"""``pebench list``: plain words, aligned columns, descriptions wrapped at word boundaries, never cut."""

from __future__ import annotations

import pytest

from pebench import encodings, tasks
from pebench.cli import columns, describe_run_seeds, describe_seeds, main, plain


@pytest.mark.parametrize("width", [80, 100, 160])
def test_list_prints_every_word_of_every_description_within_the_width(width, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    for what, described in (("tasks", {n: tasks.get(n).describe() for n in tasks.names()}),
                            ("encodings", {n: encodings.meta(n)["summary"] for n in encodings.names()})):
        assert main(["list", what]) == 0
        out = capsys.readouterr().out
        assert "``" not in out and ":class:" not in out and "**" not in out
        assert all(len(line) <= width for line in out.splitlines()), max(out.splitlines(), key=len)
        flat = " ".join(out.split())
        for name, text in described.items():
            assert plain(text) in flat, f"{what}: the description of {name} is cut or mangled"


def test_columns_align_and_wrap_at_word_boundaries():
    text = columns(["name", "description"], [["a", "one two three four five six"], ["longer", "x"]], width=60)
    assert text.splitlines() == ["name    description", "a       one two three four five six", "longer  x"]
    narrow = columns(["name", "kind", "description"], [["a", "b", "alpha beta gamma delta epsilon"]], width=20)
    assert narrow.splitlines()[2:] == ["a     b", "    alpha beta gamma", "    delta epsilon"]


def test_seed_counts_are_not_read_as_zero_seeds():
    """``pebench list suites`` and the protocol page's suite table say "1 (seed 0)", not "0"."""
    assert describe_seeds([0]) == "1 (seed 0)"
    assert describe_seeds([2, 0, 1]) == "3 (seeds 0-2)" and describe_seeds([0, 5]) == "2 (seeds 0, 5)"


def test_a_suites_seeds_are_those_of_its_runs_per_experiment():
    """The replication suite's experiments run 3, 5 or 10 seeds: the listing says so, not the suite default."""
    from pebench.plan.experiment import suite_runs
    from pebench.protocol import SEEDS

    seeds = SEEDS["standard"]  # protocol v3: six; v4: two
    assert describe_run_seeds(suite_runs("standard")) == f"{len(seeds)} (seeds {seeds[0]}-{seeds[-1]})"
    assert describe_run_seeds(suite_runs("replication")) == "3-10 per experiment (seeds 0-9)"
    assert describe_run_seeds([]) == "0"


def test_list_protocol_prints_the_constants_the_protocol_page_quotes(capsys, monkeypatch):
    from pebench.protocol import SCALES
    from pebench.render.protocol_tables import protocol_values

    monkeypatch.setenv("COLUMNS", "200")  # the terminal's width decides the layout (a CI run has none)
    assert main(["list", "protocol"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["constant", "value"]
    assert f"step_cap {SCALES['standard']['steps']}" in [" ".join(line.split()) for line in lines]
    assert len([line for line in lines if line and not line.startswith(" ")]) == len(protocol_values()) + 1
    monkeypatch.setenv("COLUMNS", "80")  # too narrow for the longest value beside its name: values go below
    assert main(["list", "protocol"]) == 0
    narrow = capsys.readouterr().out.splitlines()
    assert narrow[:2] == ["constant", "    value"]
    assert len([line for line in narrow if line and not line.startswith(" ")]) == len(protocol_values()) + 1
