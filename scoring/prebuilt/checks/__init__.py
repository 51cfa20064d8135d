"""Quick checks: Mastra's zero-LLM pass/fail assertions on a run's output text or its tool calls."""
