"""Benchmarks (``make bench``): each result is a ratio against a baseline measured in the same run."""
