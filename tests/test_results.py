"""Aggregation and statistics on small hand-made frames with known answers, and schema errors.

:func:`write_synthetic_results` (also used by test_plots and test_report) writes a small,
schema-valid results folder of every standard experiment with planted effects.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pebench import store
from pebench.analysis import results
from pebench.config import run_id_of
from pebench.plan.experiment import report_declarations
from pebench.store import ResultsError
from pebench.store.schema import RUN_ID_COLUMNS

BASE = {
    "suite": "standard", "task_version": 1, "encoding_options": "{}", "d_model": 16, "n_layers": 1, "n_heads": 2,
    "steps": 10, "lr": 0.001, "batch_size": 8, "train_min_len": 1, "eval_n_examples": 16, "eval_decoding": "teacher",
    "pebench_version": "0.1.0", "eval_variants": "[]", "params": 1000, "encoding_params": 0, "train_seconds": 1.0,
    "final_train_loss": 0.5, "equivariance_gap_init": float("nan"), "equivariance_gap_trained": float("nan"),
    "error": "",
}


def run_frame(experiment: str, task: str, encoding: str, arch: str, seed: int, train_max_len: int,
              points: list[dict], status: str = "ok", **extra) -> pd.DataFrame:
    """Rows of one run: ``points`` are dicts with eval_len, token_acc, ... (condition/variant default)."""
    identity = {**BASE, "experiment": experiment, "task": task, "encoding": encoding, "arch": arch, "seed": seed,
                "train_max_len": train_max_len, "status": status, **extra}
    identity["run_id"] = run_id_of({k: v for k, v in identity.items() if k in RUN_ID_COLUMNS})
    if status == "failed":
        return pd.DataFrame([{**identity, "error": "RuntimeError: boom"}])
    rows = []
    for point in points:
        row = {"condition": "original", "variant": "trained", "n": 16, "chance_token_acc": 0.1, **point}
        row.setdefault("seq_acc", row["token_acc"] ** 2)
        row.setdefault("loss", -math.log(max(row["token_acc"], 1e-3)))
        rows.append({**identity, **row})
    return pd.DataFrame(rows)


def write_synthetic_results(folder: Path, seeds: tuple[int, ...] = (0, 1, 2)) -> Path:
    """A results folder with every standard experiment, a failed and a diverged run; returns ``folder``."""
    rng = np.random.default_rng(0)
    frames = []
    lengths, train_max = [4, 8, 16, 32], 8
    quality = {"none": (0.35, 2.0), "rope": (0.95, 1.0), "alibi": (0.97, 0.15)}  # (ID acc, OOD decay)
    for task, chance in (("copy", 0.1), ("majority", 0.3)):
        for encoding, (fit, decay) in quality.items():
            for seed in seeds:
                if (task, encoding, seed) == ("copy", "rope", 2):
                    frames.append(run_frame("length_extrapolation", task, encoding, "decoder", seed, train_max, [],
                                            status="failed"))
                    continue
                points = []
                for length in lengths:
                    acc = fit if length <= train_max else chance + (fit - chance) * math.exp(-decay * length / 8)
                    acc = float(np.clip(acc + rng.normal(0, 0.01), 0, 1))
                    points.append({"eval_len": length, "token_acc": acc, "chance_token_acc": chance})
                status = "diverged" if (task, encoding, seed) == ("majority", "none", 1) else "ok"
                frames.append(run_frame("length_extrapolation", task, encoding, "decoder", seed, train_max, points,
                                        status=status))
    for task, dependent in (("reverse", True), ("majority", False)):
        for arch in ("encoder", "decoder"):
            for encoding in ("none", "rope"):
                blind = encoding == "none" and arch == "encoder"
                for seed in seeds:
                    acc = 0.12 if (blind and dependent) else 0.95
                    shuffled = acc - (0.8 if dependent and not blind else 0.0)
                    points = [
                        {"eval_len": 8, "condition": c, "token_acc": float(np.clip(a + rng.normal(0, 0.01), 0, 1))}
                        for c, a in (("original", acc), ("shuffled", max(shuffled, 0.1)))
                    ]
                    gaps = {"equivariance_gap_init": 1e-8 if blind else 0.3,
                            "equivariance_gap_trained": 2e-8 if blind else 0.5}
                    frames.append(run_frame("order_sensitivity", task, encoding, arch, seed, 8, points, **gaps))
    variants = json.dumps([["linear", "{}"], ["ntk", "{}"], ["yarn", "{}"]])
    for seed in seeds:
        points = []
        for variant, gain in (("trained", 0.0), ("linear", 0.1), ("ntk", 0.3), ("yarn", 0.35)):
            for length in (8, 16, 32):
                acc = 0.95 if length <= 8 else 0.2 + gain + rng.normal(0, 0.01)
                points.append({"eval_len": length, "variant": variant, "token_acc": float(acc)})
        frames.append(run_frame("rope_scaling", "copy", "rope", "decoder", seed, 8, points, eval_variants=variants))
    for encoding, growth in (("none", 0.05), ("rope", 0.8), ("alibi", 0.0)):
        for seed in seeds:
            points = [{"eval_len": length, "token_acc": 0.5, "chance_token_acc": 0.17,
                       "loss": 1.2 + growth * max(0.0, math.log2(length / 16)) + rng.normal(0, 0.01)}
                      for length in (8, 16, 32, 64)]
            frames.append(run_frame("lm_extrapolation", "charlm", encoding, "decoder", seed, 16, points,
                                    train_min_len=16))
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for frame in frames:
        frame.to_csv(raw / f"{frame['run_id'].iloc[0]}.csv", index=False)
    # as the runner records them: each experiment's report declaration (pebench.analysis.declarations)
    experiments = sorted({str(frame["experiment"].iloc[0]) for frame in frames})
    (folder / "manifest.json").write_text(json.dumps({"suite": "standard", "invocations": [],
                                                      "report_declarations": report_declarations(experiments)}))
    return folder


def curve_run(seed: int, accuracies: dict[int, float], seq: dict[int, float] | None = None, **extra) -> pd.DataFrame:
    points = [{"eval_len": length, "token_acc": acc, **({"seq_acc": seq[length]} if seq else {})}
              for length, acc in accuracies.items()]
    return run_frame("length_extrapolation", extra.pop("task", "copy"), extra.pop("encoding", "rope"), "decoder",
                     seed, 8, points, **extra)


# --------------------------------------------------------------------------- per run


def test_id_ood_split_is_by_train_max_len_and_unweighted():
    data = curve_run(0, {4: 1.0, 8: 0.8, 16: 0.5, 64: 0.1})
    runs = results.run_metrics(data)
    row = runs.iloc[0]
    assert row["id_token_acc"] == pytest.approx(0.9)  # lengths 4 and 8 (8 <= train_max_len)
    assert row["ood_token_acc"] == pytest.approx(0.3)  # (0.5 + 0.1) / 2, not weighted by length
    assert row["extrapolation_ratio"] == pytest.approx(0.3 / 0.9)
    assert row["id_perplexity"] == pytest.approx(math.exp(row["id_loss"]))
    assert row["train_perplexity"] == pytest.approx(1 / 0.8)  # loss = -log(acc) at length 8
    assert row["perplexity_ratio"] == pytest.approx(row["ood_perplexity"] / row["train_perplexity"])


def test_generalization_length_rule():
    # ID seq acc 0.8 -> bar 0.72: 16 passes, 32 fails, 64 passes again but does not count
    assert results.generalization_length([4, 8, 16, 32, 64], [0.8, 0.8, 0.75, 0.5, 0.9], 0.8) == 16
    assert results.generalization_length([4, 8, 16], [0.9, 0.9, 0.9], 0.9) == 16
    assert results.generalization_length([4, 8], [0.5, 0.9], 0.7) == 0  # the shortest length already fails
    assert math.isnan(results.generalization_length([4, 8], [0.05, 0.05], 0.05))  # no ID fit to keep
    runs = results.run_metrics(curve_run(0, {4: 1, 8: 1, 16: 1, 32: 1}, seq={4: 0.8, 8: 0.8, 16: 0.75, 32: 0.5}))
    assert runs.iloc[0]["generalization_length"] == 16


def test_order_reliance_and_invariance_gap_follow_the_task():
    frames = []
    for task in ("reverse", "majority"):
        points = [{"eval_len": 8, "condition": "original", "token_acc": 0.9},
                  {"eval_len": 8, "condition": "shuffled", "token_acc": 0.3 if task == "reverse" else 0.88}]
        frames.append(run_frame("order_sensitivity", task, "rope", "encoder", 0, 8, points))
    runs = results.run_metrics(pd.concat(frames)).set_index("task")
    assert runs.at["reverse", "order_reliance"] == pytest.approx(0.6)
    assert math.isnan(runs.at["reverse", "invariance_gap"])
    assert runs.at["majority", "invariance_gap"] == pytest.approx(0.02)
    assert math.isnan(runs.at["majority", "order_reliance"])
    assert runs.at["reverse", "id_token_acc"] == pytest.approx(0.9)  # shuffled rows are not in the ID mean


def test_failed_runs_are_kept_per_variant_and_counted():
    variants = json.dumps([["linear", "{}"], ["ntk", "{}"]])
    ok = curve_run(0, {4: 1.0, 16: 0.5})
    failed = run_frame("length_extrapolation", "copy", "rope", "decoder", 1, 8, [], status="failed",
                       eval_variants=variants)
    runs = results.run_metrics(pd.concat([ok, failed]))
    assert sorted(runs[runs["status"] == "failed"]["variant"]) == ["linear", "ntk", "trained"]
    cells = results.aggregate(runs)
    trained = cells[cells["variant"] == "trained"].iloc[0]
    assert (trained["n_runs"], trained["n_seeds"], trained["n_failed"], trained["failed_seeds"]) == (2, 1, 1, "1")
    assert trained["ood_token_acc_mean"] == pytest.approx(0.5)  # the failed run is not averaged as 0
    linear = cells[cells["variant"] == "linear"].iloc[0]
    assert linear["n_seeds"] == 0 and linear["id_token_acc_n"] == 0


# --------------------------------------------------------------------------- across seeds


def test_seed_statistics_mean_std_ci_best():
    values = [0.5, 0.6, 0.7, 0.9]
    s = results.seed_statistics(values, higher_is_better=True)
    sd = np.std(values, ddof=1)
    assert s["mean"] == pytest.approx(0.675)
    assert s["std"] == pytest.approx(sd)
    assert s["ci95"] == pytest.approx(stats.t.ppf(0.975, 3) * sd / 2)  # t with n-1 dof, sd / sqrt(4)
    assert s["best"] == 0.9 and s["n"] == 4
    assert results.seed_statistics(values, higher_is_better=False)["best"] == 0.5
    one = results.seed_statistics([0.3], higher_is_better=True)
    assert one["mean"] == 0.3 and math.isnan(one["ci95"]) and math.isnan(one["std"])


def test_aggregate_matches_seed_statistics_and_labels_diverged():
    frames = [curve_run(s, {8: a, 16: b}, status="diverged" if s == 2 else "ok")
              for s, (a, b) in enumerate([(0.9, 0.5), (0.8, 0.4), (1.0, 0.9)])]
    cells = results.aggregate(results.run_metrics(pd.concat(frames)))
    assert len(cells) == 1
    cell = cells.iloc[0]
    expected = results.seed_statistics([0.5, 0.4, 0.9], True)
    for stat in ("mean", "std", "ci95", "best", "n"):
        assert cell[f"ood_token_acc_{stat}"] == pytest.approx(expected[stat])
    assert (cell["n_seeds"], cell["n_diverged"], cell["n_failed"]) == (3, 1, 0)  # diverged runs count
    assert cell["ood_loss_best"] == pytest.approx(-math.log(0.9))  # best loss is the lowest


def test_curves_per_length():
    frames = [curve_run(s, {8: 0.9 + 0.05 * s, 16: 0.5}) for s in range(2)]
    frame = results.curves(pd.concat(frames)).set_index("eval_len")
    assert frame.at[8, "token_acc_mean"] == pytest.approx(0.925)
    assert frame.at[16, "token_acc_std"] == 0
    assert frame.at[8, "perplexity_ratio_mean"] == pytest.approx(1.0)  # vs itself at the training length


# --------------------------------------------------------------------------- comparisons


def test_holm_adjustment():
    adjusted = results.holm([0.01, 0.04, 0.03, float("nan")])
    # sorted: 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04)=0.06
    np.testing.assert_allclose(adjusted[:3], [0.03, 0.06, 0.06])
    assert math.isnan(adjusted[3])


def test_holm_agrees_bit_for_bit_with_statsmodels():
    """pebench's Holm is statsmodels' multipletests(method="holm") without its gc.collect(): the same values, to
    the last bit, on families with ties, ones, zeros and NaNs."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for size in (1, 2, 5, 12, 40):
        for p in (rng.uniform(size=size), rng.choice([0.0, 0.01, 0.03125, 0.5, 1.0], size=size)):
            assert results.holm(p).tobytes() == multipletests(p, method="holm")[1].tobytes()
            with_nan = np.append(p, np.nan)
            adjusted = results.holm(with_nan)
            assert adjusted[:-1].tobytes() == multipletests(p, method="holm")[1].tobytes()
            assert np.isnan(adjusted[-1])


