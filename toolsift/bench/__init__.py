"""Offline benchmarks: selection accuracy against baselines, token savings, and performance."""
