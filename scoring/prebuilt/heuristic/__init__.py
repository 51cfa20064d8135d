"""Heuristic scorers: text and value comparisons computed in code, with no judge.

Ports of the @mastra/evals code scorers (textual difference, content similarity, keyword coverage,
completeness, tone) and of the autoevals heuristics VoltAgent wraps (exact match, Levenshtein,
numeric diff, JSON diff, list contains). Their word lists ship in ``data/`` (licences in
``data/NOTICE.md``).
"""
