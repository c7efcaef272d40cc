"""Results folders from anyone, round two (issue 63): a results folder, a plugin's names and a manifest are
untrusted input. Each defect of the issue has a test here that fails on the code before its fix (R1-R11), and
property tests (Hypothesis) feed the readers arbitrary and adversarial input: one clear error or a result that is
what the file says, never a traceback or a write outside the folder."""

from __future__ import annotations

import gzip
import io
import os
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from pebench import registry, store
from pebench.config import run_id_of
from pebench.store import FolderLockError, ResultsError, lock_folder
from pebench.store.schema import RUN_ID_COLUMNS


def tiny_run(folder: Path) -> Path:
    """One tiny run made by the runner in ``folder`` (a few seconds on a CPU); returns its run file."""
    from test_runner import tiny_spec

    from pebench.plan.runner import run_sweep

    spec = tiny_spec()
    run_sweep([spec], folder, on_done=lambda spec, rows: None)
    return folder / "raw" / store.run_file_name(spec.run_id)


def rewrite(path: Path, **changes) -> None:
    """Rewrite a run file with ``changes`` to its columns, its checksum recomputed (an edit that hides itself)."""
    frame = store.read_run_csv(io.StringIO(store.read_run_text(path))).drop(columns=["rows_sha256"])
    for column, value in changes.items():
        frame[column] = value
    path.write_bytes(store.run_file_bytes(frame.to_dict("records"), path.name))


@pytest.fixture(scope="module")
def made_run(tmp_path_factory) -> Path:
    return tiny_run(tmp_path_factory.mktemp("made") / "out")


def copy_of(run: Path, folder: Path) -> Path:
    (folder / "raw").mkdir(parents=True)
    path = folder / "raw" / run.name
    path.write_bytes(run.read_bytes())
    return path


# --------------------------------------------------------------------------- R1: a hard-linked lock file