def test_compare_to_best_marks_best_and_ties():
    frames = []
    samples = {"alibi": [0.90, 0.92, 0.91], "t5": [0.89, 0.93, 0.90], "rope": [0.20, 0.22, 0.21]}
    for encoding, values in samples.items():
        for seed, value in enumerate(values):
            frames.append(curve_run(seed, {8: 1.0, 16: value}, encoding=encoding))
    runs = results.run_metrics(pd.concat(frames))
    table = results.compare_to_best(runs, "ood_token_acc").set_index("encoding")
    assert table["is_best"].to_dict() == {"alibi": True, "t5": False, "rope": False}
    assert table.at["t5", "not_worse"] and not table.at["rope", "not_worse"]
    p_rope = stats.ttest_ind(samples["alibi"], samples["rope"], equal_var=False, alternative="greater").pvalue
    p_t5 = stats.ttest_ind(samples["alibi"], samples["t5"], equal_var=False, alternative="greater").pvalue
    assert table.at["rope", "p_value"] == pytest.approx(p_rope)
    assert table.at["rope", "p_holm"] == pytest.approx(min(1, 2 * min(p_rope, p_t5)))
    lower = results.compare_to_best(runs, "ood_loss", higher_is_better=False).set_index("encoding")
    assert lower["is_best"].to_dict() == {"alibi": True, "t5": False, "rope": False}


