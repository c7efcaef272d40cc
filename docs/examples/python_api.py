"""pebench from Python: build a model with an encoding, train and evaluate one run, read a results folder.

Run it from a source checkout (``python docs/examples/python_api.py``): steps 1 and 2 take seconds on a CPU,
step 3 (reading the 606 run files of the committed reference) about half a minute.
"""

import sys
from pathlib import Path

import torch

from pebench import encodings, store, tasks
from pebench.plan.execute import execute
from pebench.plan.executors import origin_here
from pebench.plan.experiment import EvalConfig, RunSpec
from pebench.model import ModelConfig, build_model
from pebench.analysis.results import aggregate, run_metrics
from pebench.learn.train import TrainConfig

# 1. A model with an encoding. The encoding is built by name; max_len is a protocol constant (the size of
#    fixed position tables), never an evaluation length.
task = tasks.get("reverse")
config = ModelConfig(vocab_size=task.vocab_size, arch="decoder", d_model=64, n_layers=2, n_heads=4)
model = build_model(config, "rope", max_len=2048, seed=0)
tokens = task.sample(4, 8, torch.Generator().manual_seed(0)).inputs  # (B, T) int64
print("logits", tuple(model(tokens).shape), "| registered encodings:", len(encodings.names()))

# 2. One run: train to the fit criterion (here a tiny step cap), evaluate at lengths beyond the training
#    ones. execute() returns the run's rows, one per evaluation length and condition, as a sweep writes them;
#    each records origin_here(): the commit of the code and the CPU model of this machine.
spec = RunSpec(
    suite="smoke", experiment="api_example", task="reverse", encoding="rope", arch="decoder", seed=0,
    train=TrainConfig(steps=50, train_max_len=8, fit_every=25),
    eval=EvalConfig(lengths=(8, 16), n_examples=64),
)
rows = execute(spec, device="cpu", origin=origin_here())
print("run", rows[0]["run_id"], [(row["eval_len"], row["condition"], round(row["token_acc"], 3)) for row in rows])

# 3. A results folder (the committed reference, or a folder `pebench run` wrote): store.load verifies every
#    run file and returns one tidy frame; results aggregates it per run and across seeds.
folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "results" / "standard"
if folder.is_dir():
    runs = run_metrics(store.load(folder))  # one row per run: id_*, ood_* metrics, fitted, steps_to_fit...
    print(runs.groupby(["encoding", "arch"])["fitted"].mean().unstack().round(2))  # share of runs that fitted
    table = aggregate(runs[runs["fitted"] == 1])  # fit before judging: mean, sd, 95% CI over fitted seeds
    print(table[["task", "arch", "encoding", "ood_seq_acc_mean", "ood_seq_acc_ci95", "n_seeds"]].head())
