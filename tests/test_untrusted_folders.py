"""A results folder is untrusted data (issue 37): users download the reference, share reruns and run
``report``, ``show``, ``compare`` and ``combine`` on what a colleague sent. A name read from a folder never
becomes a path unchecked, no link is followed out of it, and no command deletes a file it did not write."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from test_results import run_frame, write_synthetic_results

from pebench.cli import main
from pebench.report import OUTPUTS_KEY


def small_results(folder: Path, seeds: tuple[int, ...] = (0, 1), **extra) -> Path:
    """A results folder of one small order-sensitivity grid (one figure, a few tables): quick to report."""
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for encoding, accuracy in (("none", 0.12), ("rope", 0.95)):
        for seed in seeds:
            points = [{"eval_len": 8, "condition": condition, "token_acc": value + 0.001 * seed}
                      for condition, value in (("original", accuracy), ("shuffled", 0.1))]
            frame = run_frame("order_sensitivity", "reverse", encoding, "encoder", seed, 8, points, **extra)
            frame.to_csv(raw / f"{frame['run_id'].iloc[0]}.csv", index=False)
    return folder


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def report_files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "raw" not in p.parts}


# --------------------------------------------------------------------------- 1: report deletes only its own files


def test_report_keeps_files_it_did_not_write_and_removes_what_the_previous_report_recorded(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    mine = [folder / "figures" / "my_figure.svg", folder / "tables" / "notes" / "draft.md",
            folder / "summary" / "my_summary.csv"]
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("mine\n")
    # a table an earlier report wrote and recorded, which this report no longer writes
    stale = folder / "tables" / "order_sensitivity_old_layout.md"
    stale.write_text("| an older table |\n")
    # one it recorded and you edited since, and one listed as a table without a recorded digest
    edited, undigested = folder / "tables" / "order_sensitivity_edited.md", folder / "tables" / "undigested.md"
    edited.write_text("| an older table, with my note |\n")
    undigested.write_text("| mine too |\n")
    index = json.loads((folder / "report.json").read_text())
    index["tables"].append({"name": "old", "title": "old", "caption": "",
                            "paths": {"md": "tables/order_sensitivity_old_layout.md", "x": "tables/undigested.md",
                                      "y": "tables/order_sensitivity_edited.md"}})
    index[OUTPUTS_KEY] |= {"tables/order_sensitivity_old_layout.md": sha256(b"| an older table |\n"),
                           "tables/order_sensitivity_edited.md": sha256(b"| an older table |\n")}
    (folder / "report.json").write_text(json.dumps(index))
    capsys.readouterr()
    assert main(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert all(path.read_text() == "mine\n" for path in mine)
    assert not stale.exists() and f"removed {stale}" in out
    assert out.count("removed ") == 1 and out.count("kept ") == 1 and f"kept {edited}: " in out
    assert edited.read_text() == "| an older table, with my note |\n" and undigested.read_text() == "| mine too |\n"


def test_a_report_records_every_file_it_writes_with_its_digest(tmp_path):
    """What the next report may remove is exactly what this one wrote, as it wrote it (report.json's record)."""
    folder = write_synthetic_results(tmp_path / "results")  # with a leaderboard, so its per-task ranks too
    assert main(["report", str(folder)]) == 0
    written = {str(p.relative_to(folder)): sha256(p.read_bytes()) for name in ("summary", "figures", "tables")
               for p in (folder / name).rglob("*") if p.is_file()}
    assert any(name.startswith("tables/task_ranks_") for name in written)
    assert json.loads((folder / "report.json").read_text())[OUTPUTS_KEY] == written


def test_report_never_writes_or_deletes_through_a_linked_report_folder(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    elsewhere = tmp_path / "paper" / "figures"
    elsewhere.mkdir(parents=True)
    (elsewhere / "figure1.pdf").write_text("the user's own figure\n")
    (folder / "figures").symlink_to(elsewhere, target_is_directory=True)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "figures is a symbolic link" in err, err
    assert [p.name for p in elsewhere.iterdir()] == ["figure1.pdf"]
    assert (elsewhere / "figure1.pdf").read_text() == "the user's own figure\n"


def test_a_crafted_report_json_removes_nothing_outside_the_report_folders(tmp_path, capsys):
    """report.json comes with the folder: paths out of the report's folders, or through a link, are not removed."""
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    outside = tmp_path / "main.tex"
    outside.write_text("\\documentclass{article}\n")
    (folder / "notes.txt").write_text("mine\n")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "keep.md").write_text("mine\n")
    (folder / "tables" / "linked").symlink_to(linked, target_is_directory=True)
    index = json.loads((folder / "report.json").read_text())
    index["tables"].append({"name": "x", "title": "x", "caption": "", "paths": {
        "a": "tables/../../main.tex", "b": str(outside), "c": "notes.txt", "d": "tables/linked/keep.md",
        "e": "raw"}})
    index["summaries"]["runs"] = "../main.tex"
    index[OUTPUTS_KEY] |= {text: sha256(path.read_bytes()) for text, path in [
        ("tables/../../main.tex", outside), (str(outside), outside), ("notes.txt", folder / "notes.txt"),
        ("tables/linked/keep.md", linked / "keep.md"), ("../main.tex", outside)]}
    (folder / "report.json").write_text(json.dumps(index))
    raw = sorted(p.name for p in (folder / "raw").iterdir())
    assert main(["report", str(folder)]) == 0
    assert "removed" not in capsys.readouterr().out
    assert outside.exists() and (folder / "notes.txt").exists() and (linked / "keep.md").exists()
    assert sorted(p.name for p in (folder / "raw").iterdir()) == raw


def test_a_report_of_the_same_rows_twice_removes_nothing(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    before = report_files(folder)
    capsys.readouterr()
    assert main(["report", str(folder)]) == 0
    assert "removed" not in capsys.readouterr().out
    assert report_files(folder).keys() == before.keys()
    assert pd.read_csv(folder / "summary" / "runs.csv").shape[0] == 4


# --------------------------------------------------------------------------- 2: names from data never become paths


def crafted_run(folder: Path, name: str = "0000000000000000", **fields) -> Path:
    """A run file ``raw/<name>.csv`` (schema-valid, no checksum) whose fields are overridden by ``fields``."""
    frame = run_frame("order_sensitivity", "reverse", "rope", "encoder", 5, 8,
                      [{"eval_len": 8, "condition": "original", "token_acc": 0.9}])
    for column, value in fields.items():
        frame[column] = value
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    path = folder / "raw" / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_an_experiment_name_from_a_run_file_never_writes_outside_the_report(tmp_path, capsys):
    folder = small_results(tmp_path / "shared" / "results")
    crafted_run(folder, experiment="../../../main")
    paper = tmp_path / "main.tex"
    paper.write_text("\\documentclass{article}\n")
    before = files_under(tmp_path) - files_under(folder)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its experiment '../../../main' is not a name pebench writes" in err, err
    assert paper.read_text() == "\\documentclass{article}\n"
    assert files_under(tmp_path) - files_under(folder) == before


def test_a_crafted_report_name_is_refused_by_the_writer_itself(tmp_path):
    from pebench.render.tables import Cell, Column, Table
    from pebench.report.artifacts import save_table
    from pebench.store import ResultsError

    table = Table("../escape", "t", "c", [Column("a")], [[Cell("1", 1)]], data=pd.DataFrame({"a": [1]}))
    with pytest.raises(ResultsError, match="not a plain file name"):
        save_table(table, tmp_path / "tables")
    assert not list(tmp_path.rglob("*.md"))


@pytest.mark.parametrize("column, value", [
    ("run_id", "../../../escaped"), ("task", "re/verse"), ("encoding", "rope\x1b[2J"), ("arch", ".."),
    ("suite", "standard smoke"),
])
def test_names_in_run_files_must_be_of_the_form_pebench_writes(tmp_path, column, value):
    from pebench.store import ResultsError, read_run_file

    path = crafted_run(tmp_path, **{column: value})
    with pytest.raises(ResultsError, match=f"its {column} .* is not a name pebench writes") as error:
        read_run_file(path)
    assert "\x1b" not in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("column, value, refused", [
    ("variant", "ntk\x1b]0;title\x07", "its variant 'ntk\\x1b]0;title\\x07' is not a label pebench writes"),
    ("variant", "nan", "its variant 'nan' is not a label"),  # pandas would read it as missing: as 'trained'
    ("variant", "{download}`/etc/passwd`", "its variant '{download}`/etc/passwd`' is not a label"),
    ("condition", "reversed", "its condition 'reversed' is not one pebench evaluates (original, shuffled)"),
    ("eval_variants", '[["a b", "{}"]]', "its variant 'a b' is not a label"),  # declared, as a failed run's are
    ("eval_conditions", '["original", 1]', "its eval_conditions '[\"original\", 1]' is not what pebench writes"),
    # JSON nested deeper than Python's parser goes: refused naming the file, not by the CLI's last resort
    ("eval_variants", "[" * 5000 + "]" * 5000, "its eval_variants '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[' is not"),
    ("eval_lengths", "[" * 5000 + "]" * 5000, "its eval_lengths '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[' is not"),
    ("eval_lengths", "[8, true]", "(JSON: a list of positive integers)"),
    ("encoding_options", "[]", "its encoding_options '[]' is not what pebench writes there (JSON: an object"),
    ("fit_lengths", "every", "its fit_lengths 'every' is not one of longest, all"),
    ("eval_decoding", "beam", "its eval_decoding 'beam' is not one of teacher, greedy"),
])
def test_a_runs_declared_evaluation_must_be_of_the_form_pebench_writes(tmp_path, column, value, refused):
    """A run's conditions and variants become table cells, legends and terminal text: each is refused on one
    line naming the file unless it is a condition pebench evaluates or a variant label of a name's form, in its
    rows and in the labels its eval_* columns declare (a failed run has no rows to carry them); so is a declared
    evaluation not of the JSON shape or the words pebench writes."""
    from pebench.store import ResultsError, read_run_file

    declared = {"eval_lengths": "[8]", "eval_conditions": '["original"]', "eval_variants": "[]"}
    path = crafted_run(tmp_path, **{**declared, column: value})
    with pytest.raises(ResultsError) as error:
        read_run_file(path)
    assert refused in str(error.value) and "\n" not in str(error.value) and "\x1b" not in str(error.value)


def test_evaluation_labels_pebench_writes_are_read():
    """The labels of every committed run file pass (the check refuses only what pebench never writes)."""
    from pebench.store import read_run_file

    root = Path(__file__).resolve().parent.parent / "results"
    summary = pd.read_csv(root / "standard" / "summary" / "runs.csv")
    scaled = summary.loc[summary["experiment"] == "rope_scaling", "run_id"].unique()
    paths = sorted(root.glob("*/raw/*.csv.gz"))[::50] + [root / "standard" / "raw" / f"{r}.csv.gz" for r in scaled]
    variants = set()
    for path in dict.fromkeys(paths):
        variants |= set(read_run_file(path)["variant"].dropna())
    assert {"trained", "linear", "ntk", "yarn"} <= variants  # the RoPE-scaling runs were among them


def test_an_evaluation_variant_is_declared_with_a_label_a_results_folder_accepts():
    from pebench.plan.experiment import EvalConfig

    assert EvalConfig(variants=(("ntk", "{}"),)).variants == (("ntk", "{}"),)
    for label in ("n k", "1", "trained", "nan", "", "../x"):
        with pytest.raises(ValueError, match="whose label is a name"):
            EvalConfig(variants=((label, "{}"),))
    with pytest.raises(ValueError, match="labels must differ"):
        EvalConfig(variants=(("ntk", "{}"), ("ntk", '{"scaling": "ntk"}')))


def test_combine_never_names_a_copied_file_after_a_crafted_run_id(tmp_path, capsys):
    first = small_results(tmp_path / "a", seeds=(0,))
    second = small_results(tmp_path / "b", seeds=(1,))
    crafted_run(second, run_id="../../../escaped")
    assert main(["combine", str(first), str(second), "--out", str(tmp_path / "out" / "combined")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its run_id '../../../escaped' is not a name pebench writes" in err, err
    assert not [p for p in tmp_path.rglob("*escaped*")]
    assert not (tmp_path / "out" / "combined").exists()


# --------------------------------------------------------------------------- 3: no link is followed


def test_a_linked_lock_file_is_refused_and_its_target_left_as_it_was(tmp_path):
    from test_runner import tiny_spec

    from pebench.plan.runner import run_sweep
    from pebench.store import FolderLockError

    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").symlink_to(target)
    with pytest.raises(FolderLockError, match=r"\.lock is a symbolic link"):
        run_sweep([tiny_spec()], out, on_done=lambda spec, rows: None)
    assert target.read_text() == "keep me\n"
    assert [p.name for p in out.iterdir()] == [".lock"]  # the folder as it was: raw/ is made under the lock


def test_a_linked_raw_folder_is_refused_and_nothing_in_its_target_is_removed(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hidden = elsewhere / ".draft.tmp"
    hidden.write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "raw").symlink_to(elsewhere, target_is_directory=True)
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "raw is a symbolic link" in err, err
    assert [p.name for p in elsewhere.iterdir()] == [".draft.tmp"] and hidden.read_text() == "mine\n"


def test_a_linked_run_file_or_raw_folder_is_never_read(tmp_path, capsys):
    from pebench.store import ResultsError, load

    secret = small_results(tmp_path / "private")
    folder = small_results(tmp_path / "shared", seeds=(2,))  # other runs: the linked file's name is free
    source = sorted((secret / "raw").iterdir())[-1]
    (folder / "raw" / source.name).symlink_to(source)
    with pytest.raises(ResultsError, match=f"{source.name}: a symbolic link, not a run file"):
        load(folder)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "raw").symlink_to(secret / "raw", target_is_directory=True)
    assert main(["show", str(linked)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "raw is a symbolic link" in err, err


def test_a_linked_manifest_is_refused(tmp_path):
    from pebench.store import ResultsError, read_manifest

    target = tmp_path / "elsewhere.json"
    target.write_text('{"suite": "standard", "invocations": []}')
    (tmp_path / "manifest.json").symlink_to(target)
    with pytest.raises(ResultsError, match="a symbolic link, not a manifest"):
        read_manifest(tmp_path)


# --------------------------------------------------------------------------- 4: bounded decompression


def test_a_run_file_that_expands_beyond_the_limit_is_refused_naming_it(tmp_path, monkeypatch, capsys):
    import gzip

    from pebench import store

    monkeypatch.setattr(store, "MAX_FILE_BYTES", 64 * 1024)
    folder = small_results(tmp_path / "results", seeds=(0,))
    bomb = folder / "raw" / "00000000000000ff.csv.gz"
    bomb.write_bytes(gzip.compress(b"suite," + b"0" * (4 * 2**20), mtime=0))  # 4 MiB of text in about 4 kB
    assert bomb.stat().st_size < 64 * 1024
    assert main(["show", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bomb}: more than the 0.0625 MiB a run file may hold decompressed" in err, err
    plain = folder / "raw" / "00000000000000fe.csv"
    plain.write_bytes(b"0" * (64 * 1024 + 1))
    with pytest.raises(store.ResultsError, match="a run file may hold \\("):
        store.read_run_text(plain)


def test_the_limit_is_far_above_every_committed_run_file():
    from pebench import store

    root = Path(__file__).resolve().parent.parent / "results"
    largest = sorted(root.glob("*/raw/*.csv.gz"), key=lambda p: p.stat().st_size)[-20:]
    if not largest:
        pytest.skip("no committed results in this checkout")
    assert max(len(store.read_run_text(path)) for path in largest) * 100 < store.MAX_FILE_BYTES


# --------------------------------------------------------------------------- 5: no raw escape sequences


def test_show_prints_escape_sequences_of_run_files_escaped(tmp_path, capsys):
    """Escape sequences in a run file reach the terminal escaped, here in the error that refuses a field holding
    them raw (no JSON pebench writes does; every name a table shows is checked to be a name)."""
    folder = tmp_path / "results"
    small_results(folder, encoding_options='{"note":"\x1b[2J\x1b]0;owned\x07"}')
    assert main(["show", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and err.count("\n") == 1
    assert '\\x1b[2J\\x1b]0;owned\\x07' in err


def test_printable_text_is_shown_as_it_is():
    from pebench.render.tables import terminal_text

    assert terminal_text("NoPE ± 0.01 — †\nnext") == "NoPE ± 0.01 — †\nnext"
    assert terminal_text("a\x1b[31mb\tc\x00") == "a\\x1b[31mb\\tc\\x00"


# --------------------------------------------------------------------------- 6: wrong results


@pytest.mark.parametrize("column, local, reference", [
    ("eval_lengths", "[8]", "[8, 16]"), ("warmup_steps", 1, 10), ("steps", 10, 30),
])
def test_compare_refuses_sides_evaluated_under_different_protocols(tmp_path, capsys, column, local, reference):
    rerun = small_results(tmp_path / "rerun", **{column: local})
    original = small_results(tmp_path / "reference", **{column: reference})
    assert main(["compare", str(rerun), str(original)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "were run under different protocols" in captured.err, captured
    assert f"{column} " in captured.err and "reproduce" not in captured.out


def test_compare_of_one_protocol_still_reproduces(tmp_path, capsys):
    rerun = small_results(tmp_path / "rerun", eval_lengths="[8]")
    original = small_results(tmp_path / "reference", eval_lengths="[8]")
    assert main(["compare", str(rerun), str(original)]) == 0
    assert capsys.readouterr().out.startswith("2 of 2 cells reproduce")


def write_board(folder: Path, **changes) -> Path:
    """A leaderboard (``tables/leaderboard_order_sensitivity.csv``) of two encoders, its first row changed by
    ``changes`` (a column to ``None``: the column dropped); returns the file."""
    board = pd.DataFrame({"arch": ["encoder", "encoder"], "encoding": ["rope", "none"], "mrr": [1.0, 0.5],
                          "mrr_low": [1.0, 0.5], "mrr_high": [1.0, 0.5]}).astype(object)
    for column, value in changes.items():
        board = board.drop(columns=column) if value is None else board.assign(**{column: [value, *board[column][1:]]})
    (folder / "tables").mkdir(exist_ok=True)
    board.to_csv(folder / "tables" / "leaderboard_order_sensitivity.csv", index=False)
    return folder / "tables" / "leaderboard_order_sensitivity.csv"


@pytest.mark.parametrize("changes, said", [
    ({"mrr": "abc"}, "its mrr 'abc' is not a finite number"),
    ({"mrr_high": ""}, "its mrr_high 'nan' is not a finite number"),
    ({"arch": None}, "missing column(s) arch"),
    ({"encoding": ""}, "a row without its arch or encoding"),
])
def test_compare_refuses_a_leaderboard_pebench_never_writes_on_one_line(tmp_path, capsys, changes, said):
    """The leaderboards ``compare`` sets side by side come with the folders: one of another shape is named on one
    line, not a traceback."""
    rerun, original = small_results(tmp_path / "rerun"), small_results(tmp_path / "reference")
    write_board(original)
    board = write_board(rerun, **changes)
    assert main(["compare", str(rerun), str(original)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(board) in err and said in err, err


def test_compare_says_nothing_of_a_leaderboard_architecture_the_rerun_has_no_row_of(tmp_path, capsys):
    """A rerun's board without the reference's architecture (a rerun of the decoders only) has nothing to set
    beside it: no sentence of it, not an error on an empty comparison."""
    rerun, original = small_results(tmp_path / "rerun"), small_results(tmp_path / "reference")
    write_board(original)
    (rerun / "tables").mkdir()
    (rerun / "tables" / "leaderboard_order_sensitivity.csv").write_text(
        "arch,encoding,mrr,mrr_low,mrr_high\ndecoder,rope,1.0,1.0,1.0\n")
    assert main(["compare", str(rerun), str(original)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 of 2 cells reproduce") and "Leaderboard" not in out


def write_main(folder: Path) -> None:
    """A main table (``tables/main.csv``) of one ranked encoder, with every column a comparison reads."""
    from pebench.analysis.compare import VERDICT_COLUMNS

    (folder / "tables").mkdir(exist_ok=True)
    pd.DataFrame([{**dict.fromkeys(VERDICT_COLUMNS), "experiment": "order_sensitivity", "arch": "encoder",
                   "encoding": "rope", "ranked": True, "tier": 1}]).to_csv(folder / "tables" / "main.csv", index=False)


@pytest.mark.parametrize("write", [write_board, write_main])
@pytest.mark.parametrize("side", ["rerun", "reference"])
def test_compare_never_reads_tables_through_a_linked_tables_folder(tmp_path, capsys, side, write):
    """A folder's ``tables/`` that is a link to a folder elsewhere is refused on one line, not read: the main
    tables and boards ``compare`` sets side by side come from the folders themselves."""
    folders = {name: small_results(tmp_path / name) for name in ("rerun", "reference")}
    write(folders["rerun" if side == "reference" else "reference"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(elsewhere)
    (elsewhere / "tables").rename(elsewhere / "linked")
    (folders[side] / "tables").symlink_to(elsewhere / "linked", target_is_directory=True)
    assert main(["compare", str(folders["rerun"]), str(folders["reference"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folders[side] / 'tables'} is a symbolic link" in err, err


def test_an_interrupted_combine_leaves_no_folder_that_show_or_report_accept(tmp_path, monkeypatch, capsys):
    import pebench.store.combine as combine_module

    class Interrupted:
        @staticmethod
        def now(tz=None):
            raise KeyboardInterrupt  # Ctrl-C as the manifest is made, after the run files are copied

    first, second = small_results(tmp_path / "a", seeds=(0,)), small_results(tmp_path / "b", seeds=(1,))
    monkeypatch.setattr(combine_module, "datetime", Interrupted)
    out = tmp_path / "out" / "combined"
    assert main(["combine", str(first), str(second), "--out", str(out)]) == 130
    monkeypatch.undo()
    capsys.readouterr()
    for command in ("show", "report"):
        assert main([command, str(out)]) == 2
        assert "no such results folder" in capsys.readouterr().err
    assert not out.exists() and not list((tmp_path / "out").iterdir())  # and no staging folder left behind
    assert main(["combine", str(first), str(second), "--out", str(out)]) == 0
    assert json.loads((out / "manifest.json").read_text())["combined"]["sources"][0]["runs"] == 2


def rewrite_with_timing(folder: Path, seconds: float) -> None:
    """Rewrite every run file of ``folder`` as another sweep of the same runs would: another wall time, and
    hence another checksum."""
    from pebench import store

    for path in sorted((folder / "raw").iterdir()):
        frame = store.read_run_file(path).assign(train_seconds=seconds)
        path.write_text(store.run_file_text(frame.to_dict("records")))


def test_combine_takes_two_sweeps_of_identical_runs_as_the_same_runs(tmp_path, capsys):
    first, second = small_results(tmp_path / "a"), small_results(tmp_path / "b")
    rewrite_with_timing(first, 12.5)
    rewrite_with_timing(second, 31.0)
    assert main(["combine", str(first), str(second), "--out", str(tmp_path / "both")]) == 0
    assert "4 run(s) in more than one folder had identical rows" in capsys.readouterr().out
    (second / "raw" / sorted(p.name for p in (second / "raw").iterdir())[0]).write_text(
        small_results_with_other_accuracy(tmp_path / "c"))
    assert main(["combine", str(first), str(second), "--out", str(tmp_path / "again")]) == 2
    assert "1 run(s) are in more than one folder with different rows" in capsys.readouterr().err


def test_compare_refuses_a_rerun_of_another_protocol_version_on_one_line(tmp_path, capsys):
    """A v3 rerun against the v2 reference (rows without the ``protocol`` column predate v3): one line naming both
    versions, exit 2, before any cell is compared."""
    rerun = small_results(tmp_path / "rerun", protocol=3)
    original = small_results(tmp_path / "reference")
    assert main(["compare", str(rerun), str(original)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "made under protocol v3" in captured.err
    assert "under protocol v2: their numbers are not expected to agree" in captured.err and not captured.out


def test_the_report_of_a_rerun_of_another_protocol_says_it_is_not_compared(tmp_path):
    """tox -e bench reports a v3 rerun beside the v2 reference (until v3's is committed): the report is written
    and says why no cell is compared, instead of failing."""
    import json

    results = tmp_path / "results"
    small_results(results / "standard")
    rerun = small_results(results / "local" / "standard", protocol=3)
    (rerun / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": []}))
    assert main(["report", str(rerun)]) == 0
    section = json.loads((rerun / "report.json").read_text())["rerun"]
    assert section["comparison"]["verdict"].startswith("`pebench compare {folder} {reference}`: **not compared**")
    assert "protocol v3" in section["summary"][0] and "protocol v2" in section["summary"][0]
    assert section["comparison"]["rows"] == []


@pytest.mark.parametrize("invocation", [
    {"workers": [2]}, {"workers": float("inf")}, {"workers": "two"}, {"seed_batched_runs": "x"},
    {"seed_batched_runs": None}, {"seed_batched_runs": [4]},
])
def test_the_report_of_a_rerun_reads_no_count_its_manifest_records_as_another_kind(tmp_path, capsys, invocation):
    """A rerun's manifest comes with it: workers or seed-batched runs recorded as a text, a list, null or infinity
    are no record (the summary says ``?`` workers, no seed-batched count), not a traceback."""
    import json

    results = tmp_path / "results"
    small_results(results / "standard")
    rerun = small_results(results / "local" / "standard")
    (rerun / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": [invocation]}))
    assert main(["report", str(rerun)]) == 0, capsys.readouterr().err
    summary = json.loads((rerun / "report.json").read_text())["rerun"]["summary"][0]
    assert "with ? workers" in summary and "seed-batched" not in summary, summary


def small_results_with_other_accuracy(folder: Path) -> str:
    """The text of the first run file of :func:`small_results` with its token accuracy changed."""
    from pebench import store

    path = sorted((small_results(folder) / "raw").iterdir())[0]
    frame = store.read_run_file(path)
    return store.run_file_text(frame.assign(token_acc=frame["token_acc"] / 2).to_dict("records"))


def test_combine_refuses_one_folder_given_twice(tmp_path, capsys):
    folder = small_results(tmp_path / "a")
    (tmp_path / "alias").symlink_to(folder, target_is_directory=True)
    for again in (folder, tmp_path / "alias"):
        assert main(["combine", str(folder), str(again), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{again} is given twice (also as {folder})" in err, err
    assert not (tmp_path / "out").exists()


def test_combine_never_writes_over_an_existing_manifest(tmp_path, capsys):
    first, second = small_results(tmp_path / "a", seeds=(0,)), small_results(tmp_path / "b", seeds=(1,))
    out = tmp_path / "existing"
    out.mkdir()
    (out / "manifest.json").write_text('{"suite": "standard", "invocations": [{"note": "mine"}]}\n')
    assert main(["combine", str(first), str(second), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds a manifest.json" in err, err
    assert json.loads((out / "manifest.json").read_text())["invocations"] == [{"note": "mine"}]
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def test_run_and_report_both_refuse_two_files_of_one_run(tmp_path, capsys):
    from test_runner import tiny_spec

    from pebench import store
    from pebench.plan.runner import run_sweep

    spec = tiny_spec()
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    compressed = tmp_path / "raw" / store.run_file_name(spec.run_id)
    (tmp_path / "raw" / f"{spec.run_id}.csv").write_text(store.read_run_text(compressed))
    assert main(["report", str(tmp_path)]) == 2
    assert f"run {spec.run_id} again" in capsys.readouterr().err
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"two files of one run ({spec.run_id}.csv and {compressed.name})" in err, err
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == sorted([compressed.name, f"{spec.run_id}.csv"])


# --------------------------------------------------------------------------- 7: rough edges


@pytest.mark.parametrize("manifest", [
    "[1, 2]", '{"suite": "standard", "latest": "yesterday"}', '{"suite": "standard", "combined": {"sources": 3}}',
    '{"suite": "standard", "combined": {"sources": [{"folder": "a", "manifest": "b"}]}}',
    '{"suite": "standard", "invocations": [1]}', '{"suite": "standard", "invocations": [null]}',
    '{"suite": "standard", "invocations": [{"git_sha": "abc"}, "yesterday"]}',
])
def test_report_of_a_manifest_of_the_wrong_shape_is_one_line(tmp_path, capsys, manifest):
    folder = small_results(tmp_path / "results")
    (folder / "manifest.json").write_text(manifest)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.json is not a pebench manifest" in err, err


@pytest.mark.parametrize("device", ["meta", "xla"])
def test_devices_that_cannot_train_are_refused(tmp_path, capsys, device):
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--device", device, "--dry-run",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--device {device} cannot train a model" in err, err
    assert not out.exists()


def test_every_bad_file_is_named_on_the_one_line_the_cli_prints(tmp_path, capsys):
    folder = small_results(tmp_path / "results", seeds=(0,))
    names = [f"{n:016x}.csv" for n in range(5)]
    for name in names:
        (folder / "raw" / name).write_text("not,a\nrun,file\n")
    for command in (["show", str(folder)], ["combine", str(folder), str(small_results(tmp_path / "b")),
                                            "--out", str(tmp_path / "out")]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("pebench: error: 5 bad result file(s)"), err
        assert all(name in err for name in names) and "more" not in err


def test_compare_into_a_closed_pipe_exits_with_its_verdict_quietly(tmp_path):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    rerun, reference = small_results(tmp_path / "rerun"), small_results(tmp_path / "reference")
    process = subprocess.Popen([sys.executable, "-m", "pebench", "compare", str(rerun), str(reference)],
                               cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # `| head -1` that has read what it wanted, before pebench wrote anything
    err = process.stderr.read()
    assert process.wait(timeout=120) == 0, err  # every cell reproduces: the verdict, not a pipe error
    assert "Traceback" not in err and "Error" not in err, err


def test_run_files_and_manifests_follow_the_umask(tmp_path):
    import os

    from test_runner import tiny_spec

    from pebench.plan.runner import run_sweep

    previous = os.umask(0o027)
    try:
        run_sweep([tiny_spec()], tmp_path / "a", on_done=lambda spec, rows: None)
        run_sweep([tiny_spec(seed=1)], tmp_path / "b", on_done=lambda spec, rows: None)
        assert main(["combine", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "both")]) == 0
    finally:
        os.umask(previous)
    written = [*(tmp_path / "a" / "raw").iterdir(), tmp_path / "a" / "manifest.json",
               *(tmp_path / "both" / "raw").iterdir(), tmp_path / "both" / "manifest.json"]
    assert {oct(path.stat().st_mode & 0o777) for path in written} == {oct(0o640)}
    assert oct((tmp_path / "both").stat().st_mode & 0o777) == oct(0o750)


def test_a_sweep_removes_only_its_own_leftover_temporary_files(tmp_path, monkeypatch):
    import os

    from test_runner import tiny_spec

    from pebench.plan.runner import run_sweep
    from pebench.store import RUN_TEMP_FILE, own_files

    spec = tiny_spec()
    raw = tmp_path / "raw"
    raw.mkdir()
    mine = [raw / ".draft.tmp", raw / ".notes.csv.tmp"]
    for path in mine:
        path.write_text("mine\n")
    handle, leftover = own_files.make_file(raw, f".{spec.run_id}.csv.gz.", ".tmp")  # a sweep killed while writing
    os.close(handle)
    (tmp_path / "seen").mkdir()
    handle, seen = own_files.make_file(tmp_path / "seen", f".{spec.run_id}.csv.gz.", ".tmp")
    os.close(handle)
    mine += [raw / f".{spec.run_id}.csv.gz.k3j9xabc.tmp",  # a stranger's, in the shape of a leftover
             raw / seen.name,  # a stranger's, named as one of ours elsewhere
             raw / f".{'0' * 16}.csv.gz.{leftover.name.split('.')[-2]}.tmp"]  # our random part, another file's name
    for path in mine[2:]:
        path.write_text("mine\n")
    renamed, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: renamed.append(Path(source).name) or replace(source,
                                                                                                          target))
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    assert all(path.read_text() == "mine\n" for path in mine) and not leftover.exists()
    temporary = [name for name in renamed if name.startswith(f".{spec.run_id}")]  # the run file's, not the manifest's
    assert temporary and all(RUN_TEMP_FILE.fullmatch(name) for name in temporary)


def test_write_report_itself_never_writes_through_a_linked_folder(tmp_path):
    from pebench.report import write_report
    from pebench.store import ResultsError

    folder = small_results(tmp_path / "results")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "tables").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ResultsError, match="tables is a symbolic link"):
        write_report(folder, out)
    assert not list(elsewhere.iterdir())


# --------------------------------------------------------------------------- JSON nested beyond the parser


DEEP = "[" * 100_000 + "]" * 100_000  # far deeper than Python's recursion limit; no file pebench writes nests 5


@pytest.mark.parametrize("command", ["report", "show"])
def test_a_manifest_nested_beyond_the_parser_is_one_line(tmp_path, capsys, command):
    folder = small_results(tmp_path / "results")
    (folder / "manifest.json").write_text('{"suite": ' * 100_000 + '"x"' + "}" * 100_000)
    assert main([command, str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.json nests JSON deeper than any file pebench writes" in err, err


def test_a_report_nested_beyond_the_parser_is_stale_on_one_line(tmp_path):
    from pebench.store.report_file import StaleReport, current_report

    folder = small_results(tmp_path / "results")
    (folder / "report.json").write_text(DEEP)
    with pytest.raises(StaleReport, match="nests JSON deeper than any file pebench writes") as error:
        current_report(folder)
    assert "\n" not in str(error.value)


def test_show_never_reads_a_linked_report(tmp_path, capsys):
    """A ``report.json`` that is a link to a file elsewhere is not read, even one that would be current and name a
    main table: ``show`` says the report cannot be read and prints the tables computed from the run files."""
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    index = json.loads((folder / "report.json").read_text())
    index["main_table"] = "runs"  # this folder's suite has no main table: name one it wrote
    secret = tmp_path / "elsewhere.json"
    secret.write_text(json.dumps(index))
    (folder / "report.json").unlink()
    (folder / "report.json").symlink_to(secret)
    capsys.readouterr()
    assert main(["show", str(folder), "--width", "0"]) == 0  # 0: unwrapped, however long the folder's path
    out = capsys.readouterr().out
    assert "cannot be read" in out and "computed now from the run files" in out
    assert "the table to cite" not in out  # as without a report: the link is not followed


def test_show_never_reads_a_linked_main_table(tmp_path, capsys):
    """The main table ``show`` leads with is read through the store's rules: a table that is a link to a file
    elsewhere (a key, say) is not printed; ``show`` says the report names no main table and goes on."""
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    index = json.loads((folder / "report.json").read_text())
    name = index["main_table"] = "runs"  # this folder's suite has no main table: name one it wrote
    (folder / "report.json").write_text(json.dumps(index))
    capsys.readouterr()
    assert main(["show", str(folder), "--width", "0"]) == 0
    assert "the table to cite" in capsys.readouterr().out
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY\n")
    (folder / "tables" / f"{name}.md").unlink()
    (folder / "tables" / f"{name}.md").symlink_to(secret)
    assert main(["show", str(folder), "--width", "0"]) == 0
    out = capsys.readouterr().out
    assert "PRIVATE KEY" not in out and "the table to cite" not in out and "names no main table" in out


def test_show_leads_with_the_main_table_of_a_report_that_lists_no_tables(tmp_path, capsys):
    """A current report may omit its list of tables (no field is required of it but its digest): the main table it
    names is then printed under its file name, not a traceback."""
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    index = json.loads((folder / "report.json").read_text())
    index["main_table"] = "runs"
    del index["tables"]
    (folder / "report.json").write_text(json.dumps(index))
    capsys.readouterr()
    assert main(["show", str(folder), "--width", "0"]) == 0
    assert capsys.readouterr().out.startswith("runs (the table to cite: ")


# --------------------------------------------------------------------------- fields a spreadsheet would run


@pytest.mark.parametrize("value", ["=HYPERLINK(\"http://x\",\"y\")", "@SUM(1+1)*cmd|' /C calc'!A0", "+cmd", "\tx"])
@pytest.mark.parametrize("command", ["report", "show"])
def test_a_run_file_field_a_spreadsheet_would_run_is_refused_naming_it(tmp_path, capsys, value, command):
    folder = small_results(tmp_path / "results")
    path = sorted((folder / "raw").iterdir())[0]
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["device"] = value  # copied into summary/runs.csv, which a reader may open in a spreadsheet
    frame.to_csv(path, index=False)
    assert main([command, str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and path.name in err and "a spreadsheet would run as a formula" in err, err
    assert not (folder / "summary").exists()


# --------------------------------------------------------------------------- fields of the wrong kind


@pytest.mark.parametrize(("column", "value", "said"), [
    ("final_train_loss", '{"a": [1]}', "its final_train_loss '{\"a\": [1]}' is not a number"),
    ("params", "failed", "its params 'failed' is not a number"),
    ("task", "nan", "its task 'nan' is not a name pebench writes"),  # pandas reads it as a number
    ("arch", "1", "its arch '1' is not a name pebench writes"),
])
def test_a_field_of_the_wrong_kind_is_refused_on_one_line(tmp_path, capsys, column, value, said):
    folder = small_results(tmp_path / "results")
    path = sorted((folder / "raw").iterdir())[0]
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame[column] = value
    frame.to_csv(path, index=False)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and path.name in err and said in err, err


#: what a crafted run file's field may be set to (texts, numbers out of range, JSON, names of other columns)
FUZZ_VALUES = ["", "x", "-1", "0", "1e308", "nan", "inf", "[]", "{}", "[1,", "null", "true", "999999999", "[[1, 2]]",
               '{"a": [1]}', "0.5", "1.5", "ok", "failed", "diverged", "decoder", "cuda"]


def test_report_and_show_end_every_crafted_run_file_with_a_status_not_a_traceback(tmp_path, capsys):
    import random
    import shutil

    rng = random.Random(0)  # seeded: the same 25 folders on every machine
    base = small_results(tmp_path / "base")
    files = sorted((base / "raw").iterdir())
    columns = list(pd.read_csv(files[0], dtype=str).columns)
    for trial in range(25):
        folder = shutil.copytree(base, tmp_path / f"trial{trial}")
        path = folder / "raw" / rng.choice(files).name
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        for _ in range(rng.randint(1, 3)):
            column, value = rng.choice(columns), rng.choice(FUZZ_VALUES)
            if rng.random() < 0.5:
                frame[column] = value
            else:
                frame.loc[rng.randrange(len(frame)), column] = value
        frame.to_csv(path, index=False)
        for command in ("report", "show"):
            status = main([command, str(folder)])  # an exception here is the failure this test looks for
            err = capsys.readouterr().err
            assert status in (0, 2) and (status == 0 or err.count("\n") == 1), (command, err)


# --------------------------------------------------------------------------- run, verify and evaluate (round 2)


@pytest.mark.parametrize("name", ["manifest.json", "raw/first"])
def test_a_folder_where_a_file_is_expected_is_named_on_one_line(tmp_path, capsys, name):
    """A folder opens as a descriptor: it is refused as a folder, by its path, not as ``Is a directory: 3``."""
    folder = small_results(tmp_path / "results")
    path = sorted((folder / "raw").iterdir())[0] if name == "raw/first" else folder / name
    path.unlink(missing_ok=True)
    path.mkdir()
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: a folder, not a" in err, err


@pytest.mark.parametrize("entry", ["verdict", "verdict/verdict.json", "verdict/source", "verdict/verdict.md fifo"])
def test_evaluate_never_writes_a_verdict_through_a_link_or_into_a_fifo(tmp_path, capsys, entry):
    import os

    reference = small_results(tmp_path / "reference")
    out, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "verdict.json").write_text("mine\n")
    path = out / entry.removesuffix(" fifo")
    path.parent.mkdir(parents=True)
    if entry.endswith("fifo"):
        os.mkfifo(path)  # writing the verdict into it would wait for a reader for ever
    else:
        path.symlink_to(elsewhere if path.name != "verdict.json" else elsewhere / "verdict.json")
    argv = ["evaluate", "none", "--suite", "smoke", "--no-run", "--out", str(out), "--reference", str(reference)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path} is " in err, err
    assert [p.name for p in elsewhere.iterdir()] == ["verdict.json"]
    assert (elsewhere / "verdict.json").read_text() == "mine\n"
