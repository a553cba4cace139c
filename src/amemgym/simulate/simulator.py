"""The simulated user (SPEC §4): role-plays the profile and keeps the conversation going.

It sees the profile, the date, the session's opening message and the recent exchange, with roles
flipped (the assistant's turns are its input). It is never told the state values: what the user
reveals about the tracked variables comes only from the validated opening message.
"""

from __future__ import annotations

from ..data.model import UserEnv
from ..llm.client import LLMClient
from ..llm.types import ChatMessage
from ..prompts import render


def humanize(variable: str) -> str:
    """``bridge_group_size`` -> ``bridge group size``."""
    return variable.replace("_", " ")


class UserSimulator:
    """Writes the user's next turn for one session.

    Args:
        llm: the client; calls are made with role ``simulator``.
        history_messages: how many recent messages it sees (the opening message is always in its prompt).
        max_tokens: budget of one user turn.
    """

    def __init__(self, llm: LLMClient, *, history_messages: int = 6, max_tokens: int = 160) -> None:
        self.llm = llm
        self.history_messages = history_messages
        self.max_tokens = max_tokens

    def messages(self, user: UserEnv, date: str, opening: str, exchange: list[ChatMessage]) -> list[ChatMessage]:
        """The simulator's request: system prompt, then the recent exchange with roles flipped."""
        system = render(
            "simulator_system",
            profile=user.user_profile.formatted_str,
            date=date,
            opening=opening,
            topics=", ".join(humanize(v) for v in user.state_schema),
        )
        recent = exchange[-self.history_messages :] if self.history_messages else exchange[-1:]
        # The first message of the window must be the assistant's (the simulator's "user") turn.
        while recent and recent[0]["role"] == "user":
            recent = recent[1:]
        flipped = [{"role": "user" if m["role"] == "assistant" else "assistant", "content": m["content"]}
                   for m in recent]
        return [{"role": "system", "content": system}, *flipped]

    async def next_turn(self, user: UserEnv, date: str, opening: str, exchange: list[ChatMessage], seed: int) -> str:
        """The user's next message; an empty reply is replaced by a neutral follow-up."""
        res = await self.llm.chat(
            "simulator", self.messages(user, date, opening, exchange), max_tokens=self.max_tokens,
            seed=seed, tag="simulator.turn",
        )
        text = res.text.strip()
        return text or "Could you say a bit more about that?"
