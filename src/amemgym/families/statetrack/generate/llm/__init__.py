"""The LLM generation pipeline (docs/design.md §3): profile, questions, schema, initial state, evolution,
answers with reflection, utterances with exposure checks, assembly; resumable, with a report."""

from .base import STAGES, CallFailure, Limits, StepFailure
from .pipeline import GenerationError, GenerationResult, UserFailure, generate_llm

__all__ = [
    "STAGES", "CallFailure", "GenerationError", "GenerationResult", "Limits", "StepFailure", "UserFailure",
    "generate_llm",
]