def test_compare_to_best_with_one_seed_marks_only_the_best():
    frames = [curve_run(0, {8: 1.0, 16: v}, encoding=e) for e, v in (("alibi", 0.9), ("rope", 0.89))]
    table = results.compare_to_best(results.run_metrics(pd.concat(frames)), "ood_token_acc").set_index("encoding")
    assert table.at["alibi", "is_best"] and not table.at["rope", "not_worse"]
    assert math.isnan(table.at["rope", "p_value"])


def test_welch_with_zero_variance():
    assert results.welch_greater(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == 1.0
    assert results.welch_greater(np.array([1.0, 1.0]), np.array([0.5, 0.5])) == 0.0


# --------------------------------------------------------------------------- loading


def test_load_synthetic_folder(tmp_path):
    data = store.load(write_synthetic_results(tmp_path))
    assert set(data["experiment"]) == {"length_extrapolation", "order_sensitivity", "rope_scaling", "lm_extrapolation"}
    runs = results.run_metrics(data)
    assert (runs["status"] == "failed").sum() == 1 and (runs["status"] == "diverged").sum() == 1


def test_malformed_csv_names_the_file(tmp_path):
    folder = write_synthetic_results(tmp_path, seeds=(0,))
    bad = folder / "raw" / "broken.csv"
    bad.write_text('suite,experiment\n"standard,unclosed\n')
    with pytest.raises(ResultsError, match="broken.csv"):
        store.load(folder)
    bad.write_text("suite,experiment\nstandard,x\n")
    with pytest.raises(ResultsError, match=r"broken\.csv: not a pebench result file, missing column"):
        store.load(folder)
    frame = curve_run(0, {8: 1.0})
    frame.loc[0, "token_acc"] = 1.7
    frame.to_csv(bad, index=False)
    with pytest.raises(ResultsError, match=r"broken\.csv: token_acc must be a number in \[0, 1\]"):
        store.load(folder)


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ResultsError, match="no run files"):
        store.load(tmp_path)
    with pytest.raises(ResultsError, match="no such results folder"):
        store.load(tmp_path / "missing")


