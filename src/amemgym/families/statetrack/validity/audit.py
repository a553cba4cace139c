"""Data audit of an environment: things that weaken the benchmark without breaking it (reported as warnings).

- an update (a variable taking a new value at a period, period 0 included) that no opening utterance of
  that period exposes: the agent is scored on a fact it was never told;
- an exposed value that differs from the period's state: the utterance tells the agent something false;
- a variable that never changes after period 0: it tests recall, never updating;
- a question whose correct option is the same at every period: a stale memory is never penalised there.

Exposure is read from each session's ``exposed_states`` (for LLM-generated files, the values the exposure
check recovered from the utterance).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..data.model import Environment
from .strategies import matching_options


@dataclass(frozen=True)
class AuditFinding:
    """One warning: which check, where, and what."""

    check: str
    user: str
    detail: str
    period: int | None = None
    question: int | None = None
    variable: str | None = None


@dataclass
class DataAudit:
    """All findings, with the number of items each check looked at (for rates)."""

    findings: list[AuditFinding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    def count(self, check: str) -> int:
        """Findings of one check."""
        return sum(1 for f in self.findings if f.check == check)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts per check, checked items per check, and every finding."""
        return {
            "counts": {c: self.count(c) for c in CHECKS},
            "checked": dict(self.checked),
            "findings": [asdict(f) for f in self.findings],
        }


CHECKS: dict[str, str] = {
    "unexposed_update": "value set at a period that no opening utterance of the period exposes",
    "wrong_exposure": "opening utterance exposes a value that differs from the period's state",
    "static_variable": "variable never changes after period 0",
    "static_question": "question whose correct option is the same at every period",
}


def audit_environment(env: Environment) -> DataAudit:
    """Run every data check over every user."""
    report = DataAudit(checked={c: 0 for c in CHECKS})
    for user in env.users:
        changed_later: set[str] = set()
        for p, period in enumerate(user.periods):
            exposed: dict[str, set[str]] = {}
            for s, session in enumerate(period.sessions):
                for var, value in session.exposed_states.items():
                    exposed.setdefault(var, set()).add(value)
                    report.checked["wrong_exposure"] += 1
                    if period.state.get(var) != value:
                        report.findings.append(AuditFinding(
                            "wrong_exposure", user.id, f"session {s} exposes {var}={value}, state has "
                            f"{period.state.get(var)}", period=p, variable=var))
            for var, update in period.changes.items():
                report.checked["unexposed_update"] += 1
                if p > 0:
                    changed_later.add(var)
                if update.new not in exposed.get(var, set()):
                    report.findings.append(AuditFinding(
                        "unexposed_update", user.id, f"{var}: {update.old} -> {update.new} is not exposed",
                        period=p, variable=var))
        for var in user.state_schema:
            report.checked["static_variable"] += 1
            if var not in changed_later and len(user.periods) > 1:
                report.findings.append(AuditFinding("static_variable", user.id, f"{var} never changes after "
                                                    "period 0", variable=var))
        for q in range(len(user.qas)):
            report.checked["static_question"] += 1
            gold = {tuple(matching_options(user, p, q)) for p in range(len(user.periods))}
            if len(gold) == 1 and len(user.periods) > 1:
                report.findings.append(AuditFinding("static_question", user.id, f"question {q}'s correct option "
                                                    "never changes", question=q))
    return report
