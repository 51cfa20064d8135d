"""Classifier judges: autoevals' LLM classifiers (factuality, summary, translation, humor, possible),
whose run label is the judge's choice, and moderation, labelled flagged or not flagged."""
