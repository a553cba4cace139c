"""Scoring: the question and probe prompts with their reply parsing, and pure metric functions."""
