"""Mastra's LLM-judge scorers (@mastra/evals), ported step for step: the judge's prompts are
template files in ``prompts/``, the formulas and edge cases are Mastra's."""
