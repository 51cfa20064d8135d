"""Scorers of an agent's tool calls and trajectory: tool-call accuracy (Mastra's and VoltAgent's code
scorers, Mastra's LLM judge), trajectory accuracy (code and LLM judge) and Mastra's unified
trajectory scorer (accuracy, efficiency, blacklist and tool failures in one score)."""
