"""Evaluation: asking the questions, the state probe, the upper bound, and pure metric functions."""
