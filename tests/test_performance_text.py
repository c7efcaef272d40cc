"""The performance page's sentences are generated from the throughput CSVs (pebench.render.performance_text)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from pebench.render.performance_text import NOT_MEASURED, performance_values

DOCS = Path(__file__).resolve().parent.parent / "docs"


def throughput_rows() -> list[dict]:
    """pebench's rows at the suite shape (two encodings, both losses) and at d_model 128 (short and long)."""
    rows = []
    for point, d_model, length, loss_on in (("suite", 64, 9.0, "outputs"), ("suite-all", 64, 9.0, "all"),
                                           ("d128", 128, 17.0, "outputs"), ("d128-all", 128, 17.0, "all"),
                                           ("d128-long", 128, 256.0, "all")):
        for encoding, speedup, gflops, spread in (("rope", 1.6, 60.0, 0.2), ("t5", 1.2, 40.0, 0.4)):
            rows.append({"point": point, "d_model": d_model, "batch_size": 32, "mean_length": length,
                         "loss_on": loss_on, "encoding": encoding, "framework": "pebench",
                         "speedup_vs_best_xt": speedup + d_model / 1000,
                         "speedup_q25": speedup - 0.1, "speedup_q75": speedup - 0.1 + spread,
                         "gflops": gflops + d_model / 8, "mfu": 0.0, "repeats": 15})
    rows.append({**rows[0], "framework": "x-transformers", "speedup_vs_best_xt": 0.6})  # never a pebench figure
    return rows


def test_sentences_from_the_csvs(tmp_path):
    pd.DataFrame(throughput_rows()).to_csv(tmp_path / "throughput.csv", index=False)
    pd.DataFrame([{"matmul_peak_gflops": 80.0}, {"matmul_peak_gflops": 100.0}]).to_csv(tmp_path / "machine.csv",
                                                                                         index=False)
    pd.DataFrame([{"workers": 1, "threads_per_worker": 1, "tokens_per_s": 40000.0},
                  {"workers": 1, "threads_per_worker": 2, "tokens_per_s": 70000.0},
                  {"workers": 2, "threads_per_worker": 1, "tokens_per_s": 84000.0}]).to_csv(
        tmp_path / "workers.csv", index=False)
    pd.DataFrame([{"encoding": e, "seeds": s, "speedup": v} for e, s, v in
                  (("rope", 1, 0.95), ("t5", 1, 1.02), ("rope", 4, 1.10), ("t5", 4, 1.10))]).to_csv(
        tmp_path / "seed_batching.csv", index=False)
    pd.DataFrame([{"encoding": "none", "compile_s": 23.5, "steady_speedup": 1.012, "break_even_steps": 399918.1},
                  {"encoding": "rope", "compile_s": 14.6, "steady_speedup": 0.59, "break_even_steps": float("inf")}]
                 ).to_csv(tmp_path / "compile.csv", index=False)
    pd.DataFrame([{"point": "suite", "encoding": "rope", "operator": name, "ms_per_step": 1.0, "share": share,
                   "calls_per_step": calls, "matmul": name in ("aten::mm", "aten::bmm"), "untraced_ms_per_step": 4.0,
                   "d_model": 64, "n_layers": 3, "batch_size": 64}
                  for name, share, calls in (("aten::mm", 0.30, 20.0), ("aten::gelu", 0.10, 2.0),
                                             ("aten::bmm", 0.05, 4.0), ("other operators", 0.35, 300.0),
                                             ("outside operators", 0.20, float("nan")))]).to_csv(
        tmp_path / "profile.csv", index=False)
    values = performance_values(tmp_path)
    assert values["perf_suite_speedup"] == (
        "**1.26x (t5) to 1.66x (rope)** faster than the faster x-transformers attention path: rope 1.66, t5 1.26 "
        "(15 repeats; the lower ends of the interquartile ranges are 1.10-1.50)")
    assert values["perf_suite_shape"] == "d_model 64, batch 32, sequences of 9 tokens on average, loss on the outputs"
    assert values["perf_machine"] == "100 GFLOP/s on one thread"  # the best measurement; no other column recorded
    pd.DataFrame([{"matmul_peak_gflops": 170.4, "matmul_peak_gflops_2_threads": 327.2, "cpu_count": 2,
                   "torch": "2.13.0+cpu"}]).to_csv(tmp_path / "machine.csv", index=False)
    assert performance_values(tmp_path)["perf_machine"] == ("170 GFLOP/s on one thread, 327 on two (2 cores, torch "
                                                            "2.13.0+cpu)")
    assert values["perf_d128_speedup"] == "1.33 (t5) to 1.73 (rope)"
    assert values["perf_all_speedup"] == ("1.26-1.66 at the suite shape and 1.33-1.73 at d_model 128; at the suite "
                                          "shape it is smallest for t5, rope")
    # MFU against the best peak (100): (40 + 16) / 100 and (60 + 16) / 100 at d_model 128; the long sequences alone
    assert values["perf_mfu"] == (
        "0.56-0.76 of the measured 1-thread matmul peak at the suite's lengths with the loss on the outputs, "
        "0.56-0.76 with the loss everywhere, and 0.56-0.76 for 256-token sequences (t5 is the lowest)")
    assert values["perf_suite_mfu"] == "0.48-0.68"
    # widths 0.2 (rope) and 0.4 (t5), median of five each: 0.30; 0.2 / 1.728 = 12% and 0.4 / 1.264 = 32% at most
    assert values["perf_noise"] == ("the interquartile range of one point's per-repeat ratios is 0.20-0.40 wide, 0.30 "
                                    "in the median (12% to 32% of the ratio)")
    assert values["perf_workers"] == ("two single-thread processes train 84K tokens/s together, 2.1x one "
                                      "single-thread process and 1.20x one process with two threads")
    assert values["perf_seed_batching"] == "0.95-1.02x (S = 1), 1.10x (S = 4): no consistent gain on this CPU"
    assert values["perf_profile"] == (
        "in the standard suite's step (`suite`: d_model 64, 3 layers, batch 64, rope) the matrix multiplications take "
        "35%; the largest operators are aten::mm 30%, aten::gelu 10%, aten::bmm 5%; 20% is spent outside any operator "
        "(Python, autograd); the profiler made the step 25% slower (5.0 ms against 4.0 ms untraced), inflating most "
        "the operators called many times per step: the matmuls' share is understated")
    assert values["perf_compile"] == ("15-24 s to compile, then 1.01x (none), 0.59x (rope) in steady state, so it "
                                      "would pay off after about 400,000 steps for none; never for rope")


def test_missing_csvs_say_not_measured(tmp_path):
    assert set(performance_values(tmp_path).values()) == {NOT_MEASURED}


def test_the_performance_page_reads_every_sentence_it_shows():
    """Each ``{{ perf_* }}`` of docs/performance.md is one performance_values gives, and each is shown."""
    used = set(re.findall(r"\{\{\s*(perf_\w+)\s*\}\}", (DOCS / "performance.md").read_text()))
    assert used == set(performance_values(Path("no-such-folder")))
