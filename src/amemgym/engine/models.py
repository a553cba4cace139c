"""The served models a run is pinned to: recorded on the first invocation, checked on every resume."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RunError

if TYPE_CHECKING:
    from ..llm.client import LLMClient

__all__ = ["ModelPins", "answered_changes", "model_changes", "pin_models"]


@dataclass(frozen=True)
class ModelPins:
    """What a run holds each role's model to, in every process that plays its units.

    Attributes:
        served: per pinned role the model the endpoint serves (``GET /models``), recorded in the manifest.
        answered: per role the model the replies named in the run's latest earlier invocation (kept in
            ``usage.json``; empty on a first invocation, or when ``--allow-model-change`` lets the model move).
    """

    served: Mapping[str, str] = field(default_factory=dict)
    answered: Mapping[str, str] = field(default_factory=dict)

    async def hold(self, llm: LLMClient, where: str) -> None:
        """Check that ``llm`` (a client built ``where``, e.g. "in this worker") serves the pinned models, and
        make it refuse replies that name another model than ``answered``.

        Raises:
            RunError: a pinned role's endpoint serves another model there.
        """
        for role, pinned in self.served.items():
            served = await llm.model_identity(role)
            if served != pinned:
                raise RunError(f"the {role} endpoint serves {served!r} {where}, the run pinned {pinned!r}")
        llm.hold_answered(self.answered)


def _name(desc: Mapping[str, Any]) -> str:
    return str(desc.get("served") or desc.get("model") or desc.get("backend") or "?")


def model_changes(before: Mapping[str, Any], now: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """The roles of ``now`` that carry a ``served`` model and whose model differs from the one in ``before`` (an
    earlier manifest's ``models``).

    Compared on the served model; a manifest from before served models were recorded is compared on what it
    holds (backend and configured name).
    """
    changes = []
    for role, new in now.items():
        old = before.get(role)
        if "served" not in new or not isinstance(old, Mapping):
            continue
        if "served" in old:
            same = old["served"] == new["served"]
        else:
            same = (old.get("backend"), old.get("model")) == (new.get("backend"), new.get("model"))
        if not same:
            changes.append({"role": role, "from": _name(old), "to": _name(new)})
    return changes


def pin_models(root: Path, before: Mapping[str, Any], now: Mapping[str, Mapping[str, Any]], *,
               allow_change: bool) -> tuple[dict[str, dict[str, Any]], list[dict[str, str]]]:
    """The ``models`` entry of the manifest for ``now`` (per role its backend and configured model, with the
    ``served`` model for the roles the run pins), and the changes from ``before``.

    A role new to the run is added; a pinned role whose model differs is a change, refused unless allowed.

    Raises:
        RunError: a role's model changed and ``allow_change`` is off.
    """
    changes = model_changes(before, now)
    if changes and not allow_change:
        c = changes[0]
        raise RunError(f"{root}: was run with {c['role']} model {c['from']!r}, now {c['to']!r}; refusing to mix "
                       "models in one run (use a new --out directory, or pass --allow-model-change to continue: "
                       "each unit then records the model that played it)")
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    models = {**{r: dict(m) for r, m in before.items() if isinstance(m, Mapping)},
              **{r: dict(m) for r, m in now.items()}}
    return models, [{**c, "at": when} for c in changes]


def answered_changes(before: Mapping[str, str], now: Mapping[str, str]) -> list[dict[str, str]]:
    """The roles whose replies named another model in this invocation (``now``) than in the run's earlier one
    (``before``), as manifest ``model_changes`` entries.

    Only a resume under ``--allow-model-change`` gets this far: otherwise such a reply is refused. The served
    model (``GET /models``) may well be unchanged (an alias that moved), so :func:`model_changes` misses it.
    """
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return [{"role": role, "from": before[role], "to": model, "at": when, "seen_in": "replies"}
            for role, model in now.items() if model and before.get(role) and before[role] != model]
