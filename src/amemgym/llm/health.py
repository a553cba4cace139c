"""Telling a broken endpoint from a weak model, from the usage counters of a run.

Empty replies, bodies that are not the API's JSON, and oversized replies say the server is not answering
properly. When most of a role's attempts end that way, the scores measure the endpoint, not the model, and
the run says so instead of blaming the model. Replies that arrive intact but fail a structured parse or
check are the model's doing and are left out (a weak model must not be excused as a broken server).
"""

from __future__ import annotations

from typing import Any

from .usage import UsageLedger

#: Attempt faults that mean "the server answered, but not with a usable reply".
UNUSABLE_FAULTS = ("empty_reply", "empty_choices", "error_body", "finish_error", "malformed_body", "reply_too_large")
#: Fewer attempts than this say too little to judge an endpoint.
MIN_ATTEMPTS = 3


def role_attempts(counts: dict[str, Any]) -> int:
    """The attempts one role of a ledger's ``to_dict()`` made: replies that arrived, and faults."""
    return int(counts.get("calls") or 0) + sum(int(v) for v in (counts.get("faults") or {}).values())


def endpoint_problems(usage: dict[str, Any], share: float = 0.5) -> list[dict[str, Any]]:
    """Roles whose attempts were mostly unusable, from a ledger's ``to_dict()`` (most affected first).

    Args:
        usage: per-role counters as :meth:`UsageLedger.to_dict` writes them.
        share: the fraction of unusable attempts above which a role is reported.
    """
    found = []
    for role, counts in usage.items():
        if role == "total" or not isinstance(counts, dict):
            continue
        # The empty attempts of turns kept as the model's silence are the model's doing, not the server's.
        silent = int(counts.get("empty_kept_attempts") or 0)
        faults = {**(counts.get("faults") or {})}
        faults["empty_reply"] = max(0, int(faults.get("empty_reply", 0)) - silent)
        unusable = sum(int(faults.get(k, 0)) for k in UNUSABLE_FAULTS)
        attempts = role_attempts(counts) - silent
        if attempts >= MIN_ATTEMPTS and unusable > share * attempts:
            kinds = {k: int(faults[k]) for k in UNUSABLE_FAULTS if faults.get(k)}
            found.append({"role": role, "unusable": unusable, "attempts": attempts, "kinds": kinds})
    return sorted(found, key=lambda p: -p["unusable"] / p["attempts"])


def _per_role_note(usage: dict[str, Any], counter: str, what: str, then: str) -> str | None:
    """``note: N of M fresh replies {what} (role n, ...); {then}`` when the ledger ``usage`` (a ``to_dict()``)
    counts any under ``counter``, else None."""
    ledger = UsageLedger.from_dict(usage)
    counts = {role: getattr(u, counter) for role, u in sorted(ledger.roles.items()) if getattr(u, counter)}
    if not counts:
        return None
    roles = ", ".join(f"{role} {n}" for role, n in counts.items())
    return f"note: {sum(counts.values())} of {ledger.totals().calls} fresh replies {what} ({roles}); {then}"


def truncation_note(usage: dict[str, Any]) -> str | None:
    """A console line when fresh replies were cut at their token limit, from a ledger's ``to_dict()``: a cut
    reply can lose the answer it was building to, which a low score would otherwise hide."""
    return _per_role_note(usage, "truncated", "were cut at their token limit",
                          "a cut reply may lack its answer: raise the limit (run.*_max_tokens, llm.*.max_tokens) if "
                          "scores depend on it")


def uncounted_note(usage: dict[str, Any]) -> str | None:
    """A console line when fresh replies, or rejected ones, said nothing of their tokens, from a ledger's
    ``to_dict()``: the token and cost figures then leave those calls out, which a confident total would hide."""
    shown = "the tokens and cost shown leave them out"
    rejected = UsageLedger.from_dict(usage).totals().uncounted_rejected
    if not rejected:
        return _per_role_note(usage, "uncounted", "carried no token counts", shown)
    also = f"{rejected} rejected replies (empty or malformed)"
    fresh = _per_role_note(usage, "uncounted", "carried no token counts", f"so did {also}; {shown}")
    return fresh or f"note: {also} carried no token counts; {shown}"


def empty_note(usage: dict[str, Any]) -> str | None:
    """A console line when conversation turns got an empty reply on every attempt and were kept as empty turns
    (``empty_kept``), from a ledger's ``to_dict()``: the conversation went on from the model's silence."""
    ledger = UsageLedger.from_dict(usage)
    counts = {role: u.empty_kept for role, u in sorted(ledger.roles.items()) if u.empty_kept}
    if not counts:
        return None
    roles = ", ".join(f"{role} {n}" for role, n in counts.items())
    return (f"note: {sum(counts.values())} conversation turns got an empty reply on every attempt ({roles}); the "
            "conversation went on: an agent's reply stays empty, a simulator's turn is a neutral follow-up")


def describe(problem: dict[str, Any]) -> str:
    """One line for the console."""
    kinds = ", ".join(f"{n} {k}" for k, n in problem["kinds"].items())
    return (f"endpoint problem: {problem['unusable']} of {problem['attempts']} {problem['role']} attempts got no "
            f"usable reply ({kinds}); check the server: these scores do not measure the model")
