"""What changed from an older protocol's verdicts (issue 36): snapshots of a results folder's main table and boards
(:mod:`pebench.store.history`) and the verdicts that moved between two main tables (:mod:`pebench.report.changes`)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from pebench.analysis.compare import main_table_frame
from pebench.cli import main
from pebench.render import blocks
from pebench.render.results_text import changes_file
from pebench.render.tables import to_latex
from pebench.report.changes import change_sentences as sentences
from pebench.report.changes import changes, changes_table, verdict_changes
from pebench.store import ResultsError, history
from pebench.store.report_file import DIGEST_KEY, raw_digest

ROOT = Path(__file__).resolve().parent.parent
V2 = {"suite": "standard", "protocol": 2, "results_version": "v2-aaa7cfcc", "commit": "a" * 40}
V3 = {"suite": "standard", "protocol": 3, "results_version": "v3-0123abcd", "commit": "b" * 40}
EXPERIMENT = "length_extrapolation"


def row(encoding: str, tier: int | None, fit: float = 0.7, harms: bool | None = False, arch: str = "decoder",
        score: float = 0.1) -> dict:
    """One row of a main table's CSV: ranked with ``tier``, else not ranked (tier None); no control interval
    where ``harms`` is None (the baseline)."""
    ranked = tier is not None
    control = {} if harms is None else {"control_vs_baseline": -0.2 if harms else 0.01,
                                        "control_low": -0.3 if harms else -0.05, "control_high": -0.1 if harms else 0.1}
    return {"experiment": EXPERIMENT, "arch": arch, "encoding": encoding, "ranked": ranked, "tier": tier,
            "score": score if ranked else None, "score_low": score - 0.1 if ranked else None,
            "score_high": score + 0.1 if ranked else None, "dependent_fit_rate": fit, "n_pairs": 11, "n_tasks": 4,
            **control, "harms": bool(harms)}


def frame(*rows: dict) -> pd.DataFrame:
    """The main table of ``rows``, read as from its CSV."""
    columns = ["control_vs_baseline", "control_low", "control_high"]
    data = pd.DataFrame(list(rows))
    data = data.reindex(columns=[*data.columns, *(c for c in columns if c not in data)])
    return main_table_frame(data.to_csv(index=False).encode())


BEFORE = (row("rope", 1), row("t5", 1, harms=True), row("learned", 2, fit=1.0), row("none", None, fit=0.0, harms=None),
          row("alibi", None, fit=0.2))


def compared(*after: dict, before: tuple[dict, ...] = BEFORE) -> tuple[pd.DataFrame, list[str]]:
    found = changes(frame(*before), frame(*after))
    return found, sentences(found, V2, V3)


def moved(found: pd.DataFrame) -> dict[str, list[str]]:
    return {r["encoding"]: r["moved"] for r in found.to_dict("records") if r["moved"]}


def test_a_tier_change_moves_with_both_scores_beside_it():
    found, said = compared(row("rope", 2, score=-0.2), *BEFORE[1:])
    assert moved(found) == {"rope": ["tier"]}
    assert said[0] == ("1 of the 5 encoding-architecture pairs compared under both moved from standard v2-aaa7cfcc to "
                       "standard v3-0123abcd.")
    assert said[1] == ("Length extrapolation, decoder: RoPE moved from tier 1 to tier 2 (score 0.10 [0.00, 0.20] under "
                       "v2, −0.20 [−0.30, −0.10] under v3).")


def test_ranked_to_unranked_moves_with_the_fit_rates():
    found, said = compared(row("rope", None, fit=0.4), *BEFORE[1:])
    assert moved(found) == {"rope": ["ranking"]}
    assert said[1] == ("Length extrapolation, decoder: RoPE moved from tier 1 to not ranked (it fitted 70% of its "
                       "order-dependent runs under v2, 40% under v3).")


def test_a_harms_flip_moves_and_an_interval_spanning_zero_is_unresolved():
    found, said = compared(row("rope", 1, harms=True), row("t5", 1, harms=False), *BEFORE[2:])
    assert moved(found) == {"rope": ["harms"], "t5": ["harms"]}
    assert said[1] == ("Length extrapolation, decoder: RoPE now harms the order-free controls (difference from NoPE "
                       "0.010 [−0.050, 0.100] under v2, −0.200 [−0.300, −0.100] under v3).")
    # an interval that spans 0 shows neither harm nor its absence: not "no longer harms"
    assert said[2].startswith("Length extrapolation, decoder: T5 bias is no longer found to harm the order-free "
                              "controls")
    assert said[2].endswith("; its interval spans 0, so whether it harms is unresolved).")


def test_an_encoding_new_in_v3_and_one_gone_are_named_not_counted_as_moved():
    found, said = compared(*BEFORE[:4], row("cope", 1, fit=0.9, score=0.3))
    assert moved(found) == {"cope": ["new"], "alibi": ["gone"]}
    assert list(found["encoding"]) == ["rope", "t5", "learned", "none", "cope", "alibi"]
    assert said == [
        "No verdict moved from standard v2-aaa7cfcc to standard v3-0123abcd: each of the 4 encoding-architecture "
        "pairs compared under both keeps its tier, its ranking and its harm verdict. 2 are compared on one side only.",
        "Length extrapolation, decoder: CoPE is compared under v3 only (tier 1, score 0.30 [0.20, 0.40], fitted 90% "
        "of its order-dependent runs).",
        "Length extrapolation, decoder: ALiBi is compared under v2 only (not ranked, fitted 20% of its order-dependent "
        "runs)."]


def test_nothing_moved_says_so_though_every_score_changed():
    found, said = compared(*(dict(r, score=(r["score"] or 0) + 0.5) if r["ranked"] else r for r in BEFORE))
    assert moved(found) == {}
    assert said == ["No verdict moved from standard v2-aaa7cfcc to standard v3-0123abcd: each of the 5 "
                    "encoding-architecture pairs compared under both keeps its tier, its ranking and its harm verdict."]
    same = changes(frame(*BEFORE), frame(*BEFORE))
    assert sentences(same, V2, V2) == ["No verdict moved: both sides are the same results (standard v2-aaa7cfcc)."]


def test_the_baseline_without_a_control_interval_has_no_harm_verdict_to_flip():
    found, _ = compared(*BEFORE[:3], row("none", None, fit=0.0, harms=False), BEFORE[4])
    assert moved(found) == {}


def test_the_table_names_the_protocols_and_says_scores_are_not_comparable():
    found, _ = compared(row("rope", 2), *BEFORE[1:4], row("cope", 1))
    table = changes_table(found, V2, V3)
    assert table.title == "Length extrapolation: what changed from v2 to v3"
    assert table.headers[:4] == ["Arch", "Encoding", "Tier v2", "Tier v3"] and table.headers[-1] == "Moved"
    shown = {r[1].text: [c.shown for c in r] for r in table.rows}
    assert shown["RoPE"][2:4] == ["1", "2"] and shown["RoPE"][-1] == "tier"
    assert shown["ALiBi"][3] == "" and shown["ALiBi"][-1] == "gone" and shown["CoPE"][2] == ""
    assert "not comparable as numbers" in table.notes[0]
    assert to_latex(table).isascii() and "v3-0123abcd against standard v2-aaa7cfcc" in table.to_markdown()


def test_an_encoding_at_or_below_the_floor_is_no_extrapolation_never_a_tier():
    """Tier 0 of the extrapolation board (issue 66): ranked, at or below the position-free floor, no tier. Its move
    from a tier is said as such, and staying below the floor on both sides is no move."""
    found, said = compared(row("rope", 0, score=-0.2), *BEFORE[1:])
    assert moved(found) == {"rope": ["tier"]}
    assert said[1] == ("Length extrapolation, decoder: RoPE moved from tier 1 to no extrapolation (score 0.10 [0.00, "
                       "0.20] under v2, −0.20 [−0.30, −0.10] under v3).")
    below = (row("rope", 0, score=-0.2), *BEFORE[1:])
    same, said = compared(*below, before=below)
    assert moved(same) == {} and said[0].startswith("No verdict moved")
    table = changes_table(found, V2, V3)
    shown = {r[1].text: [c.shown for c in r] for r in table.rows}
    assert shown["RoPE"][2:4] == ["1", "no extrapolation"]
    assert "no extrapolation = at or below the position-free floor" in table.caption


def test_an_encoding_whose_tier_holds_in_under_90_percent_is_between_tiers_as_the_board_says():
    """Protocol v4's boards (issue 66): an encoding whose tier holds in under 90% of the bootstrap replicates is
    between tiers, never "tier k", also in what changed; between tiers on both sides is no move."""
    held = (dict(row("rope", 1), tier_probability=0.95), *BEFORE[1:])
    found, said = compared(dict(row("rope", 2, score=-0.2), tier_probability=0.726), *BEFORE[1:], before=held)
    assert moved(found) == {"rope": ["tier"]}
    assert said[1] == ("Length extrapolation, decoder: RoPE moved from tier 1 to between tiers (P(tier 2) 0.726 under "
                       "v3; score 0.10 [0.00, 0.20] under v2, −0.20 [−0.30, −0.10] under v3).")
    shown = {r[1].text: [c.shown for c in r] for r in changes_table(found, V2, V3).rows}
    assert shown["RoPE"][2:4] == ["1", "between tiers (0.726)"]
    between = (dict(row("rope", 1), tier_probability=0.6), *BEFORE[1:])
    same, said = compared(dict(row("rope", 2), tier_probability=0.8), *BEFORE[1:], before=between)
    assert moved(same) == {} and said[0].startswith("No verdict moved")
    with pytest.raises(ResultsError, match="tier_probability outside"):
        frame(dict(row("rope", 1), tier_probability=1.5))


# --------------------------------------------------------------------------- folders


def results_folder(root: Path, main: pd.DataFrame | None = None, version: str = "v2-aaa7cfcc") -> Path:
    """A results folder with one run file, a manifest, a current report, its main table and one board."""
    (root / "raw").mkdir(parents=True)
    (root / "raw" / "0123456789abcdef.csv.gz").write_bytes(gzip.compress(b"run_id\n0123456789abcdef\n", mtime=0))
    (root / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": [{"git_sha": "c" * 40}],
                                                    "latest": {"git_sha": "c" * 40}}))
    (root / "report.json").write_text(json.dumps({DIGEST_KEY: raw_digest(root), "results_version": version,
                                                  "main_table": "main"}))
    (root / "tables").mkdir()
    (main if main is not None else pd.DataFrame(list(BEFORE))).to_csv(root / "tables" / "main.csv", index=False)
    (root / "tables" / f"harm_{EXPERIMENT}.csv").write_text("arch,encoding,harms\ndecoder,rope,False\n")
    return root


def test_a_snapshot_keeps_the_main_table_and_boards_and_names_its_results(tmp_path):
    folder = results_folder(tmp_path / "standard")
    path = history.snapshot(folder, tmp_path / "history")
    assert path == tmp_path / "history" / "standard-v2-aaa7cfcc"
    record = history.read_snapshot(path)
    assert {k: record[k] for k in ("suite", "protocol", "results_version", "commit", "commits")} == {
        "suite": "standard", "protocol": 2, "results_version": "v2-aaa7cfcc", "commit": "c" * 40,
        "commits": ["c" * 40]}
    assert sorted(record["files"]) == ["harm_length_extrapolation.csv", "main.csv"]
    assert (path / "main.csv").read_bytes() == (folder / "tables" / "main.csv").read_bytes()
    assert history.snapshot(folder, tmp_path / "history") == path  # the same snapshot again: kept as it is
    assert verdict_changes(path, folder).sentences == [
        "No verdict moved: both sides are the same results (standard v2-aaa7cfcc)."]


def test_a_snapshot_refuses_links_crafted_names_stale_reports_and_edited_files(tmp_path):
    folder = results_folder(tmp_path / "standard")
    main_csv = folder / "tables" / "main.csv"
    (tmp_path / "elsewhere.csv").write_bytes(main_csv.read_bytes())
    main_csv.unlink()
    main_csv.symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(ResultsError, match="symbolic link"):
        history.snapshot(folder, tmp_path / "history")
    main_csv.unlink()
    main_csv.write_bytes((tmp_path / "elsewhere.csv").read_bytes())
    report = json.loads((folder / "report.json").read_text())
    (folder / "report.json").write_text(json.dumps({**report, "main_table": "../../elsewhere"}))
    with pytest.raises(ResultsError, match="main table"):
        history.snapshot(folder, tmp_path / "history")
    (folder / "report.json").write_text(json.dumps({**report, DIGEST_KEY: "0" * 64}))
    with pytest.raises(ResultsError, match="older than the run files"):
        history.snapshot(folder, tmp_path / "history")
    (folder / "report.json").write_text(json.dumps(report))
    path = history.snapshot(folder, tmp_path / "history")
    (path / "main.csv").write_text("experiment,arch,encoding\n")
    with pytest.raises(ResultsError, match="differs from the file the snapshot was made with"):
        history.verdicts(path)


def test_the_cli_makes_a_snapshot_and_prints_what_moved(tmp_path, capsys):
    before = results_folder(tmp_path / "v2" / "standard")
    after = results_folder(tmp_path / "v3" / "standard", frame(row("rope", 2), *BEFORE[1:]), version="v3-0123abcd")
    assert main(["snapshot", str(before), "--history", str(tmp_path / "history")]) == 0
    snapshot = tmp_path / "history" / "standard-v2-aaa7cfcc"
    assert f"-> {snapshot}" in capsys.readouterr().out
    assert main(["changes", str(snapshot), str(after), "--blocks", str(tmp_path / "changes.json")]) == 0
    out = capsys.readouterr().out
    assert "Length extrapolation, decoder: RoPE moved from tier 1 to tier 2" in out and "Tier v2" in out
    written = json.loads((tmp_path / "changes.json").read_text())["blocks"]
    assert [b["kind"] for b in written] == ["text", "text", "list", "table", "text"]
    assert all(b["kind"] in blocks.KINDS for b in written)
    assert main(["changes", str(tmp_path / "nowhere"), str(after)]) == 2


def test_the_committed_v2_snapshot_is_intact_and_says_nothing_moved_against_itself():
    path = ROOT / "results" / "history" / "standard-v2-aaa7cfcc"
    found = verdict_changes(path, path)
    assert found.before["results_version"] == "v2-aaa7cfcc" and found.before["protocol"] == 2
    assert found.sentences == ["No verdict moved: both sides are the same results (standard v2-aaa7cfcc)."]
    assert not found.moved and len(found.frame) == 16


def test_the_protocol_page_shows_the_changes_list_only_while_it_describes_the_reference_as_it_is(tmp_path):
    """``pebench changes ... --blocks results/history/standard-changes.json`` is what the protocol page's "What
    changed from v2" shows; a list made before the reference was regenerated stops the build with one line."""
    ext = str(ROOT / "docs" / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    from pebench_docs.protocol_pages import changes_include

    results = tmp_path / "results"
    before = results_folder(tmp_path / "v2" / "standard")
    reference = results_folder(results / "standard", frame(row("rope", 2), *BEFORE[1:]), version="v3-0123abcd")
    assert "there is nothing to compare" in changes_include(results)
    assert main(["snapshot", str(before), "--history", str(results / "history")]) == 0
    listed = changes_file(results, "standard")
    assert main(["changes", str(results / "history" / "standard-v2-aaa7cfcc"), str(reference),
                 "--blocks", str(listed)]) == 0
    written = json.loads(listed.read_text())
    assert (written["before"], written["after"]) == ("v2-aaa7cfcc", "v3-0123abcd")
    page = changes_include(results)
    assert "The verdicts of standard v2-aaa7cfcc" in page and "RoPE moved from tier 1 to tier 2" in page
    report = json.loads((reference / "report.json").read_text())
    (reference / "report.json").write_text(json.dumps({**report, "results_version": "v3-89abcdef"}))  # regenerated
    with pytest.raises(RuntimeError, match="lists the changes to v3-0123abcd, not to .* as it is now"):
        changes_include(results)
