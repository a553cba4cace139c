"""Validity suite (docs/design.md §8): shortcut strategies, reference agents, the data audit and the simulator audit."""

from .audit import CHECKS, AuditFinding, DataAudit, audit_environment
from .reading import JUDGE_MODES, TextJudge, llm_judge, read_text
from .strategies import Strategy, TextVectors, reference_strategies, shortcut_strategies
from .suite import DECISION_RULE, FAMILIES, LeakyQuestion, StrategyScore, ValidityReport, run_suite, wilson

__all__ = [
    "CHECKS",
    "DECISION_RULE",
    "FAMILIES",
    "JUDGE_MODES",
    "AuditFinding",
    "DataAudit",
    "LeakyQuestion",
    "Strategy",
    "StrategyScore",
    "TextJudge",
    "TextVectors",
    "ValidityReport",
    "audit_environment",
    "llm_judge",
    "read_text",
    "reference_strategies",
    "run_suite",
    "shortcut_strategies",
    "wilson",
]