def test_r1_a_hard_linked_lock_file_is_refused_and_its_target_left_as_it_was(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    os.link(target, out / ".lock")
    with pytest.raises(FolderLockError, match=r"\.lock is a hard link"):
        with lock_folder(out):
            pass
    assert target.read_text() == "keep me\n"


# --------------------------------------------------------------------------- R2: one name rule


@pytest.mark.parametrize("name", ["ünï_enc", "x%_&#{y}", "", "_x", "a/b", "1e5", "nan", "None", "x" * 101, 3])
def test_r2_a_name_no_reader_accepts_is_refused_at_registration_on_one_line(name):
    names = registry.Registry("encoding")
    with pytest.raises(ValueError, match="name must be letters, digits") as caught:
        names.register(name)(object)
    assert "\n" not in str(caught.value)
    assert not registry.is_name(name)


def test_r2_a_plugin_registering_such_a_name_fails_to_load_naming_it(tmp_path):
    plugin = tmp_path / "bad_names.py"
    plugin.write_text("from pebench import tasks\n"
                      "@tasks.TASKS.register('x%_&#{y}', order_dependent=False)\n"
                      "class Mine(tasks.Task):\n    pass\n")
    with pytest.raises(registry.PluginError, match=r"name must be .*'x%_&#\{y\}'"):
        registry.load_plugin(str(plugin))


@pytest.mark.parametrize("name", ["rope", "none", "t5", "length_extrapolation", "x.y-z", "A" * 100])
def test_r2_every_name_the_registry_takes_a_run_file_takes(name):
    from pebench.store.schema import is_column_name

    registry.Registry("encoding").register(name)(object)
    assert all(is_column_name(column, name) for column in ("suite", "experiment", "task", "arch", "encoding"))


# --------------------------------------------------------------------------- R4: a run file proves what it is


def test_r4_a_run_id_is_its_configurations_hash(made_run):
    first = store.read_run_file(made_run).iloc[0]
    from pebench.store.run_file_check import configuration

    text = {column: str(first[column]) for column in RUN_ID_COLUMNS if column in first and pd.notna(first[column])}
    assert run_id_of(configuration(text)) == first["run_id"]


def test_r4_an_edited_configuration_with_its_checksum_recomputed_is_damaged_not_complete(made_run, tmp_path):
    path = copy_of(made_run, tmp_path / "out")
    rewrite(path, lr=0.5)
    with pytest.raises(ResultsError, match="is not the id of the configuration it records"):
        store.read_run_file(path)
    found = store.scan(tmp_path / "out", [store.run_file_id(path)])
    assert not found.complete and "not the id of the configuration" in found.bad[path.name]
    with pytest.raises(ResultsError, match="1 bad result file"):
        store.load(tmp_path / "out")


@pytest.mark.parametrize("column, value", [("seed", "1e20"), ("seed", 10**20), ("d_model", -5), ("steps", "nan"),
                                           ("lr", "inf"), ("dropout", 2.0), ("eval_seed", -1), ("n_heads", 0.5)])
def test_r4_a_configuration_no_run_can_have_is_refused(made_run, tmp_path, column, value):
    path = copy_of(made_run, tmp_path / "out")
    rewrite(path, **{column: value})
    with pytest.raises(ResultsError, match=f"configuration is not one a run can have .*{column}"):
        store.read_run_file(path)


def test_r4_the_committed_run_files_verify():
    from pebench.plan.experiment import suite_runs

    data = store.load(Path(__file__).parents[1] / "results" / "standard")
    assert len(data) and data["run_id"].nunique() == len(suite_runs("standard"))  # every run of the reference


def gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


# --------------------------------------------------------------------------- R3: a plugin is its content


def test_r3_an_edited_copy_of_a_plugin_at_another_path_is_refused_on_resume(tmp_path, monkeypatch, capsys):
    from test_untrusted_code import ONE_CELL, forget_plugins

    from pebench.cli import main

    plugin, out = tmp_path / "my_plugin.py", tmp_path / "out"
    plugin.write_text("SCALE = 1.0\n")
    forget_plugins(monkeypatch)
    assert main(["--plugin", str(plugin), *ONE_CELL, "--filter", "encoding=none", "--out", str(out)]) == 0
    made = sorted((out / "raw").iterdir())
    copy = tmp_path / "elsewhere" / "my_plugin.py"
    copy.parent.mkdir()
    copy.write_text("SCALE = 2.0\n")
    forget_plugins(monkeypatch)
    capsys.readouterr()
    assert main(["--plugin", str(copy), *ONE_CELL, "--filter", "encoding=none,alibi", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"plugin {copy} (SHA-256 " in err and f"at {plugin}" in err, err
    assert sorted((out / "raw").iterdir()) == made
    copy.write_text("SCALE = 1.0\n")  # the same content at another path is the same plugin: resumed
    forget_plugins(monkeypatch)
    assert main(["--plugin", str(copy), *ONE_CELL, "--filter", "encoding=none,alibi", "--out", str(out)]) == 0


# --------------------------------------------------------------------------- R5: report declarations are checked


def folder_of_an_unregistered_experiment(folder: Path, declaration: dict) -> Path:
    """A results folder of an experiment this installation does not register, whose manifest declares its report
    as ``declaration`` (so that the folder's own declaration is the one read)."""
    import json

    from test_results import run_frame

    raw = folder / "raw"
    raw.mkdir(parents=True)
    for encoding in ("none", "rope"):
        for seed in (0, 1):
            frame = run_frame("mine", "copy", encoding, "decoder", seed, 8,
                              [{"eval_len": length, "token_acc": 0.5 + 0.01 * seed} for length in (4, 8, 16)])
            frame.to_csv(raw / f"{frame['run_id'].iloc[0]}.csv", index=False)
    (folder / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": [],
                                                      "report_declarations": {"mine": declaration}}))
    return folder


@pytest.mark.parametrize("declaration, said", [
    ({"title": 5}, "its title must be text"), ({"title": ["a"]}, "its title must be text"),
    ({"also": "order"}, "its also must be a list of layout names"),
    ({"key_metrics": "token_acc"}, "its key_metrics must be a list of metric names"),
    ({"position": "first"}, "its position must be an integer"), ({"layout": {"a": 1}}, "its layout must be a name"),
    ({"comparisons": [["rope"]]}, "its comparisons must be a list of"),
])
@pytest.mark.parametrize("command", ["report", "show", "compare"])
def test_r5_a_malformed_recorded_declaration_is_one_line(tmp_path, capsys, declaration, said, command):
    from pebench.cli import main

    folder = folder_of_an_unregistered_experiment(tmp_path / "results", declaration)
    args = [command, str(folder)] + ([str(folder)] if command == "compare" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err


def test_r5_an_unknown_key_metric_ends_compare_on_one_line(tmp_path, capsys):
    from pebench.cli import main

    folder = folder_of_an_unregistered_experiment(tmp_path / "results", {"key_metrics": ["no_such_metric"]})
    assert main(["compare", str(folder), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown run metric 'no_such_metric'" in err, err


def test_r5_the_declarations_pebench_records_read_back_as_declared():
    from pebench.plan.experiment import load_experiments, report_declarations
    from pebench.report_spec import report_spec_from_record

    names = load_experiments().names()
    for name, record in report_declarations(names).items():
        assert report_spec_from_record(record) == load_experiments().get(name).report


# --------------------------------------------------------------------------- R6: nothing imported from the cwd


@pytest.mark.parametrize("module", ["pandas", "numpy", "typing", "json"])
def test_r6_python_m_pebench_imports_nothing_from_the_working_directory(tmp_path, module):
    import subprocess
    import sys

    mark = tmp_path / "ran"
    (tmp_path / f"{module}.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    done = subprocess.run([sys.executable, "-m", "pebench", "list"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert not mark.exists()


# --------------------------------------------------------------------------- R7-R11: rough edges


def test_r7_ctrl_c_while_the_command_starts_is_one_line(tmp_path):
    """Ctrl-C in the first few tenths of a second lands in the CLI's imports: simulated by an import that is
    interrupted, deterministically."""
    import subprocess
    import sys

    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def interrupted(name, *args, **kwargs):\n"
            "    if name == 'pebench.render.tables':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = interrupted\n"
            "from pebench.cli import main\n"
            "sys.exit(main(['list', 'suites']))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130 and done.stderr == "pebench: interrupted\n", done.stderr


def test_r8_combine_of_a_folder_and_its_raw_is_given_twice(tmp_path, capsys):
    from test_untrusted_folders import small_results

    from pebench.cli import main

    folder = small_results(tmp_path / "a")
    assert main(["combine", str(folder), str(folder / "raw"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder / 'raw'} is given twice (also as {folder})" in err, err
    assert not (tmp_path / "out").exists()


def test_r9_an_unreachable_dask_scheduler_leaves_no_out_folder(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from pebench.cli import main
    from pebench.plan import executors

    monkeypatch.setattr(executors, "DASK_CONNECT_SECONDS", 2)
    out = tmp_path / "new" / "out"
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--dask", "127.0.0.1:1",
                 "--out", str(out)]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


COMMITTED_SNAPSHOT = Path(__file__).parents[1] / "results" / "history" / "standard-v2-aaa7cfcc"


def snapshot_copy(folder: Path, main_csv: bytes | None = None, **fields) -> Path:
    """A copy of the committed snapshot with ``fields`` of its description and its main table replaced (the
    digests it records made to match: an edit that hides itself)."""
    import hashlib
    import json
    import shutil

    shutil.copytree(COMMITTED_SNAPSHOT, folder)
    record = json.loads((folder / "snapshot.json").read_text())
    if main_csv is not None:
        (folder / "main.csv").write_bytes(main_csv)
        record["files"]["main.csv"] = hashlib.sha256(main_csv).hexdigest()
    record.update(fields)
    (folder / "snapshot.json").write_text(json.dumps(record))
    return folder


def with_tier(value: str) -> bytes:
    frame = pd.read_csv(COMMITTED_SNAPSHOT / "main.csv", dtype=str)
    ranked = frame.index[frame["ranked"] == "True"][0]
    frame.loc[ranked, "tier"] = value
    return frame.to_csv(index=False).encode()


def without_experiment() -> bytes:
    frame = pd.read_csv(COMMITTED_SNAPSHOT / "main.csv", dtype=str)
    frame.loc[0, "experiment"] = ""
    return frame.to_csv(index=False).encode()


@pytest.mark.parametrize("fields, main_csv, said", [
    ({"protocol": "x"}, None, "is not a snapshot description"),
    ({"protocol": 3}, None, "is not a snapshot description"),  # its results version says v2
    ({"protocol": True}, None, "is not a snapshot description"),
    ({"commits": "abc"}, None, "is not a snapshot description"),
    ({"files": {"../main.csv": "0" * 64, "main.csv": "0" * 64}}, None, "is not a snapshot description"),
    ({}, with_tier("inf"), "not a main table pebench writes"),
    ({}, with_tier("-1"), "not a main table pebench writes"),
    ({}, with_tier("1.5"), "not a main table pebench writes"),
    ({}, with_tier("many"), "not a main table pebench writes"),
    ({}, without_experiment(), "a row without its experiment, arch or encoding"),
])
def test_r10_changes_refuses_a_snapshot_of_values_pebench_never_writes(tmp_path, capsys, fields, main_csv, said):
    from pebench.cli import main

    snapshot = snapshot_copy(tmp_path / "snapshot", main_csv, **fields)
    assert main(["changes", str(snapshot), str(COMMITTED_SNAPSHOT)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err


def test_r10_the_committed_snapshot_reads():
    from pebench.store.history import read_snapshot

    assert read_snapshot(COMMITTED_SNAPSHOT)["protocol"] == 2


@pytest.mark.parametrize("inside", ["raw", "raw/report"])
def test_r11_a_report_is_never_written_into_the_run_files_folder(tmp_path, capsys, inside):
    from test_untrusted_folders import small_results

    from pebench.cli import main

    folder = small_results(tmp_path / "results")
    before = sorted(p.name for p in (folder / "raw").rglob("*"))
    assert main(["report", str(folder), "--out", str(folder / inside)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is (inside) the run files' folder" in err, err
    assert sorted(p.name for p in (folder / "raw").rglob("*")) == before


# --------------------------------------------------------------------------- 6: {eval-rst} imports nothing new


def test_6_an_eval_rst_block_never_makes_autodoc_import_a_file_of_a_users_folder(tmp_path, monkeypatch):
    """A namespace package's path spans every folder on the import path (the working directory too, under
    ``python -m sphinx`` in a downloaded folder): autodoc of ``<namespace>.<module>`` would import a file there."""
    import importlib
    import sys

    from pebench.render.page_check import UnsafePage, check_page

    package = tmp_path / "users_folder" / "ns_round2"
    package.mkdir(parents=True)
    (package / "evil.py").write_text("raise SystemExit('ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "users_folder"))
    monkeypatch.setitem(sys.modules, "ns_round2", importlib.import_module("ns_round2"))  # a namespace package
    page = tmp_path / "site" / "_generated" / "results" / "page.md"
    for line in (".. automodule:: ns_round2.evil", ".. autoclass:: ns_round2.evil.X", ".. automodule:: os.evil"):
        with pytest.raises(UnsafePage, match="the reStructuredText"):
            check_page(f"```{{eval-rst}}\n{line}\n   :members:\n```\n", page)
    assert "ns_round2.evil" not in sys.modules
    for line in (".. automodule:: pebench.registry", ".. autoclass:: pebench.registry.Registry",
                 ".. automodule:: ns_round2", ".. autofunction:: os.path.join"):  # imported already: documented
        check_page(f"```{{eval-rst}}\n{line}\n   :members:\n```\n", page)


# --------------------------------------------------------------------------- 5: property tests (Hypothesis)
# Each reader, given arbitrary and adversarial input, gives one clear error (ResultsError or ValueError, one line)
# or a result that is what the input says; never another exception, nor a file written. Examples per test: the
# max_examples of its settings (each stays under ~10 s here).

from hypothesis import HealthCheck, example, given, settings  # noqa: E402 (the property tests' own imports)
from hypothesis import strategies as st  # noqa: E402

PROPERTY = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])

#: JSON values of any shape, nested a few levels
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4), max_leaves=12)
#: text that names, numbers, paths and markup are made of
TRICKY = st.sampled_from(["", "rope", "none", "nan", "inf", "-1", "1e20", "True", "../x", "a/b", "ünï", "x%_&#{y}",
                          "=cmd()", "{{ x }}", "\x1b[31m", "0" * 16, "[1, 2]", "{}", '"q"', "a,b", "\n"])
FIELD = TRICKY | st.text(max_size=12) | st.integers().map(str) | st.floats().map(repr)


def one_line_error(call) -> object:
    """``call()``'s result, or None where it raised a ResultsError or ValueError of one line (anything else fails)."""
    try:
        return call()
    except ValueError as exc:  # ResultsError is a ValueError
        assert "\n" not in str(exc).strip(), str(exc)
        return None


def files_of(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def made_text(made_run) -> str:
    return store.read_run_text(made_run)


@settings(PROPERTY, max_examples=60)
@given(column=st.integers(min_value=0, max_value=200), value=FIELD, row=st.integers(min_value=0, max_value=50),
       keep_checksum=st.booleans())
def test_5_a_run_file_with_any_field_edited_is_refused_or_read_as_written(made_text, tmp_path, column, value, row,
                                                                          keep_checksum):
    import csv

    records = list(csv.reader(io.StringIO(made_text)))
    header, rows = records[0], records[1:]
    at, number = column % (len(header) - 1), row % len(rows)  # any field but the checksum
    rows[number][at] = value
    if keep_checksum:  # an edit that hides itself: the checksum made to match
        from pebench.store.run_file_check import rows_checksum

        checksum = rows_checksum([header[:-1], *[r[:-1] for r in rows]])
        rows = [[*r[:-1], checksum] for r in rows]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example (an example may run again)
    (folder / "raw").mkdir()
    path = folder / "raw" / "run.csv"
    path.write_text(out.getvalue())
    before = files_of(tmp_path)
    frame = one_line_error(lambda: store.read_run_file(path))
    assert files_of(tmp_path) == before
    if frame is not None:  # read: what the file says, its id its configuration's
        from pebench.store.run_file_check import configuration

        first = dict(zip(header, rows[0], strict=True))
        assert run_id_of(configuration(first)) == first["run_id"] == frame["run_id"].iloc[0]
        assert len(frame) == len(rows)
        if header[at] in RUN_ID_COLUMNS and value != records[1 + number][at]:
            raise AssertionError(f"an edited {header[at]} ({value!r}) was read as a result")


@settings(PROPERTY, max_examples=80)
@given(data=st.binary(max_size=400) | st.text(max_size=400).map(str.encode), compressed=st.booleans())
@example(data=b"run_id\n0000000000000000\n", compressed=False)
@example(data=b'"unclosed\n', compressed=True)
def test_5_arbitrary_bytes_as_a_run_file_are_one_clear_error(tmp_path, data, compressed):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / "raw").mkdir()
    path = folder / "raw" / f"0000000000000000.csv{'.gz' if compressed else ''}"
    path.write_bytes(gz(data.decode("latin-1")) if compressed else data)
    assert one_line_error(lambda: store.read_run_file(path)) is None
    assert one_line_error(lambda: store.load(folder)) is None


#: manifests of the shape pebench writes, with any value in any place
MANIFESTS = st.fixed_dictionaries({
    "suite": FIELD | JSON,
    "invocations": st.lists(st.fixed_dictionaries({
        "plugins": st.lists(st.fixed_dictionaries({"plugin": FIELD | JSON, "sha256": FIELD | JSON}), max_size=3)
        | JSON}) | JSON, max_size=3) | JSON,
    "report_declarations": st.dictionaries(FIELD, st.dictionaries(st.sampled_from(
        ["layout", "position", "title", "also", "key_metrics", "comparisons", "primary_metric", "x"]), FIELD | JSON,
        max_size=4) | JSON, max_size=3) | JSON,
}) | JSON


@settings(PROPERTY, max_examples=100)
@given(manifest=MANIFESTS)
def test_5_any_manifest_is_read_or_refused_on_one_line(tmp_path, manifest):
    import json

    from pebench.analysis.declarations import recorded_report_specs
    from pebench.report_spec import ReportSpec

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    before = files_of(tmp_path)
    read = one_line_error(lambda: store.read_manifest(folder))
    if read is not None:
        assert read == json.loads(json.dumps(manifest))
    one_line_error(lambda: store.check_same_plugins(folder))
    specs = one_line_error(lambda: recorded_report_specs(folder))
    for name, spec in (specs or {}).items():
        assert registry.is_name(name) and isinstance(spec, ReportSpec)
        assert isinstance(spec.title, str) and all(registry.is_name(m) for m in (*spec.key_metrics, *spec.also))
    assert files_of(tmp_path) == before


@settings(PROPERTY, max_examples=300)
@given(record=st.dictionaries(st.sampled_from(["layout", "position", "title", "caption", "figure_caption",
                                               "key_metrics", "also", "primary_metric", "comparisons", "other"]),
                              FIELD | JSON | st.lists(FIELD, max_size=3) | st.lists(st.lists(FIELD, max_size=3),
                                                                                      max_size=2), max_size=5) | JSON)
@example(record={"also": "order"})
@example(record={"title": 5})
def test_5_a_report_declaration_is_one_of_its_fields_shapes_or_one_clear_error(record):
    from pebench.report_spec import report_spec_from_record

    spec = one_line_error(lambda: report_spec_from_record(record))
    if spec is not None:  # what the record says, lists as tuples
        for key, value in record.items():
            assert getattr(spec, key) == (tuple(tuple(v) if isinstance(v, list) else v for v in value)
                                          if isinstance(value, list) else value)
        assert all(isinstance(getattr(spec, key), str) for key in ("title", "caption", "figure_caption"))
        assert isinstance(spec.also, tuple) and all(registry.is_name(name) for name in spec.also)


@settings(PROPERTY, max_examples=30)
@given(fields=st.dictionaries(st.sampled_from(["suite", "protocol", "results_version", "commit", "commits",
                                               "raw_sha256", "main_table", "files", "pebench_version"]),
                              FIELD | JSON, max_size=3),
       tier=st.none() | FIELD)
@example(fields={"protocol": "x"}, tier="inf")
def test_5_any_snapshot_is_read_as_it_says_or_refused_on_one_line(tmp_path, fields, tier):
    import json

    from pebench.report.changes import verdict_changes
    from pebench.store.history import FIELDS, read_snapshot

    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "snapshot"
    snapshot_copy(folder, None if tier is None else with_tier(tier), **fields)
    before = files_of(tmp_path)
    record = one_line_error(lambda: read_snapshot(folder))
    if record is not None:
        written = json.loads((folder / "snapshot.json").read_text())
        assert {key: record[key] for key in FIELDS} == {key: written[key] for key in FIELDS}
        assert type(record["protocol"]) is int and record["results_version"].startswith(f"v{record['protocol']}-")
    found = one_line_error(lambda: verdict_changes(folder, COMMITTED_SNAPSHOT))
    if found is not None:
        ranked = found.frame[found.frame["ranked_before"].astype(bool)]["tier_before"].dropna()
        assert ((ranked >= 1) & (ranked == ranked.round()) & (ranked < float("inf"))).all()
    assert files_of(tmp_path) == before


@settings(PROPERTY, max_examples=300)
@given(name=TRICKY | st.text(max_size=110) | st.from_regex(registry.NAME_PATTERN, fullmatch=True))
def test_5_a_registry_takes_exactly_the_names_a_run_file_takes(name):
    from pebench.store.schema import is_column_name

    taken = one_line_error(lambda: registry.Registry("task").register(name)(object)) is not None
    assert taken == registry.is_name(name) == is_column_name("task", name)


@pytest.mark.parametrize("suite", ["../x", "a/b", "ünï", "nan", 5])
def test_2_a_manifest_names_its_suite_by_the_name_rule(tmp_path, suite):
    import json

    (tmp_path / "manifest.json").write_text(json.dumps({"suite": suite, "invocations": []}))
    with pytest.raises(ResultsError, match="is not a pebench manifest|is not a plain file name"):
        store.read_manifest(tmp_path)