def test_numeric_looking_run_ids_stay_text(tmp_path):
    frame = curve_run(273, {8: 1.0})  # a run id is its configuration's hash: this seed's is all digits
    run_id = "7541708833150119"  # pandas would read this as a number (and "3e69517866536022" as inf)
    assert frame["run_id"].iloc[0] == run_id
    (tmp_path / "raw").mkdir()
    frame.to_csv(tmp_path / "raw" / f"{run_id}.csv", index=False)
    data = store.load(tmp_path)
    assert data["run_id"].tolist() == [run_id]
    assert store.read_run_csv(tmp_path / "raw" / f"{run_id}.csv")["run_id"].iloc[0] == run_id


def test_loading_a_folder_again_reads_it_again_once_a_file_changes(tmp_path, monkeypatch):
    """``load`` keeps the rows of a folder it read, and gives a copy of them while no file changed; a file added,
    removed, rewritten or replaced is read (and verified) again."""
    folder = write_synthetic_results(tmp_path)  # with a failed run
    first = store.load(folder)
    reads = []
    read = store.read_run_text  # every file's text is read once per load, however its rows are parsed
    monkeypatch.setattr(store, "read_run_text", lambda path, data=None: reads.append(path) or read(path, data))
    again = store.load(folder)
    pd.testing.assert_frame_equal(again, first)
    assert reads == []  # nothing read again
    again.loc[0, "token_acc"] = -5.0  # a caller's change never reaches the next load
    pd.testing.assert_frame_equal(store.load(folder), first)
    assert len(store.load(folder, include_failed=False)) < len(first)
    path = store.raw_files(folder / "raw")[0]
    frame = store.read_run_file(path)
    text = store.read_run_text(path)
    reads.clear()
    path.write_text(text)  # the same bytes, written again: not parsed again, the rows they gave are kept
    pd.testing.assert_frame_equal(store.load(folder), first)
    assert reads == []
    path.write_text(text.replace("\n", "\r\n"))  # other bytes, the same rows: read and verified again
    pd.testing.assert_frame_equal(store.load(folder), first)
    assert len(reads) == len(store.raw_files(folder / "raw"))
    frame.to_csv(path, index=False)  # an edited file is named, though the folder was read before
    path.write_text(path.read_text().replace(",0.", ",1.", 1))
    with pytest.raises(ResultsError, match=path.name):
        store.load(folder)
    path.write_text(text)
    extra = folder / "raw" / "copy.csv"
    extra.write_text(text)  # a second file of one run, added after a load
    with pytest.raises(ResultsError, match="again"):
        store.load(folder)
    extra.unlink()
    pd.testing.assert_frame_equal(store.load(folder), first)


