"""Step 1: the user's profile: the persona's basic fields plus a concise role-play summary."""

from __future__ import annotations

from typing import Any

from ..personas import Persona, make_name, to_user_profile
from .base import GenContext, StepFailure, ask_json
from .formats import obj, string
from .records import ProfileOut

MAX_SUMMARY_WORDS = 500
MAX_NAME_WORDS = 6
BASIC_FIELDS = (
    "name", "age", "gender", "marital_status", "education_level", "occupation", "hobbies_and_interests",
    "skills_and_expertise",
)


def check_profile(value: dict[str, Any]) -> str | None:
    """A plausible name and a summary under the word limit."""
    words = len(value["name"].split())
    if not 1 <= words <= MAX_NAME_WORDS:
        return f"name must be a person's full name (1 to {MAX_NAME_WORDS} words)"
    n = len(value["summary"].split())
    if n >= MAX_SUMMARY_WORDS:
        return f"summary has {n} words; keep it under {MAX_SUMMARY_WORDS}"
    return None


def _lines(data: dict[str, Any], keys: list[str]) -> str:
    return "\n".join(f"{k}: {data[k]}" for k in keys if data.get(k) not in (None, "")) or "(none)"


async def run_profile(ctx: GenContext, persona: Persona) -> ProfileOut:
    """Summarise the persona for role play; take the name from the description when the table had none."""
    data = persona.model_dump()
    extra = [k for k in data if k not in BASIC_FIELDS and k != "uuid"]
    try:
        value = await ask_json(
            ctx, "profile", "gen_profile_summary", obj(name=string(), summary=string()), check_profile,
            max_tokens=700, basic=_lines(data, list(BASIC_FIELDS)), details=_lines(data, extra),
            max_words=MAX_SUMMARY_WORDS,
        )
    except StepFailure:
        # Small models can loop until the token limit. The persona's own details are a faithful (if less
        # polished) role-play summary; the report counts how often they were used.
        ctx.step("profile_fallback").add_unit("first_try")
        own = " ".join(str(data[k]).strip() for k in extra if data.get(k) not in (None, ""))
        value = {"name": persona.name, "summary": " ".join(own.split()[:MAX_SUMMARY_WORDS - 1]) or persona.name}
    name_was_made_up = persona.name == make_name(persona.uuid, persona.gender)
    if name_was_made_up and value["name"].strip() != persona.name:
        persona = persona.model_copy(update={"name": " ".join(value["name"].split())})
    return ProfileOut(profile=to_user_profile(persona, value["summary"].strip()))
