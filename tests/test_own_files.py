"""Temporary names tagged as this user's (pebench.store.own_files): only a leftover whose tag verifies under this user's
key may be removed, so that a results folder from a stranger never loses a file pebench did not write."""

from __future__ import annotations

import os
import stat

from pebench.store import own_files


def test_a_name_made_here_verifies_and_only_with_its_own_prefix_and_suffix():
    name = own_files.temporary_name(".manifest.json.", ".tmp")
    assert own_files.written_here(name, ".manifest.json.", ".tmp")
    assert not own_files.written_here(name, ".other.json.", ".tmp")
    assert not own_files.written_here(name + ".orig", ".manifest.json.", ".tmp")
    stem = name[:-len("-0123456789abcdef.tmp")]
    assert not own_files.written_here(f"{stem}-{'0' * 16}.tmp", ".manifest.json.", ".tmp")  # a forged tag
    assert not own_files.written_here(f"{stem}.tmp", ".manifest.json.", ".tmp")  # no tag at all


def test_the_key_is_the_users_alone_and_another_key_verifies_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "mine"))
    name = own_files.temporary_name(".report-", "")
    key = own_files.key_path()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == own_files.KEY_BYTES
    assert own_files.written_here(name, ".report-")
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "theirs"))  # another user's key (another home)
    assert not own_files.written_here(name, ".report-")


def test_where_no_key_can_be_kept_names_are_untagged_and_nothing_verifies(tmp_path, monkeypatch):
    (tmp_path / "a file").write_text("not a folder\n")
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "a file" / "cache"))  # cannot be made, even by root
    name = own_files.temporary_name(".x.", ".tmp")
    assert "-" not in name and not own_files.written_here(name, ".x.", ".tmp")


def test_a_linked_or_malformed_key_is_not_read(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"k" * own_files.KEY_BYTES)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / own_files.KEY_FILE).symlink_to(elsewhere)
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "linked"))
    assert own_files.user_key() is None  # a link is never followed: its target could be anyone's file
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / own_files.KEY_FILE).write_bytes(b"k" * 7)
    monkeypatch.setenv(own_files.CACHE_ENV, str(tmp_path / "short"))
    assert own_files.user_key() is None and "-" not in own_files.temporary_name(".x.")


def test_made_files_and_folders_are_new_private_and_tagged(tmp_path):
    handle, path = own_files.make_file(tmp_path, ".a.csv.", ".tmp")
    os.close(handle)
    folder = own_files.make_folder(tmp_path, ".report-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert own_files.written_here(path.name, ".a.csv.", ".tmp") and own_files.written_here(folder.name, ".report-")


def test_concurrent_first_uses_agree_on_one_whole_key(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, own_files.CACHE_ENV: str(tmp_path / "cache")}
    show = "from pebench.store import own_files; key = own_files.user_key(); print(key.hex() if key else None)"
    children = [subprocess.Popen([sys.executable, "-c", show], env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    keys = {child.communicate(timeout=60)[0].strip() for child in children}
    assert keys == {(tmp_path / "cache" / own_files.KEY_FILE).read_bytes().hex()}
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [own_files.KEY_FILE]  # no half-made key left


def test_a_staging_folder_is_made_after_removing_only_this_users_dead_leftovers_of_its_prefix(tmp_path):
    from test_sweep_failures import dead_pid

    prefix, machine, dead = ".out.combine-", own_files.machine_mark(), dead_pid()
    other = f"{'0' if machine != '0' * 8 else '1'}{machine[1:]}"
    left = tmp_path / own_files.temporary_name(f"{prefix}{machine}-{dead}-")  # a combine killed with kill -9
    kept = [tmp_path / own_files.temporary_name(f"{prefix}{machine}-{os.getpid()}-"),  # one in progress
            tmp_path / own_files.temporary_name(f"{prefix}{other}-{dead}-"),  # on a shared disk: not our pid
            tmp_path / own_files.temporary_name(f".other.combine-{machine}-{dead}-"),  # another command's
            tmp_path / f"{prefix}{machine}-{dead}-k3j9xabc",  # untagged: a stranger's, or made without a key
            tmp_path / f"{prefix}{machine}-{dead}-k3j9xabc-{left.name[-16:]}"]  # a tag copied onto another name
    for folder in (left, *kept):
        folder.mkdir()
        (folder / "run.csv").write_text("run_id\n")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "yours.csv").write_text("yours\n")
    linked = tmp_path / own_files.temporary_name(f"{prefix}{machine}-{dead}-")
    linked.symlink_to(target, target_is_directory=True)  # tagged and dead, but a link: never followed, kept
    a_file = tmp_path / own_files.temporary_name(f"{prefix}{machine}-{dead}-")
    a_file.write_text("a file, not a staging folder\n")

    staging = own_files.staging_folder(tmp_path, prefix)
    assert staging.name.startswith(f"{prefix}{machine}-{os.getpid()}-") and staging.is_dir()
    assert own_files.written_here(staging.name, f"{prefix}{machine}-{os.getpid()}-")
    assert not left.exists() and all((folder / "run.csv").read_text() == "run_id\n" for folder in kept)
    assert linked.is_symlink() and (target / "yours.csv").read_text() == "yours\n" and a_file.is_file()