def test_a_folder_parsed_in_groups_of_one_header_is_what_reading_each_file_gives(tmp_path):
    """``load`` parses the files that share a header together: its rows are exactly those of every file read on its
    own, in the files' order, and a bad file among good ones is named as reading it alone names it, in order."""
    folder = write_synthetic_results(tmp_path)  # several headers (a failed run's file has fewer columns)
    paths = store.run_files(folder)
    alone = pd.concat([store.read_run_file(path) for path in paths], ignore_index=True, sort=False)
    pd.testing.assert_frame_equal(store._load_files(paths), alone, check_exact=True)
    second, fifth = paths[1], paths[4]
    second.write_text(store.read_run_text(second)[:-1])  # its text is found wanting: its last line is cut
    rows = store.read_run_file(fifth)
    rows.loc[0, "token_acc"] = 5.0  # well-formed text (these files predate the checksum): its rows' check finds it
    rows.to_csv(fifth, index=False)
    messages = []
    for path in (second, fifth):
        with pytest.raises(ResultsError) as alone_error:
            store.read_run_file(path)
        messages.append(str(alone_error.value).splitlines()[0])
    assert "truncated" in messages[0] and "token_acc must be a number in [0, 1]" in messages[1]
    with pytest.raises(ResultsError) as error:
        store._load_files(paths)
    assert "2 bad result file(s)" in str(error.value) and "; ".join(messages) in str(error.value)


