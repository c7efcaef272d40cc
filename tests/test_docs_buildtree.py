"""The generated tree's plumbing (``docs/_ext/buildtree.py``): regenerating keeps the time of what did not change.

Sphinx reads a page again when its file is newer than its last reading; a page written again with the same bytes
must keep its time, or every build reads every page again.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "_ext"))
buildtree = pytest.importorskip("buildtree")

OLD_NS = 1_000_000_000 * 1_000_000_000  # a fixed time in the past (2001), set on the previous build's files


def previous_build(out: Path) -> None:
    for name, text in (("pages/same.md", "same"), ("pages/changed.md", "before"), ("pages/gone.md", "gone")):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, ns=(OLD_NS, OLD_NS))


def test_a_file_written_again_with_the_same_bytes_keeps_its_time(tmp_path):
    previous_build(tmp_path)
    (tmp_path / "includes.md").write_text("kept")  # outside the regenerated folders: left alone
    with buildtree.regenerated(tmp_path, ["pages", "absent"]):
        assert not (tmp_path / "pages").exists()  # the generator starts from an empty folder
        (tmp_path / "pages").mkdir()
        (tmp_path / "pages" / "same.md").write_text("same")
        (tmp_path / "pages" / "changed.md").write_text("after")
        (tmp_path / "pages" / "new.md").write_text("new")
    assert (tmp_path / "pages" / "same.md").stat().st_mtime_ns == OLD_NS
    assert (tmp_path / "pages" / "changed.md").stat().st_mtime_ns > OLD_NS
    assert (tmp_path / "pages" / "new.md").stat().st_mtime_ns > OLD_NS
    assert not (tmp_path / "pages" / "gone.md").exists()  # a page that is gone disappears
    assert sorted(p.name for p in tmp_path.iterdir()) == ["includes.md", "pages"]  # no .previous left


def test_a_stopped_generator_leaves_no_previous_folder(tmp_path):
    previous_build(tmp_path)
    (tmp_path / buildtree.PREVIOUS).mkdir()  # one that a killed build left: removed first
    (tmp_path / buildtree.PREVIOUS / "stale.md").write_text("x")
    with pytest.raises(RuntimeError, match="stopped"), buildtree.regenerated(tmp_path, ["pages"]):
        raise RuntimeError("stopped")
    assert not (tmp_path / buildtree.PREVIOUS).exists()


def test_a_link_is_never_given_a_time(tmp_path):
    previous_build(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("same")
    os.utime(outside, ns=(OLD_NS + 5, OLD_NS + 5))  # os.utime follows a link: this time would become OLD_NS
    with buildtree.regenerated(tmp_path, ["pages"]):
        (tmp_path / "pages").mkdir()
        (tmp_path / "pages" / "same.md").symlink_to(outside)
    assert outside.stat().st_mtime_ns == OLD_NS + 5
