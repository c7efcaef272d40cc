"""Temporary files and folders recorded as this user's (pebench.store.own_files): only the very file a command of this
user made there may be removed as a leftover, so that a results folder from a stranger never loses a file pebench
did not write."""

from __future__ import annotations

import os
import stat

from pebench.store import own_files


def test_a_file_made_here_is_known_until_forgotten(tmp_path):
    handle, path = own_files.make_file(tmp_path, ".manifest.json.", ".tmp")
    os.close(handle)
    assert path.parent == tmp_path and path.name.startswith(".manifest.json.") and path.name.endswith(".tmp")
    assert own_files.made_here(path)
    own_files.forget(path)  # renamed into place, or removed
    assert not own_files.made_here(path) and path.exists()
    assert list(own_files.records_dir().iterdir()) == []


def test_only_the_very_file_made_there_is_known_not_its_name(tmp_path):
    handle, path = own_files.make_file(tmp_path, ".a.csv.", ".tmp")
    os.close(handle)
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / path.name  # its name seen and copied into another folder
    copy.write_text("theirs\n")
    assert own_files.made_here(path) and not own_files.made_here(copy)
    path.rename(tmp_path / "moved.tmp")  # kept alive, so the file below cannot take its inode
    path.write_text("theirs\n")  # another file under the same name, in the same folder
    assert not own_files.made_here(path)
    path.unlink()
    path.symlink_to(tmp_path / "moved.tmp")  # a link to the file made here: a link is never followed
    assert not own_files.made_here(path)


def test_a_leftover_stays_known_when_its_folder_is_moved(tmp_path):
    (tmp_path / "results").mkdir()
    folder = own_files.make_folder(tmp_path / "results", ".report-")
    (tmp_path / "results").rename(tmp_path / "renamed")  # mv results renamed: one file system, the same folder
    assert own_files.made_here(tmp_path / "renamed" / folder.name)


def test_the_records_are_the_users_alone_and_another_users_know_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "mine"))
    folder = own_files.make_folder(tmp_path, ".report-")
    records = own_files.records_dir()
    assert stat.S_IMODE(records.stat().st_mode) == 0o700
    assert [stat.S_IMODE(record.stat().st_mode) for record in records.iterdir()] == [0o600]
    assert own_files.made_here(folder)
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "theirs"))  # another user's records (another home)
    assert not own_files.made_here(folder)


def test_where_no_records_can_be_kept_files_are_made_and_none_is_known(tmp_path, monkeypatch):
    (tmp_path / "a file").write_text("not a folder\n")
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "a file" / "cache"))  # cannot be made, even by root
    handle, path = own_files.make_file(tmp_path, ".x.", ".tmp")
    os.close(handle)
    assert path.is_file() and not own_files.made_here(path)


def test_made_files_and_folders_are_new_and_private(tmp_path):
    handle, path = own_files.make_file(tmp_path, ".a.csv.", ".tmp")
    os.close(handle)
    folder = own_files.make_folder(tmp_path, ".report-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    handle, second = own_files.make_file(tmp_path, ".a.csv.", ".tmp")
    os.close(handle)
    assert second != path and path.is_file() and second.is_file()


def test_removing_a_leftover_removes_its_record(tmp_path):
    folder = own_files.make_folder(tmp_path, ".report-")
    (folder / "t.md").write_text("| a table |\n")
    handle, path = own_files.make_file(tmp_path, ".a.csv.", ".tmp")
    os.close(handle)
    own_files.remove_leftover(folder)
    own_files.remove_leftover(path)
    assert list(tmp_path.iterdir()) == [] and list(own_files.records_dir().iterdir()) == []


def test_a_staging_folder_is_made_after_removing_only_this_users_dead_leftovers_of_its_prefix(tmp_path):
    from test_sweep_failures import dead_pid

    prefix, machine, dead = ".out.combine-", own_files.machine_mark(), dead_pid()
    other = f"{'0' if machine != '0' * 8 else '1'}{machine[1:]}"
    left = own_files.make_folder(tmp_path, f"{prefix}{machine}-{dead}-")  # a combine killed with kill -9
    (tmp_path / "other").mkdir()
    seen = own_files.make_folder(tmp_path / "other", f"{prefix}{machine}-{dead}-")
    kept = [own_files.make_folder(tmp_path, f"{prefix}{machine}-{os.getpid()}-"),  # one in progress
            own_files.make_folder(tmp_path, f"{prefix}{other}-{dead}-"),  # on a shared disk: not our pid
            own_files.make_folder(tmp_path, f".other.combine-{machine}-{dead}-"),  # another command's
            tmp_path / f"{prefix}{machine}-{dead}-k3j9xabc",  # a stranger's, in the same shape
            tmp_path / seen.name]  # a stranger's, named as one of ours elsewhere
    for folder in kept[3:]:
        folder.mkdir()
    for folder in (left, *kept):
        (folder / "run.csv").write_text("run_id\n")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "yours.csv").write_text("yours\n")
    linked = tmp_path / f"{prefix}{machine}-{dead}-linked"
    linked.symlink_to(target, target_is_directory=True)  # dead, in the shape, but a link: never followed, kept

    with own_files.staging_folder(tmp_path, prefix) as staging:
        assert staging.name.startswith(f"{prefix}{machine}-{os.getpid()}-") and staging.is_dir()
        assert own_files.made_here(staging)
        assert not left.exists() and all((folder / "run.csv").read_text() == "run_id\n" for folder in kept)
        assert linked.is_symlink() and (target / "yours.csv").read_text() == "yours\n"
    assert not staging.exists() and not own_files.made_here(staging)


def test_a_staging_folder_renamed_into_place_leaves_no_record(tmp_path):
    with own_files.staging_folder(tmp_path, ".out.combine-") as staging:
        (staging / "manifest.json").write_text("{}\n")
        os.replace(staging, tmp_path / "out")
    assert (tmp_path / "out" / "manifest.json").read_text() == "{}\n"
    assert list(own_files.records_dir().iterdir()) == []
