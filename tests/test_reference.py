"""The reference results packaged with pebench (issue 39): the same as the committed ``results/standard``, made
deterministically, extracted only by the store's rules, and compared against without a checkout."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest

from pebench import store
from pebench.cli import main
from pebench.store import ResultsError, reference

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "results" / reference.DEFAULT_SUITE


def test_the_packaged_reference_holds_exactly_the_committed_manifest_and_run_files():
    packaged = dict(reference.read_archive(reference.archive_path()))
    committed = dict(reference.folder_members(COMMITTED))
    refresh = f"refresh it with `{reference.PACK_COMMAND}` and commit it"
    missing, extra = sorted(committed.keys() - packaged.keys()), sorted(packaged.keys() - committed.keys())
    assert not missing and not extra, (
        f"{reference.archive_path()} lacks {len(missing)} file(s) of {COMMITTED} ({', '.join(missing[:3])}) and "
        f"holds {len(extra)} it does not ({', '.join(extra[:3])}); {refresh}")
    differ = sorted(name for name in committed if committed[name] != packaged[name])
    assert not differ, f"{reference.archive_path()} differs from {COMMITTED} in {', '.join(differ[:3])}; {refresh}"


def small_folder(folder: Path, runs: int = 3) -> Path:
    """A results folder with the committed manifest and its first ``runs`` run files."""
    (folder / "raw").mkdir(parents=True)
    (folder / "manifest.json").write_bytes((COMMITTED / "manifest.json").read_bytes())
    for path in store.raw_files(COMMITTED / "raw")[:runs]:
        (folder / "raw" / path.name).write_bytes(path.read_bytes())
    return folder


def test_packing_a_folder_twice_gives_the_same_bytes_and_the_second_leaves_the_archive_alone(tmp_path):
    folder = small_folder(tmp_path / "standard")
    archive = tmp_path / "packed" / "standard.tar.gz"
    assert reference.pack(folder, archive)
    first = archive.read_bytes()
    assert reference.archive_bytes(reference.folder_members(folder)) == first
    assert not reference.pack(folder, archive)  # already holds these members: not rewritten
    with tarfile.open(archive) as tar:
        infos = tar.getmembers()
    assert [info.name for info in infos] == ["manifest.json", *(f"raw/{p.name}" for p in store.raw_files(
        folder / "raw"))]
    assert {(info.mtime, info.uid, info.gid, info.mode, info.type) for info in infos} == {
        (0, 0, 0, 0o644, tarfile.REGTYPE)}
    assert first[4:8] == b"\0\0\0\0"  # the gzip header's time stamp


def test_pebench_reference_writes_the_packaged_files_and_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    out = tmp_path / "reference"
    assert main(["reference", "--out", str(out)]) == 0
    assert f"next: pebench report {out}" in capsys.readouterr().out
    written = {str(path.relative_to(out)): path.read_bytes() for path in out.rglob("*") if path.is_file()}
    assert written == dict(reference.read_archive(reference.archive_path()))
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no staging folder left

    assert main(["reference", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{out} is not empty; give a new or empty folder" in error
    assert {str(path.relative_to(out)): path.read_bytes() for path in out.rglob("*") if path.is_file()} == written


def crafted(path: Path, *members: tarfile.TarInfo) -> Path:
    """A .tar.gz archive of the committed manifest followed by ``members`` (a regular member gets 4 bytes)."""
    with tarfile.open(path, "w:gz") as tar:
        manifest = (COMMITTED / "manifest.json").read_bytes()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        for member in members:
            if member.isreg():
                member.size = 4
            tar.addfile(member, io.BytesIO(b"data") if member.isreg() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


@pytest.mark.parametrize("members, why", [
    ([member("../x.csv.gz")], "a path with '..'"),
    ([member("raw/../../x.csv.gz")], "a path with '..'"),
    ([member("/tmp/x.csv.gz")], "an absolute path"),
    ([member("raw/0123456789abcdef.csv.gz", tarfile.SYMTYPE, "/etc/passwd")], "a link"),
    ([member("raw/0123456789abcdef.csv.gz", tarfile.LNKTYPE, "manifest.json")], "a link"),
    ([member("raw/0123456789abcdef.csv.gz", tarfile.CHRTYPE)], "not a regular file"),
    ([member("raw/0123456789abcdef.csv.gz", tarfile.FIFOTYPE)], "not a regular file"),
    ([member("raw", tarfile.DIRTYPE)], "not a regular file"),
    ([member("raw/sub/0123456789abcdef.csv.gz")], "neither manifest.json nor a run file"),
    ([member("raw/.0123456789abcdef.csv.gz")], "neither manifest.json nor a run file"),
    ([member("report.json")], "neither manifest.json nor a run file"),
    ([member("raw/0123456789abcdef.csv.gz"), member("raw/0123456789abcdef.csv.gz")], "there twice"),
])
def test_a_crafted_archive_is_refused_whole_before_anything_is_written(tmp_path, members, why):
    archive = crafted(tmp_path / "crafted.tar.gz", *members)
    out = tmp_path / "deep" / "out"
    with pytest.raises(ResultsError, match=rf"member '.*' is {why}"):
        reference.extract(archive, out)
    assert sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*")) == [Path("crafted.tar.gz")]


def test_an_archive_without_run_files_and_a_target_that_is_a_link_or_a_file_are_refused(tmp_path):
    with pytest.raises(ResultsError, match="not a reference archive"):
        reference.extract(crafted(tmp_path / "manifest_only.tar.gz"), tmp_path / "out")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "file").write_text("mine\n")
    for target in (tmp_path / "link", tmp_path / "file"):
        with pytest.raises(ResultsError, match="exists and is not a folder"):
            reference.extract(reference.archive_path(), target)
    assert not any((tmp_path / "elsewhere").iterdir()) and (tmp_path / "file").read_text() == "mine\n"


def test_compare_without_a_reference_folder_uses_the_packaged_reference(tmp_path, capsys, monkeypatch):
    rerun = tmp_path / "rerun"
    reference.extract(reference.archive_path(), rerun)
    first = store.first_rows(rerun, ("experiment", "task", "arch", "encoding"))
    cell = first.iloc[0]
    same = (first[["experiment", "task", "arch", "encoding"]] == cell[["experiment", "task", "arch", "encoding"]])
    keep = set(first.loc[same.all(axis=1), "run_id"])
    for path in store.raw_files(rerun / "raw"):
        if store.run_file_id(path) not in keep:
            path.unlink()
    monkeypatch.chdir(tmp_path)  # no results/ folder here: the reference comes from the package
    assert main(["compare", str(rerun)]) == 1  # the other cells are not yet run
    out = capsys.readouterr().out
    assert re.match(r"1 of 1 cells reproduce \(paired by seed.*\); \d+ cells of the reference not yet run\n", out)
    assert "pebench-reference-" not in out

    assert main(["compare", str(rerun), "--reference", "nonesuch"]) == 2
    assert "no packaged reference of suite 'nonesuch'; packaged: standard" in capsys.readouterr().err
    assert main(["compare", str(rerun), str(rerun), "--reference", "standard"]) == 2
    assert "two references given" in capsys.readouterr().err
