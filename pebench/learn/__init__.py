"""One run, no files: training to a fit criterion, seed-batched training, evaluation, held-out data."""
