"""Self-evolution of the AWI memory policy and the memory factual-recall metric (docs/design.md §7)."""

from .evolver import Evolver, LLMEvolver, Proposal
from .feedback import (
    FEEDBACK_KINDS,
    CompleteFeedback,
    FeedbackBuilder,
    NoFeedback,
    QuestionOnlyFeedback,
    RevealedFact,
    feedback_builder,
    revealed_facts,
)
from .loop import EvolutionHook, EvolutionOutcome, collect_evolution, evolve_loop
from .policy import PolicyHolder, PolicyLimits, policy_problem
from .recall import LLMRecallJudge, RecallJudge, RecallResult, memory_recall

__all__ = [
    "FEEDBACK_KINDS", "CompleteFeedback", "EvolutionHook", "EvolutionOutcome", "Evolver", "FeedbackBuilder",
    "LLMEvolver", "LLMRecallJudge", "NoFeedback", "PolicyHolder", "PolicyLimits", "Proposal",
    "QuestionOnlyFeedback", "RecallJudge", "RecallResult", "RevealedFact", "collect_evolution", "evolve_loop",
    "feedback_builder", "memory_recall", "policy_problem", "revealed_facts",
]
