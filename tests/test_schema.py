"""The row contract (pebench.store.schema): the declared columns match what a run records, and the two readings
every analysis shares (completed, fitted) are written once."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from pebench import store
from pebench.plan.experiment import make_spec
from pebench.store import schema

ROOT = Path(__file__).resolve().parent.parent


def spec(**overrides):
    config = {"task": "copy", "encoding": "rope", "arch": "decoder", "seed": 3, "d_model": 16, "n_layers": 1,
              "n_heads": 2, "steps": 3, "train_max_len": 4, "eval_lengths": [2, 6], **overrides}
    return make_spec("smoke", "test", config)


def test_a_resolved_run_spec_yields_exactly_the_declared_config_columns():
    every = {*schema.CONFIG_COLUMNS, "seed", *schema.DERIVED_CONFIG_COLUMNS}
    # every optional field set away from its default: each is recorded
    full = spec(protocol=3, length_seed=7, fit_every=10, fit_lengths="all", fit_disjoint=True,
                stop_at_fit=True, fit_patience=100, steps=30, extend_to=60, extend_window=10, extend_min_gain=0.05)
    assert set(full.resolved()) == every
    # every optional field at its default (protocol 2: v2 run ids predate the field): none is recorded
    assert set(spec(protocol=2).resolved()) == every - set(schema.OPTIONAL_CONFIG_COLUMNS)
    assert set(schema.OPTIONAL_CONFIG_COLUMNS) <= set(schema.CONFIG_COLUMNS)
    assert len(set(schema.CONFIG_COLUMNS)) == len(schema.CONFIG_COLUMNS)
    assert "seed" not in schema.CONFIG_COLUMNS  # runs of one cell differ in the seed only


def test_the_identity_and_cell_columns_are_configuration_or_recorded_by_every_run():
    recorded_by_the_runner = {"status", "run_id", "pebench_version", "seed"}
    assert set(schema.IDENTITY_COLUMNS) <= {*schema.CONFIG_COLUMNS, *recorded_by_the_runner}
    assert set(schema.CELL_COLUMNS) - {"variant"} <= set(schema.CONFIG_COLUMNS)
    assert set(schema.GROUP_COLUMNS) <= set(schema.CELL_COLUMNS)
    assert schema.CHECKSUM_COLUMN in schema.TEXT_COLUMNS


def test_a_committed_run_file_has_every_declared_column():
    path = store.raw_files(ROOT / "results" / "standard" / "raw")[0]
    frame = store.read_run_file(path)
    configuration = set(schema.CONFIG_COLUMNS) - set(schema.OPTIONAL_CONFIG_COLUMNS)
    missing = {*schema.IDENTITY_COLUMNS, *schema.METRIC_COLUMNS, *configuration, schema.CHECKSUM_COLUMN} - set(frame)
    assert not missing, f"{path.name} lacks {sorted(missing)}"
    assert set(frame["status"]) <= set(schema.STATUSES)
    assert set(frame["variant"]) == set(schema.variant_labels(frame["eval_variants"].iloc[0]))


def test_completed_leaves_out_failed_runs_only():
    rows = pd.DataFrame({"status": ["ok", "diverged", "failed"]})
    assert schema.completed(rows).tolist() == [True, True, False]
    assert schema.completed(pd.DataFrame({"token_acc": [0.5, 0.7]})).tolist() == [True, True]  # no status column


def test_a_run_counts_as_fitted_unless_its_fitted_value_says_it_did_not():
    # as run_metrics writes it (1.0, 0.0, NaN for no fit criterion) and as a run file holds it (text)
    numbers = pd.DataFrame({"fitted": [1.0, 0.0, np.nan]})
    text = pd.DataFrame({"fitted": ["True", "False", None]})
    booleans = pd.DataFrame({"fitted": [True, False, None]})
    for rows in (numbers, text, booleans):
        assert schema.fitted(rows).tolist() == [True, False, True], rows
        assert schema.fit_flags(rows).tolist()[:2] == [1.0, 0.0] and np.isnan(schema.fit_flags(rows).iloc[2])
    assert schema.fitted(pd.DataFrame({"seed": [0, 1]})).tolist() == [True, True]  # no fit criterion recorded
    assert schema.fit_flag(" TRUE ") == 1.0 and np.isnan(schema.fit_flag(""))


def test_rule_one_and_the_completed_filter_are_written_only_in_the_schema():
    """Protocol rule 1 ("a run counts as fitted unless ...") and the completed-run filter were written out in six
    places; each now calls pebench.store.schema, so no other module spells them out."""
    spelled = re.compile(r"""fillna\(1(\.0)?\)\s*>\s*0|\[["']status["']\]\s*[!=]=\s*["']failed["']|"""
                         r"""\[["']status["']\]\.(eq|ne)\(["']failed["']\)""")
    sources = [*sorted((ROOT / "pebench").rglob("*.py")), *sorted((ROOT / "docs" / "_ext").glob("*.py")),
               *sorted((ROOT / "experiments").glob("*.py"))]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sources if path.name != "schema.py"
             for number, line in enumerate(path.read_text().splitlines(), start=1) if spelled.search(line)]
    assert not found, f"use pebench.store.schema.fitted / completed instead: {found}"


