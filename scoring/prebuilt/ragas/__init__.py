"""RAGAS-style scorers, as VoltAgent and autoevals compute them: answer correctness, relevancy and
similarity, and context precision, recall, relevancy and entity recall."""
