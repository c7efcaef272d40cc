"""A rerun's report says what differs between its manifest and its reference's (device, CPU kernels, torch,
Python, threads, commit), computed by the library, never "only the hardware" when more changed."""

from __future__ import annotations

from pebench.report.reruns import manifest_differences

CPU = {"device": "cpu", "cuda_device": None, "processor": "x86_64", "torch_version": "2.13.0+cpu",
       "python_version": "3.11.7", "torch_threads": 1, "git_sha": "59531948b5f43e9aad24c67f820abc27b63853a7",
       "git_dirty": False, "workers": 2}
H100 = {**CPU, "device": "cuda", "cuda_device": "NVIDIA H100 80GB HBM3", "torch_version": "2.11.0+cu130",
        "python_version": "3.12.3", "git_sha": "c979ac08e988351c2d2caae3bd94e651019a1ac7", "git_dirty": True,
        "workers": 14}


def manifest(*invocations: dict) -> dict:
    return {"suite": "standard", "invocations": list(invocations), "latest": invocations[-1]}


def test_the_sentence_names_each_field_that_differs_with_both_values():
    assert manifest_differences(manifest(H100, H100), manifest(CPU)) == (
        "It differs from the reference in device (NVIDIA H100 80GB HBM3 vs x86_64 CPU), torch (2.11.0+cu130 vs "
        "2.13.0+cpu), Python (3.12.3 vs 3.11.7) and commit (c979ac08e988 with uncommitted changes vs "
        "59531948b5f4); same suite, seeds and data.")


def test_workers_are_not_a_difference_and_a_field_one_side_did_not_record_is_not_compared():
    assert manifest_differences(manifest({**CPU, "workers": 8, "torch_cpu_capability": "AVX512"}),
                                manifest(CPU)) == ("It was made with the reference's device, torch, Python, "
                                                   "threads and commit; same suite, seeds and data.")
    avx = manifest_differences(manifest({**CPU, "cpu_model": "Xeon", "torch_cpu_capability": "AVX512"}),
                               manifest({**CPU, "cpu_model": "EPYC", "torch_cpu_capability": "AVX2"}))
    assert avx.startswith("It differs from the reference in device (Xeon vs EPYC) and CPU kernels (AVX512 vs AVX2);")


def test_several_values_on_one_side_are_all_named_and_a_missing_manifest_gives_no_sentence():
    two = manifest(H100, {**H100, "torch_version": "2.12.0+cu130"})
    assert "torch (2.11.0+cu130, 2.12.0+cu130 vs 2.13.0+cpu)" in manifest_differences(two, manifest(CPU))
    assert manifest_differences(two, None) is None and manifest_differences(None, manifest(CPU)) is None


def write_main(folder, rows) -> None:
    """A main table (``tables/main.csv``) with every column a comparison reads; only the tiers filled in."""
    import pandas as pd

    from pebench.analysis.compare import VERDICT_COLUMNS

    (folder / "tables").mkdir(parents=True)
    pd.DataFrame([{**dict.fromkeys(VERDICT_COLUMNS), "experiment": "length_extrapolation", "arch": arch,
                   "encoding": encoding, "ranked": tier is not None, "tier": tier} for arch, encoding, tier in rows]
                 ).to_csv(folder / "tables" / "main.csv", index=False)


def test_a_rerun_says_how_its_main_table_tiers_agree_with_the_reference(tmp_path):
    """Protocol v3's main table, not only v2's MRR leaderboard: each side's top tier and the encodings whose tier
    (or being unranked) is the same on both."""
    from pebench.analysis.compare import main_table_agreement

    write_main(tmp_path / "ref", [("decoder", "t5", 1), ("decoder", "rope", 1), ("decoder", "sinusoidal", 2),
                                  ("decoder", "none", None), ("encoder", "t5", 1), ("encoder", "learned", 1)])
    write_main(tmp_path / "rerun", [("decoder", "t5", 1), ("decoder", "rope", 1), ("decoder", "sinusoidal", 1),
                                    ("decoder", "none", None), ("encoder", "learned", 1), ("encoder", "t5", 1)])
    # each top tier in the canonical order of the encodings, whatever order the table lists them in
    assert main_table_agreement(tmp_path / "rerun", tmp_path / "ref") == [
        "Main table of Length extrapolation, decoder: the top tier is Sinusoidal, RoPE, T5 bias in the rerun and "
        "RoPE, T5 bias in the reference; 3 of 4 encodings have the same placement on both sides (a tier, between "
        "tiers, no extrapolation, or not ranked).",
        "Main table of Length extrapolation, encoder: the top tier is Learned, T5 bias on both sides; 2 of 2 encodings "
        "have the same placement on both sides (a tier, between tiers, no extrapolation, or not ranked)."]
    assert main_table_agreement(tmp_path / "rerun", tmp_path / "nowhere") == []  # a side without a main table


def test_a_tier_that_holds_in_under_90_percent_is_no_top_tier_and_a_rerun_without_a_board_is_not_compared(tmp_path):
    """Protocol v4's boards: an encoding between tiers (P(tier) < 0.9) is not in its point estimate's tier; a quick
    sample ranks nothing, and "the top tier is no encoding in the rerun" said nothing true."""
    import pandas as pd

    from pebench.analysis.compare import main_table_agreement

    write_main(tmp_path / "ref", [("decoder", "t5", 1), ("decoder", "rope", 1), ("decoder", "none", 0)])
    main = pd.read_csv(tmp_path / "ref" / "tables" / "main.csv").assign(tier_probability=[0.95, 0.6, None])
    main.to_csv(tmp_path / "ref" / "tables" / "main.csv", index=False)
    write_main(tmp_path / "rerun", [("decoder", "t5", 1), ("decoder", "rope", 2), ("decoder", "none", 0)])
    assert main_table_agreement(tmp_path / "rerun", tmp_path / "ref") == [
        "Main table of Length extrapolation, decoder: the top tier is T5 bias on both sides; 2 of 3 "
        "encodings have the same placement on both sides (a tier, between tiers, no extrapolation, or not ranked)."]
    write_main(tmp_path / "sample", [("decoder", "t5", None), ("decoder", "rope", None)])
    assert main_table_agreement(tmp_path / "sample", tmp_path / "ref") == [
        "Main table of Length extrapolation, decoder: the rerun ranks no encoding (its runs are fewer than a board "
        "needs), so its placements are not compared."]