def test_encodings_sort_in_their_canonical_order_and_the_trained_model_first():
    encodings = pd.Series(["rope", "not_registered", "none", "alibi"], name="encoding")
    assert encodings.sort_values(key=schema.sort_key).tolist() == ["none", "rope", "alibi", "not_registered"]
    variants = pd.Series(["yarn", schema.BASE_VARIANT, "linear"], name="variant")
    assert variants.sort_values(key=schema.sort_key).tolist() == [schema.BASE_VARIANT, "yarn", "linear"]
    assert schema.encoding_label("randomized:none") == "Randomized NoPE"
    # the names papers use, never an identifier; a name not registered here (a plugin not loaded) as it is
    assert [schema.encoding_label(name) for name in ("t5", "xpos", "alibi", "kerple_log", "p_rope")] == [
        "T5 bias", "xPos", "ALiBi", "Kerple (log)", "p-RoPE"]
    assert schema.encoding_label("randomized:my_plugin") == "randomized:my_plugin"
    assert schema.order_dependent("copy") is True and schema.order_dependent("not_a_task") is None


def test_tasks_are_shown_in_words_and_stored_by_their_names():
    """A task is shown as the papers write it in running text (``reverse_string``: reverse string), or by its
    registered label; a name not registered here (a plugin not loaded) as it is."""
    assert [schema.task_label(name) for name in ("reverse_string", "copy", "missing_duplicate")] == [
        "reverse string", "copy", "missing duplicate"]
    assert schema.task_label("charlm") == "character LM" and schema.task_label("flip_flop_dense") == "flip-flop (dense)"
    assert schema.task_label("my_plugin_task") == "my_plugin_task"
    assert schema.task_labels(["cycle_navigation", "even_pairs"]) == "cycle navigation, even pairs"
    assert schema.page_title("task", "reverse_string") == "Reverse string (`reverse_string`)"
    assert schema.page_title("encoding", "xpos") == "xPos (`xpos`)"  # a label as papers write it, not capitalised


def test_people_words_spell_experiments_as_a_reader_writes_them():
    from pebench.store.schema import people_words

    assert people_words("length_extrapolation", "decoder") == "Length extrapolation, decoder"
    assert people_words("lm_extrapolation") == "LM extrapolation"  # not "Lm extrapolation"
    assert people_words("rope_scaling") == "RoPE scaling"


def test_findings_name_an_experiment_by_its_declared_title_else_in_people_words():
    from pebench.report.layout_findings import named
    from pebench.report_spec import ReportSpec

    assert named("kazemnejad2023", ReportSpec(title="Replication: Kazemnejad et al. 2023"), "decoder") == \
        "Replication: Kazemnejad et al. 2023, decoder"
    assert named("length_extrapolation", ReportSpec(), "encoder") == "Length extrapolation, encoder"
    assert named("lm_extrapolation", ReportSpec()) == "LM extrapolation"


def test_recorded_protocols_read_a_row_without_the_field_as_v2():
    import pandas as pd

    from pebench.store.schema import recorded_protocols

    assert recorded_protocols(pd.DataFrame({"experiment": ["a", "b"]})) == {2}  # the field predates v3
    assert recorded_protocols(pd.DataFrame({"experiment": ["a", "b"], "protocol": [3.0, None]})) == {2, 3}
    assert recorded_protocols(pd.DataFrame({"experiment": ["a"], "protocol": [3]})) == {3}
    assert recorded_protocols(pd.DataFrame(columns=["experiment"])) == set()
