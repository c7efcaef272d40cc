"""The rows a folder's load verified, kept between processes (:mod:`pebench.store.verified_cache`): read back
only for the same bytes and code, never for a file of anyone else's, and never an error."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from test_results import write_synthetic_results

from pebench import store
from pebench.store import ResultsError, own_files, verified_cache


def _new_process(monkeypatch) -> list[int]:
    """Forget what this process loaded, as a new process would; count the verified loads from now on."""
    store._LOADED.clear()
    loads = []
    load_files = store._load_files
    monkeypatch.setattr(store, "_load_files", lambda *args: loads.append(1) or load_files(*args))
    return loads


def _kept_files() -> list:
    return sorted(own_files.cache_dir().glob(f"{verified_cache.PREFIX}*{verified_cache.SUFFIX}"))


def test_a_second_process_reads_the_rows_kept_for_the_same_bytes_and_code(tmp_path, monkeypatch):
    folder = write_synthetic_results(tmp_path / "a")
    first = store.load(folder)
    assert len(_kept_files()) == 1
    loads = _new_process(monkeypatch)
    pd.testing.assert_frame_equal(store.load(folder), first, check_exact=True)
    assert loads == []  # read back, not verified again
    copy = write_synthetic_results(tmp_path / "b")  # the same files elsewhere: the same rows
    pd.testing.assert_frame_equal(store.load(copy), first, check_exact=True)
    assert loads == []
    monkeypatch.setattr(verified_cache, "code_fingerprint", lambda plugins=(): "other code")
    _new_process(monkeypatch)
    pd.testing.assert_frame_equal(store.load(folder), first, check_exact=True)
    assert len(_kept_files()) == 2  # other code verifies afresh and keeps its own


def test_an_edited_file_is_verified_again_and_its_error_is_never_kept(tmp_path, monkeypatch):
    folder = write_synthetic_results(tmp_path)
    store.load(folder)
    path = store.raw_files(folder / "raw")[0]
    path.write_text(path.read_text().replace(",0.", ",1.", 1))
    for _ in range(2):  # each process names the file: nothing of a failed load was kept
        _new_process(monkeypatch)
        with pytest.raises(ResultsError, match=path.name):
            store.load(folder)
    assert len(_kept_files()) == 1


def test_a_kept_file_others_may_write_or_that_is_no_rows_is_never_read(tmp_path, monkeypatch):
    folder = write_synthetic_results(tmp_path)
    first = store.load(folder)
    [kept] = _kept_files()
    kept.chmod(0o664)  # group-writable: anyone of the group could have put code there for pickle to run
    loads = _new_process(monkeypatch)
    pd.testing.assert_frame_equal(store.load(folder), first, check_exact=True)
    assert loads == [1]
    [kept] = _kept_files()
    assert kept.stat().st_mode & 0o077 == 0  # kept again, for this user only
    kept.write_bytes(b"not a pickle")
    loads = _new_process(monkeypatch)
    pd.testing.assert_frame_equal(store.load(folder), first, check_exact=True)
    assert loads == [1]
    target = tmp_path / "elsewhere.pickle"
    os.replace(kept, target)
    kept.symlink_to(target)  # a link is never followed
    assert verified_cache.kept_rows(kept.name.removeprefix(verified_cache.PREFIX).removesuffix(
        verified_cache.SUFFIX)) is None


def test_only_the_newest_kept_files_stay(tmp_path, monkeypatch):
    monkeypatch.setattr(verified_cache, "KEPT_FOLDERS", 2)
    for seeds in ((0,), (1,), (2,)):
        store.load(write_synthetic_results(tmp_path / str(seeds[0]), seeds=seeds))
    assert len(_kept_files()) == 2
    other = own_files.cache_dir() / "notes.txt"
    other.write_text("not pebench's")
    store.load(write_synthetic_results(tmp_path / "3", seeds=(3,)))
    assert other.exists() and len(_kept_files()) == 2