def test_a_run_file_that_ends_inside_a_quote_is_refused(tmp_path):
    """A quote opened in a file's last field and never closed would swallow whatever follows the file, where files
    are parsed together: the file is refused on its own text."""
    folder = write_synthetic_results(tmp_path)
    path = store.run_files(folder)[2]
    head, _, last = store.read_run_text(path).rpartition(",")
    path.write_text(f'{head},"{last}')
    with pytest.raises(ResultsError, match="unreadable CSV"):
        store.read_run_file(path)
    with pytest.raises(ResultsError, match=f"1 bad result file.*{path.name}"):
        store.load(folder)


def test_differing_values_names_each_shared_column_whose_values_differ_and_compare_notes_them():
    """The one reading of a protocol difference that ``compare`` (its notes) and ``evaluate`` (its verdict's
    protocol problems) share: per column both sides have, the sorted distinct values of each, missing ones left out."""
    from pebench.analysis.compare import _protocol_notes
    from pebench.analysis.results import differing_values

    a = pd.DataFrame({"experiment": ["e", "e"], "steps": [1000, 2000], "lr": [0.001, float("nan")], "only_a": [1, 2]})
    b = pd.DataFrame({"experiment": ["e"], "steps": [1000], "lr": [0.001], "only_b": [3]})
    assert differing_values(a, b, ("steps", "lr", "only_a", "only_b")) == [("steps", ["1000", "2000"], ["1000"])]
    assert differing_values(a, a, ("steps", "lr")) == []
    assert _protocol_notes(a, b) == ["e: steps differs (rerun 1000, 2000; reference 1000)"]


def test_identical_encodings_are_the_pairs_whose_shared_runs_match_number_for_number():
    """``irope`` at a depth below its NoPE interval is ``rope``: the report must say the two are one model."""
    from pebench.report.overview import findings_identical, identical_models, identical_notes

    runs = [curve_run(seed, {4: 1.0, 8: 0.5 + seed / 10, 16: 0.2}, encoding=encoding, task=task)
            for seed in (0, 1) for task in ("copy", "reverse") for encoding in ("rope", "irope")]
    runs += [curve_run(seed, {4: 1.0, 8: 0.5 + seed / 10, 16: 0.2 + (seed == 1) / 100}, encoding="alibi")
             for seed in (0, 1)]  # one length of one run differs: not the same model
    runs += [curve_run(0, {4: 1.0, 8: 0.5, 16: 0.2}, encoding="fire", task="duplicate")]  # shares no run
    data = pd.concat(runs, ignore_index=True)
    assert results.identical_encodings(data) == [(("rope", "{}"), ("irope", "{}"), 4)]
    assert findings_identical(identical_models(data)) == [
        "Identical models: iRoPE gave the same rows as RoPE in every one of the 4 runs they share (every length, "
        "condition and metric, number for number), so at this scale they are one model: their places on the "
        "boards are one result, not two."]
    said = findings_identical(identical_models(data))
    assert identical_notes(identical_models(data)) == {"rope": said, "irope": said}
    other = data["encoding"].eq("irope") & data["eval_len"].eq(16) & data["seed"].eq(1) & data["task"].eq("reverse")
    data.loc[other, "loss"] += 1e-9  # one loss of one run: no longer one model
    models = identical_models(data)
    assert results.identical_encodings(data) == [] and models == []
    assert findings_identical(models) == [] and identical_notes(models) == {}
