"""Aggregation and statistics of run rows: boards and tiers, replications, comparisons."""
